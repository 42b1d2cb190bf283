// unicorn/server/request.hpp — what a chat or text completion asks for
// (CompletionRequest), the error a bad request gets (ApiError, OpenAI's
// shape), and a parser for each field of the body (namespace parse): its type,
// its range, and the features this server has. server/api.hpp puts them
// together into parse_completion_request.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <cstdint>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/config/sampling.hpp"
#include "unicorn/engine/step.hpp"
#include "unicorn/grammar/json_schema.hpp"
#include "unicorn/server/data_url.hpp"
#include "unicorn/grammar/matcher.hpp"
#include "unicorn/server/tools.hpp"
#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::server {

using Json = nlohmann::json;

// An error a client caused (4xx) or met (5xx), in OpenAI's shape:
// {"error": {"message", "type", "param", "code"}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending field, or empty
  std::string code;   // a machine-readable reason, or empty

  Json body() const {
    return {{"error",
             {{"message", message},
              {"type", type},
              {"param", param.empty() ? Json(nullptr) : Json(param)},
              {"code", code.empty() ? Json(nullptr) : Json(code)}}}};
  }
};

inline ApiError bad_request(std::string message, std::string param = "", std::string code = "") {
  return {400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

// What a chat or text completion asks for, checked.
struct CompletionRequest {
  enum class Kind { Chat, Text };
  Kind kind = Kind::Chat;
  std::string model;                       // empty: the client named none
  std::vector<text::ChatMessage> messages;  // Kind::Chat
  std::optional<std::string> prompt_text;   // Kind::Text: a string ...
  std::vector<int32_t> prompt_ids;          // ... or token ids
  std::optional<uint32_t> max_tokens;       // none: until the context is full (chat)
  SamplingParams sampling;                  // seed filled in by the server when not given
  bool seeded = false;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool cache_prompt = true;    // llama-server's: reuse a slot's KV cache for a shared prefix
  bool ignore_eos = false;     // llama-server's: <eos> and <end_of_turn> do not end it (benchmarks)
  bool echo = false;           // Kind::Text: the answer's text starts with the prompt (with logprobs: scored)
  // Structured output: the grammar every answer follows (response_format's
  // json_object or json_schema, or llama-server's grammar / json_schema), and
  // the field it came from; none: free text.
  std::shared_ptr<const grammar::Grammar> grammar;
  std::string grammar_field;
  ToolUse tools;  // Kind::Chat: the functions the answer may call (tools.hpp)
  uint32_t n = 1;  // choices: answers to the one prompt, each its own draws
};
// The most choices (n) one request may ask for; the server's slots bound it too.
inline constexpr uint32_t kMaxChoices = 128;

namespace parse {

template <class AnyJson>  // Json or OrderedJson
std::string type_name(const AnyJson& v) {
  switch (v.type()) {
    case AnyJson::value_t::null: return "null";
    case AnyJson::value_t::boolean: return "a boolean";
    case AnyJson::value_t::string: return "a string";
    case AnyJson::value_t::array: return "an array";
    case AnyJson::value_t::object: return "an object";
    case AnyJson::value_t::number_integer:
    case AnyJson::value_t::number_unsigned: return "an integer";
    case AnyJson::value_t::number_float: return "a number";
    default: return "an unexpected value";
  }
}

// A value for an error message: scalars as JSON, strings cut short, arrays
// and objects by their type (a hostile body may nest them a million deep).
inline std::string brief(const Json& v) {
  if (v.is_array() || v.is_object()) return type_name(v);
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  return s.size() > 64 ? s.substr(0, 61) + "..." : s;
}

template <class AnyJson>
ApiError wrong_type(const std::string& field, const AnyJson& v, std::string_view want) {
  return bad_request("'" + field + "' must be " + std::string(want) + ", not " + type_name(v), field,
                     "invalid_type");
}

// The body again with its objects' keys in the client's order, parsed at the
// first schema it holds: a schema's properties are generated in their order,
// and Json (nlohmann::json) sorts keys. `at` takes a JSON pointer.
struct InOrder {
  std::string_view body;
  std::optional<OrderedJson> doc;
  const OrderedJson& at(const std::string& pointer) {
    if (!doc) doc = OrderedJson::parse(body);  // parsed once as Json already: it is valid
    return doc->at(OrderedJson::json_pointer(pointer));
  }
};

// A number field within [lo, hi] (closed unless open_lo).
inline double number_in(const Json& v, const std::string& field, double lo, double hi, bool open_lo = false) {
  if (!v.is_number()) throw wrong_type(field, v, "a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || (open_lo ? x <= lo : x < lo) || x > hi) {
    std::string range = (open_lo ? "(" : "[") + Json(lo).dump() + ", " + Json(hi).dump() + "]";
    throw bad_request("'" + field + "' must be in " + range + ", not " + brief(v), field, "invalid_value");
  }
  return x;
}

inline int64_t integer_in(const Json& v, const std::string& field, int64_t lo, int64_t hi) {
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    // 16.0 is an integer in JSON's eyes too: JavaScript clients send it so.
    if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>() &&
        std::abs(v.get<double>()) < 9.0e15)
      return integer_in(Json(int64_t(v.get<double>())), field, lo, hi);
    throw wrong_type(field, v, "an integer");
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw bad_request("'" + field + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                          "], not " + brief(v), field, "invalid_value");
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi)
    throw bad_request("'" + field + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                          "], not " + std::to_string(x), field, "invalid_value");
  return x;
}

inline bool boolean(const Json& v, const std::string& field) {
  if (!v.is_boolean()) throw wrong_type(field, v, "a boolean");
  return v.get<bool>();
}

// A message's content: a string, or an array of parts (OpenAI's
// [{"type": "text", "text"}, {"type": "image_url", "image_url": {"url"}}]).
// As Gemma 3's template renders a list, each text part is trimmed and an
// image part is written text::kImageMarker; the images' bytes, from data:
// URLs (data_url.hpp), go to `images` in order.
inline std::string content_text(const Json& v, const std::string& field, std::vector<std::string>* images = nullptr) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) throw wrong_type(field, v, "a string or an array of content parts");
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string part = field + "[" + std::to_string(i) + "]";
    const Json& p = v[i];
    if (!p.is_object()) throw wrong_type(part, p, "an object");
    if (!p.contains("type") || !p["type"].is_string()) throw wrong_type(part + ".type", p.value("type", Json()), "a string");
    const std::string type = p["type"].get<std::string>();
    if (type == "image_url" && images) {
      for (const auto& [k, _] : p.items())
        if (k != "type" && k != "image_url")
          throw bad_request("'" + part + "." + k + "' is not supported: image parts are {type: \"image_url\", image_url: {url}}",
                            part + "." + k, "unsupported_parameter");
      const Json& u = p.value("image_url", Json());
      const std::string at = part + ".image_url";
      // {url, detail?}; some clients send the URL itself as a string.
      if (!u.is_object() && !u.is_string()) throw wrong_type(at, u, "an object {url}");
      if (u.is_object())
        for (const auto& [k, f] : u.items())
          if (k != "url" && !(k == "detail" && f.is_string()))
            throw bad_request("'" + at + "." + k + "' is not supported: image_url takes url (and detail, which "
                              "changes nothing here: every image is seen at the encoder's 896 pixels)",
                              at + "." + k, "unsupported_parameter");
      const Json& url = u.is_object() ? u.value("url", Json()) : u;
      if (!url.is_string()) throw wrong_type(at + ".url", url, "a string");
      try {
        images->push_back(data_url_bytes(url.get<std::string>()));
      } catch (const Error& e) {
        throw bad_request(std::string(at) + ".url: " + e.what(), at + ".url", "invalid_image_url");
      }
      out += text::kImageMarker;
      continue;
    }
    if (type != "text")
      throw bad_request("'" + part + ".type' must be \"text\"" + (images ? " or \"image_url\"" : "") + ", not '" + type + "'",
                        part + ".type", "unsupported_content");
    for (const auto& [k, _] : p.items())
      if (k != "type" && k != "text")
        throw bad_request("'" + part + "." + k + "' is not supported: text parts are {type: \"text\", text}",
                          part + "." + k, "unsupported_parameter");
    if (!p.contains("text") || !p["text"].is_string()) throw wrong_type(part + ".text", p.value("text", Json()), "a string");
    out += text::detail::js_trim(p["text"].get<std::string>());
  }
  return out;
}

// An assistant message's tool_calls: [{id, type: "function", function: {name, arguments}}].
inline std::vector<ToolCall> message_tool_calls(const Json& v, const std::string& at) {
  if (!v.is_array()) throw wrong_type(at, v, "an array of tool calls");
  std::vector<ToolCall> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string c = at + "[" + std::to_string(i) + "]";
    const Json& call = v[i];
    if (!call.is_object()) throw wrong_type(c, call, "an object");
    for (const auto& [k, _] : call.items())
      if (k != "id" && k != "type" && k != "function")
        throw bad_request("'" + c + "." + k + "' is not a field of a tool call", c + "." + k, "unsupported_parameter");
    if (call.contains("type") && call["type"] != "function")
      throw bad_request("'" + c + ".type' must be \"function\"", c + ".type", "invalid_value");
    if (!call.contains("id") || !call["id"].is_string()) throw wrong_type(c + ".id", call.value("id", Json()), "a string");
    if (!call.contains("function") || !call["function"].is_object())
      throw wrong_type(c + ".function", call.value("function", Json()), "an object");
    const Json& f = call["function"];
    if (!f.contains("name") || !f["name"].is_string()) throw wrong_type(c + ".function.name", f.value("name", Json()), "a string");
    if (!f.contains("arguments") || !f["arguments"].is_string())
      throw wrong_type(c + ".function.arguments", f.value("arguments", Json()), "a string of JSON");
    out.push_back({call["id"].get<std::string>(), f["name"].get<std::string>(), f["arguments"].get<std::string>()});
  }
  return out;
}

// The conversation. Gemma 3 has user and model turns only: an assistant's
// tool calls become the JSON reply the model would have written, and the
// results of `role: "tool"` messages after it one user turn (tools.hpp).
inline std::vector<text::ChatMessage> messages(const Json& v) {
  if (!v.is_array()) throw wrong_type("messages", v, "an array of messages");
  if (v.empty()) throw bad_request("'messages' must hold at least one message", "messages", "invalid_value");
  std::vector<text::ChatMessage> out;
  bool results_open = false;  // the last message is a user turn of tool results
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const Json& m = v[i];
    if (!m.is_object()) throw wrong_type(at, m, "an object");
    if (!m.contains("role") || !m["role"].is_string()) throw wrong_type(at + ".role", m.value("role", Json()), "a string");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system role
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      throw bad_request("'" + at + ".role' must be system, developer, user, assistant or tool, not '" + role + "'",
                        at + ".role", "invalid_value");
    for (const auto& [k, _] : m.items())
      if (k != "role" && k != "content" && !(role == "assistant" && (k == "tool_calls" || k == "refusal")) &&
          !(role == "tool" && (k == "tool_call_id" || k == "name")))
        throw bad_request("'" + at + "." + k + "' is not supported by this server (messages take role and content; "
                          "an assistant's also tool_calls and refusal, a tool's tool_call_id)", at + "." + k,
                          "unsupported_parameter");
    // A response's message sent back as it came carries refusal: null; a
    // refusal's text is what the assistant said.
    const std::string refusal = m.contains("refusal") && !m["refusal"].is_null()
                                    ? (m["refusal"].is_string() ? m["refusal"].get<std::string>()
                                                                : throw wrong_type(at + ".refusal", m["refusal"], "a string"))
                                    : std::string();
    const bool calls = role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null();
    const bool content = m.contains("content") && !((calls || !refusal.empty()) && m["content"].is_null());
    if (!content && !calls && refusal.empty())
      throw bad_request("'" + at + ".content' is required", at + ".content", "missing_field");
    std::vector<std::string> images;
    std::string text = content ? content_text(m["content"], at + ".content", role == "user" ? &images : nullptr)
                               : refusal;
    if (calls) {
      const std::vector<ToolCall> c = message_tool_calls(m["tool_calls"], at + ".tool_calls");
      if (!c.empty()) text += (text.empty() ? "" : "\n") + calls_text(c);
    }
    if (role == "tool") {
      if (!m.contains("tool_call_id") || !m["tool_call_id"].is_string())
        throw wrong_type(at + ".tool_call_id", m.value("tool_call_id", Json()), "a string");
      if (m.contains("name") && !m["name"].is_string()) throw wrong_type(at + ".name", m["name"], "a string");
      const std::string result = tool_result_text(m["tool_call_id"].get<std::string>(), m.value("name", ""), text);
      if (results_open) out.back().content += "\n" + result;
      else out.push_back({"user", "Function results:\n" + result});
      results_open = true;
      continue;
    }
    results_open = false;
    out.push_back({role, text, std::move(images)});
  }
  return out;
}

// tools: [{type: "function", function: {name, description, parameters, strict}}].
inline std::vector<ToolFunction> tool_functions(const Json& v, InOrder& in_order) {
  if (!v.is_array()) throw wrong_type("tools", v, "an array of tools");
  constexpr size_t kMaxTools = 128;
  if (v.size() > kMaxTools)
    throw bad_request("'tools' holds " + std::to_string(v.size()) + " tools; at most " + std::to_string(kMaxTools),
                      "tools", "invalid_value");
  std::vector<ToolFunction> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const Json& t = v[i];
    if (!t.is_object()) throw wrong_type(at, t, "an object");
    for (const auto& [k, _] : t.items())
      if (k != "type" && k != "function")
        throw bad_request("'" + at + "." + k + "' is not a field of a tool", at + "." + k, "unsupported_parameter");
    if (!t.contains("type") || t["type"] != "function")
      throw bad_request("'" + at + ".type' must be \"function\" (the only kind of tool)", at + ".type", "invalid_value");
    if (!t.contains("function") || !t["function"].is_object())
      throw wrong_type(at + ".function", t.value("function", Json()), "an object");
    ToolFunction f;
    for (const auto& [k, x] : t["function"].items()) {
      const std::string field = at + ".function." + k;
      if (k == "name") {
        if (!x.is_string()) throw wrong_type(field, x, "a string");
        f.name = x.get<std::string>();
        const bool ok = !f.name.empty() && f.name.size() <= 64 && std::all_of(f.name.begin(), f.name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        });
        if (!ok) throw bad_request("'" + field + "' must be 1 to 64 letters, digits, '_' or '-'", field, "invalid_value");
        for (const ToolFunction& seen : out)
          if (seen.name == f.name) throw bad_request("two tools are named '" + f.name + "'", field, "invalid_value");
      } else if (k == "description") {
        if (!x.is_string()) throw wrong_type(field, x, "a string");
        f.description = x.get<std::string>();
      } else if (k == "parameters") {
        if (!x.is_object()) throw wrong_type(field, x, "a JSON schema (an object)");
        f.parameters = in_order.at("/tools/" + std::to_string(i) + "/function/parameters");
      } else if (k == "strict") {
        if (!x.is_null()) (void)boolean(x, field);  // strict or not, the arguments follow the schema
      } else {
        throw bad_request("'" + field + "' is not a field of a function", field, "unsupported_parameter");
      }
    }
    if (f.name.empty()) throw bad_request("'" + at + ".function.name' is required", at + ".function.name", "missing_field");
    out.push_back(std::move(f));
  }
  return out;
}

// tool_choice: "none", "auto", "required", or {type: "function", function: {name}}.
inline void tool_choice(const Json& v, ToolUse& use, std::string& named_field) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "none") use.choice = ToolUse::Choice::None;
    else if (s == "auto") use.choice = ToolUse::Choice::Auto;
    else if (s == "required") use.choice = ToolUse::Choice::Required;
    else throw bad_request("'tool_choice' must be \"none\", \"auto\", \"required\" or a function, not " + brief(v),
                           "tool_choice", "invalid_value");
    return;
  }
  if (!v.is_object()) throw wrong_type("tool_choice", v, "a string or an object");
  if (!v.contains("type") || v["type"] != "function" || !v.contains("function") || !v["function"].is_object() ||
      !v["function"].contains("name") || !v["function"]["name"].is_string())
    throw bad_request("'tool_choice' as an object is {\"type\": \"function\", \"function\": {\"name\": ...}}",
                      "tool_choice", "invalid_value");
  use.choice = ToolUse::Choice::Named;
  use.named = v["function"]["name"].get<std::string>();
  named_field = "tool_choice.function.name";
}

inline std::vector<std::string> stop_strings(const Json& v) {
  constexpr size_t kMaxStops = 16, kMaxStopBytes = 256;
  std::vector<std::string> out;
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) throw wrong_type("stop[" + std::to_string(i) + "]", v[i], "a string");
      out.push_back(v[i].get<std::string>());
    }
  } else {
    throw wrong_type("stop", v, "a string or an array of strings");
  }
  if (out.size() > kMaxStops)
    throw bad_request("'stop' holds " + std::to_string(out.size()) + " strings; at most " +
                          std::to_string(kMaxStops), "stop", "invalid_value");
  for (const auto& s : out)
    if (s.size() > kMaxStopBytes)
      throw bad_request("a stop string is " + std::to_string(s.size()) + " bytes; at most " +
                            std::to_string(kMaxStopBytes), "stop", "invalid_value");
  return out;
}

// A grammar from its GBNF text (or a JSON schema's), compiled now so that a
// mistake in it is the request's 400, naming `field`.
// The 16 grammars compiled last are kept, by their GBNF text: a grammar's
// mask cache (grammar/matcher.hpp) fills during its first documents (up to
// ~8 ms a token), and a client sends the same schema again and again.
inline std::shared_ptr<const grammar::Grammar> compiled_grammar(const std::string& gbnf, const std::string& field) {
  static std::mutex m;
  static std::list<std::pair<std::string, std::shared_ptr<const grammar::Grammar>>> recent;  // most recent first
  constexpr size_t kKept = 16;
  {
    std::lock_guard lock(m);
    for (auto it = recent.begin(); it != recent.end(); ++it)
      if (it->first == gbnf) {
        recent.splice(recent.begin(), recent, it);
        return it->second;
      }
  }
  std::shared_ptr<const grammar::Grammar> g;
  try {
    g = grammar::compile_gbnf(gbnf);
  } catch (const Error& e) {
    throw bad_request("'" + field + "': " + e.what(), field, "invalid_grammar");
  }
  std::lock_guard lock(m);
  recent.emplace_front(gbnf, g);
  if (recent.size() > kKept) recent.pop_back();
  return g;
}
inline std::shared_ptr<const grammar::Grammar> schema_grammar(const OrderedJson& schema, const std::string& field) {
  if (!schema.is_object() && !schema.is_boolean()) throw wrong_type(field, schema, "a JSON schema (an object)");
  std::string gbnf;
  try {
    gbnf = grammar::gbnf_from_json_schema(schema);
  } catch (const Error& e) {
    throw bad_request("'" + field + "': " + e.what(), field, "unsupported_schema");
  }
  return compiled_grammar(gbnf, field);
}

// response_format: {"type": "text"} (the default) is free text;
// {"type": "json_object"} any JSON object (with llama-server's "schema": one
// that validates); {"type": "json_schema", "json_schema": {"name", "schema",
// "strict", "description"}} an object that validates against the schema
// (always strictly: the sampling is constrained to it).
// Returns whether it asks for structured output.
inline bool response_format(const Json& v, CompletionRequest& r, InOrder& in_order) {
  if (!v.is_object()) throw wrong_type("response_format", v, "an object");
  if (!v.contains("type") || !v["type"].is_string())
    throw wrong_type("response_format.type", v.value("type", Json()), "a string");
  const std::string type = v["type"].get<std::string>();
  if (type != "text" && type != "json_object" && type != "json_schema")
    throw bad_request("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", not " +
                          brief(v["type"]), "response_format.type", "invalid_value");
  for (const auto& [k, _] : v.items())
    if (k != "type" && !(type == "json_schema" && k == "json_schema") && !(type == "json_object" && k == "schema"))
      throw bad_request("'response_format." + k + "' is not a field of response_format of type " + type,
                        "response_format." + k, "unsupported_parameter");
  if (type == "text") return false;
  if (type == "json_object") {
    r.grammar_field = "response_format";
    r.grammar = v.contains("schema") ? schema_grammar(in_order.at("/response_format/schema"), "response_format.schema")
                                     : compiled_grammar(grammar::gbnf_json_object(), "response_format");
    return true;
  }
  if (!v.contains("json_schema")) throw bad_request("'response_format.json_schema' is required", "response_format.json_schema", "missing_field");
  const Json& js = v["json_schema"];
  if (!js.is_object()) throw wrong_type("response_format.json_schema", js, "an object");
  for (const auto& [k, f] : js.items()) {
    const std::string field = "response_format.json_schema." + k;
    if (k == "name" || k == "description") {
      if (!f.is_string()) throw wrong_type(field, f, "a string");
    } else if (k == "strict") {
      if (!f.is_null()) (void)boolean(f, field);  // strict or not, the sampling follows the schema
    } else if (k != "schema") {
      throw bad_request("'" + field + "' is not supported (json_schema takes name, description, schema, strict)",
                        field, "unsupported_parameter");
    }
  }
  r.grammar_field = "response_format.json_schema.schema";
  r.grammar = js.contains("schema") ? schema_grammar(in_order.at("/response_format/json_schema/schema"), r.grammar_field)
                                    : compiled_grammar(grammar::gbnf_json_object(), r.grammar_field);
  return true;
}

// logit_bias: {"token id": bias in [-100, 100]}, as OpenAI's (-100 bans the
// token). Ids are checked against the vocabulary with the prompt (make_job).
inline std::vector<std::pair<int32_t, float>> logit_bias(const Json& v) {
  if (!v.is_object()) throw wrong_type("logit_bias", v, "an object of token ids and biases");
  if (v.size() > kMaxLogitBias)
    throw bad_request("'logit_bias' holds " + std::to_string(v.size()) + " tokens; at most " +
                          std::to_string(kMaxLogitBias), "logit_bias", "invalid_value");
  std::vector<std::pair<int32_t, float>> out;
  for (const auto& [k, b] : v.items()) {
    const std::string field = "logit_bias." + k.substr(0, 32);
    int64_t id = -1;
    if (!k.empty() && k.size() <= 10 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; }))
      id = std::stoll(k);
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      throw bad_request("'logit_bias' keys are token ids (decimal integers), not '" + k.substr(0, 32) + "'", field,
                        "invalid_value");
    const float bias = float(number_in(b, field, -100, 100));
    for (const auto& [seen, _] : out)
      if (seen == id)
        throw bad_request("'logit_bias' names token " + std::to_string(id) + " twice", field, "invalid_value");
    out.push_back({int32_t(id), bias});
  }
  return out;
}

// The prompt of a text completion: a string, token ids, or a one-element
// array of either (the API's batch form, which asks for one completion per
// element: only one is served).
inline void text_prompt(const Json& v, CompletionRequest& r) {
  const auto ids = [&](const Json& a, const std::string& field) {
    std::vector<int32_t> out;
    for (size_t i = 0; i < a.size(); ++i)
      out.push_back(int32_t(integer_in(a[i], field + "[" + std::to_string(i) + "]", 0,
                                       std::numeric_limits<int32_t>::max())));
    return out;
  };
  if (v.is_string()) {
    r.prompt_text = v.get<std::string>();
  } else if (v.is_array() && v.size() == 1 && (v[0].is_string() || v[0].is_array())) {
    if (v[0].is_string()) r.prompt_text = v[0].get<std::string>();
    else r.prompt_ids = ids(v[0], "prompt[0]");
  } else if (v.is_array() && !v.empty() && (v[0].is_string() || v[0].is_array())) {
    throw bad_request("'prompt' holds " + std::to_string(v.size()) + " prompts; this server completes one "
                      "per request", "prompt", "unsupported_value");
  } else if (v.is_array()) {
    r.prompt_ids = ids(v, "prompt");
  } else {
    throw wrong_type("prompt", v, "a string or an array of token ids");
  }
  if ((r.prompt_text && r.prompt_text->empty()) || (!r.prompt_text && r.prompt_ids.empty()))
    throw bad_request("'prompt' is empty", "prompt", "invalid_value");
}

// Roles alternate, as Gemma 3's template requires: refused at parsing, not
// in the scheduler.
inline void renderable(const std::vector<text::ChatMessage>& messages) {
  try {
    (void)text::render_chat(messages, true);
  } catch (const Error& e) {
    throw bad_request(std::string(e.what()).substr(std::string("render_chat: ").size()), "messages",
                      "invalid_value");
  }
}

}  // namespace parse

}  // namespace unicorn::server
