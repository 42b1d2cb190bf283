// unicorn/server/api.hpp — the OpenAI API's requests and responses as the
// server speaks them: a request body in, a checked CompletionRequest out (or an
// ApiError with the status and the OpenAI error object), and the JSON of every
// response and stream chunk. Pure functions over nlohmann::json, with no
// sockets and no engine, so the fuzz target and the unit tests call them as
// the HTTP layer (server/http.hpp) does.
//
// A field this server does not implement is refused with a 400 that names it,
// never silently ignored: a client that asks for n = 2 or tools learns at
// once that it will not get them.
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/engine/step.hpp"
#include "unicorn/sampling.hpp"
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
};

namespace parse {

inline std::string type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
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

inline ApiError wrong_type(const std::string& field, const Json& v, std::string_view want) {
  return bad_request("'" + field + "' must be " + std::string(want) + ", not " + type_name(v), field,
                     "invalid_type");
}

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

// A message's content: a string, or an array of text parts (OpenAI's
// [{"type": "text", "text": ...}]), joined.
inline std::string content_text(const Json& v, const std::string& field) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) throw wrong_type(field, v, "a string or an array of text parts");
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string part = field + "[" + std::to_string(i) + "]";
    const Json& p = v[i];
    if (!p.is_object()) throw wrong_type(part, p, "an object");
    for (const auto& [k, _] : p.items())
      if (k != "type" && k != "text")
        throw bad_request("'" + part + "." + k + "' is not supported: content parts are {type: \"text\", text}",
                          part + "." + k, "unsupported_parameter");
    if (!p.contains("type") || p["type"] != "text")
      throw bad_request("'" + part + ".type' must be \"text\": this server runs Gemma 3's text model only",
                        part + ".type", "unsupported_content");
    if (!p.contains("text") || !p["text"].is_string()) throw wrong_type(part + ".text", p.value("text", Json()), "a string");
    out += p["text"].get<std::string>();
  }
  return out;
}

inline std::vector<text::ChatMessage> messages(const Json& v) {
  if (!v.is_array()) throw wrong_type("messages", v, "an array of messages");
  if (v.empty()) throw bad_request("'messages' must hold at least one message", "messages", "invalid_value");
  std::vector<text::ChatMessage> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const Json& m = v[i];
    if (!m.is_object()) throw wrong_type(at, m, "an object");
    for (const auto& [k, _] : m.items())
      if (k != "role" && k != "content")
        throw bad_request("'" + at + "." + k + "' is not supported by this server (messages take role and content)",
                          at + "." + k, "unsupported_parameter");
    if (!m.contains("role") || !m["role"].is_string()) throw wrong_type(at + ".role", m.value("role", Json()), "a string");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system role
    if (role != "system" && role != "user" && role != "assistant")
      throw bad_request("'" + at + ".role' must be system, developer, user or assistant, not '" + role + "'",
                        at + ".role", "invalid_value");
    if (!m.contains("content")) throw bad_request("'" + at + ".content' is required", at + ".content", "missing_field");
    out.push_back({role, content_text(m["content"], at + ".content")});
  }
  return out;
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

// response_format: {"type": "text"}, the API's default, is plain text; the
// JSON formats need constrained sampling, which this server does not have.
inline void response_format(const Json& v) {
  if (!v.is_object()) throw wrong_type("response_format", v, "an object");
  if (!v.contains("type") || !v["type"].is_string())
    throw wrong_type("response_format.type", v.value("type", Json()), "a string");
  if (v["type"] != "text")
    throw bad_request("'response_format.type' = " + brief(v["type"]) + " is not supported by this server (only "
                          "\"text\": JSON output needs constrained sampling, which it does not have)",
                      "response_format.type", "unsupported_value");
  for (const auto& [k, _] : v.items())
    if (k != "type")
      throw bad_request("'response_format." + k + "' is not supported by this server (only {\"type\": \"text\"})",
                        "response_format." + k, "unsupported_parameter");
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

// Parses and checks a /v1/chat/completions or /v1/completions body. Throws
// ApiError (400) naming the first field that is wrong or not supported.
inline CompletionRequest parse_completion_request(std::string_view body, CompletionRequest::Kind kind) {
  using namespace parse;
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::exception& e) {  // a parse error, or a number past double's range
    throw bad_request(std::string("the body is not valid JSON: ") + e.what(), "", "invalid_json");
  }
  if (!j.is_object()) throw bad_request("the body must be a JSON object, not " + type_name(j), "", "invalid_json");
  const bool chat = kind == CompletionRequest::Kind::Chat;
  CompletionRequest r;
  r.kind = kind;
  r.sampling.temperature = 1.0f;  // OpenAI's defaults: temperature 1, top_p 1
  r.sampling.repeat_last_n = 64;
  if (!chat) r.max_tokens = 16;  // the legacy completions API's default
  // Fields of OpenAI's API that change nothing here when they hold their
  // default, and are refused otherwise.
  const auto only_default = [](const Json& v, const std::string& field, const Json& allowed) {
    if (!v.is_null() && v != allowed)
      throw bad_request("'" + field + "' = " + brief(v) + " is not supported by this server (only " +
                            allowed.dump() + ")", field, "unsupported_value");
  };
  bool has_stream_options = false, top_logprobs = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "model") {
      if (!v.is_string()) throw wrong_type(key, v, "a string");
      r.model = v.get<std::string>();
    } else if (chat && key == "messages") {
      r.messages = messages(v);
    } else if (!chat && key == "prompt") {
      text_prompt(v, r);
    } else if (key == "max_tokens" || (chat && key == "max_completion_tokens")) {
      // 0 is for scoring a prompt (echo with logprobs), checked below.
      if (!v.is_null()) r.max_tokens = uint32_t(integer_in(v, key, chat ? 1 : 0, std::numeric_limits<int32_t>::max()));
      else if (chat) r.max_tokens.reset();
    } else if (key == "temperature") {
      if (!v.is_null()) r.sampling.temperature = float(number_in(v, key, 0, 2));
    } else if (key == "top_p") {
      if (!v.is_null()) r.sampling.top_p = float(number_in(v, key, 0, 1, /*open_lo=*/true));
    } else if (key == "top_k") {
      if (!v.is_null()) r.sampling.top_k = uint32_t(integer_in(v, key, 0, 1 << 20));
    } else if (key == "min_p") {
      if (!v.is_null()) r.sampling.min_p = float(number_in(v, key, 0, 1));
    } else if (key == "presence_penalty") {
      if (!v.is_null()) r.sampling.presence_penalty = float(number_in(v, key, -2, 2));
    } else if (key == "frequency_penalty") {
      if (!v.is_null()) r.sampling.frequency_penalty = float(number_in(v, key, -2, 2));
    } else if (key == "repeat_penalty") {
      if (!v.is_null()) r.sampling.repeat_penalty = float(number_in(v, key, 0, 10, /*open_lo=*/true));
    } else if (key == "repeat_last_n") {
      if (!v.is_null()) r.sampling.repeat_last_n = uint32_t(integer_in(v, key, 0, kMaxRepeatLastN));
    } else if (key == "seed") {
      if (!v.is_null()) {
        // OpenAI's seed is any 64-bit integer; the sampler's is 32 bits: fold.
        const int64_t s = integer_in(v, key, std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::max());
        r.sampling.seed = uint32_t(uint64_t(s) ^ (uint64_t(s) >> 32));
        r.seeded = true;
      }
    } else if (key == "stop") {
      if (!v.is_null()) r.stop = stop_strings(v);
    } else if (key == "stream") {
      if (!v.is_null()) r.stream = boolean(v, key);
    } else if (key == "stream_options") {
      if (v.is_null()) continue;
      if (!v.is_object()) throw wrong_type(key, v, "an object");
      for (const auto& [k, o] : v.items()) {
        if (k != "include_usage")
          throw bad_request("'stream_options." + k + "' is not supported by this server", "stream_options." + k,
                            "unsupported_parameter");
        r.include_usage = boolean(o, "stream_options.include_usage");
      }
      has_stream_options = true;
    } else if (key == "cache_prompt") {
      if (!v.is_null()) r.cache_prompt = boolean(v, key);
    } else if (key == "ignore_eos") {
      if (!v.is_null()) r.ignore_eos = boolean(v, key);
    } else if (key == "n") {
      only_default(v, key, 1);
    } else if (chat && key == "logprobs") {
      if (!v.is_null()) r.sampling.logprobs = boolean(v, key);
    } else if (chat && key == "top_logprobs") {
      if (!v.is_null()) r.sampling.top_logprobs = uint32_t(integer_in(v, key, 0, kMaxTopLogprobs)), top_logprobs = true;
    } else if (key == "logprobs") {  // the legacy API's: how many alternatives, and the chosen tokens'
      if (!v.is_null()) r.sampling.logprobs = true, r.sampling.top_logprobs = uint32_t(integer_in(v, key, 0, 5));
    } else if (key == "response_format") {
      if (!v.is_null()) response_format(v);
    } else if (key == "logit_bias") {
      if (!v.is_null()) r.sampling.logit_bias = logit_bias(v);
    } else if (key == "suffix" ||
               key == "tools" || key == "tool_choice" || key == "functions" || key == "function_call") {
      only_default(v, key, Json(nullptr));
    } else if (!chat && key == "echo") {
      if (!v.is_null()) r.echo = boolean(v, key);
    } else if (!chat && key == "best_of") {
      only_default(v, key, 1);
    } else if (key == "user") {
      // An end-user id for the provider's abuse monitoring: it changes no output.
      if (!v.is_null() && !v.is_string()) throw wrong_type(key, v, "a string");
    } else {
      throw bad_request("'" + key + "' is not supported by this server", key, "unsupported_parameter");
    }
  }
  if (chat && r.messages.empty()) throw bad_request("'messages' is required", "messages", "missing_field");
  if (!chat && !r.prompt_text && r.prompt_ids.empty()) throw bad_request("'prompt' is required", "prompt", "missing_field");
  if (r.max_tokens == 0u && !r.echo)
    throw bad_request("'max_tokens' must be in [1, " + std::to_string(std::numeric_limits<int32_t>::max()) +
                          "], not 0 (0 is for scoring a prompt: with 'echo': true)", "max_tokens", "invalid_value");
  if (top_logprobs && !r.sampling.logprobs)
    throw bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs", "invalid_value");
  if (has_stream_options && !r.stream)
    throw bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options", "invalid_value");
  if (chat) renderable(r.messages);
  return r;
}

// --- llama-server's tokenizer endpoints ---

// A body that must be a JSON object holding only `fields`.
inline Json parse_object(std::string_view body, std::initializer_list<std::string_view> fields) {
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::exception& e) {  // a parse error, or a number past double's range
    throw bad_request(std::string("the body is not valid JSON: ") + e.what(), "", "invalid_json");
  }
  if (!j.is_object()) throw bad_request("the body must be a JSON object", "", "invalid_json");
  for (const auto& [k, _] : j.items())
    if (std::find(fields.begin(), fields.end(), k) == fields.end())
      throw bad_request("'" + k + "' is not supported by this endpoint", k, "unsupported_parameter");
  return j;
}

// POST /tokenize: {"content", "add_special", "with_pieces"} -> {"tokens": [...]}.
inline Json tokenize_response(const text::Tokenizer& tok, std::string_view body) {
  const Json j = parse_object(body, {"content", "add_special", "with_pieces"});
  if (!j.contains("content") || !j["content"].is_string())
    throw parse::wrong_type("content", j.value("content", Json()), "a string");
  const bool add_special = j.contains("add_special") && parse::boolean(j["add_special"], "add_special");
  const bool pieces = j.contains("with_pieces") && parse::boolean(j["with_pieces"], "with_pieces");
  const auto ids = tok.encode(j["content"].get<std::string>(), add_special);
  Json out = Json::array();
  for (int32_t id : ids) {
    if (!pieces) out.push_back(id);
    else out.push_back({{"id", id}, {"piece", std::string(tok.token_bytes(id))}});
  }
  return {{"tokens", out}};
}

// POST /detokenize: {"tokens": [ids]} -> {"content": text}.
inline Json detokenize_response(const text::Tokenizer& tok, std::string_view body) {
  const Json j = parse_object(body, {"tokens"});
  if (!j.contains("tokens") || !j["tokens"].is_array())
    throw parse::wrong_type("tokens", j.value("tokens", Json()), "an array of token ids");
  std::vector<int32_t> ids;
  const int64_t vocab = int64_t(tok.vocab_size());
  for (size_t i = 0; i < j["tokens"].size(); ++i)
    ids.push_back(int32_t(parse::integer_in(j["tokens"][i], "tokens[" + std::to_string(i) + "]", 0, vocab - 1)));
  return {{"content", tok.decode(ids)}};
}

// --- responses ---

// One chosen token and its log-probabilities (EngineCore::logprobs), in the
// order the tokens were chosen.
struct TokenLogprobEntry {
  int32_t token;
  TokenLogprobs logprobs;
  bool scored = true;  // false: a text's first token, which nothing before it predicts (null in the API)
};

namespace detail_logprobs {
inline Json byte_values(std::string_view piece) {
  Json out = Json::array();
  for (char c : piece) out.push_back(int(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace detail_logprobs

// The chat API's shape: {"content": [{"token", "logprob", "bytes",
// "top_logprobs": [{"token", "logprob", "bytes"}]}], "refusal": null}. A
// token's text is its own bytes (a byte token's may be part of a character:
// "bytes" holds them exactly, "token" has U+FFFD where they do not decode).
inline Json chat_logprobs(std::span<const TokenLogprobEntry> entries, const text::Tokenizer& tok) {
  Json content = Json::array();
  for (const TokenLogprobEntry& e : entries) {
    Json top = Json::array();
    for (const auto& alt : e.logprobs.top)
      top.push_back({{"token", std::string(tok.token_bytes(alt.token))},
                     {"logprob", alt.logprob},
                     {"bytes", detail_logprobs::byte_values(tok.token_bytes(alt.token))}});
    content.push_back({{"token", std::string(tok.token_bytes(e.token))},
                       {"logprob", e.logprobs.logprob},
                       {"bytes", detail_logprobs::byte_values(tok.token_bytes(e.token))},
                       {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

// The completions API's shape: {"tokens", "token_logprobs", "top_logprobs":
// [{token: logprob}], "text_offset"}; `offset` is where the first of these
// tokens starts in the completion's text (bytes), advanced past them.
inline Json completion_logprobs(std::span<const TokenLogprobEntry> entries, const text::Tokenizer& tok,
                                size_t& offset) {
  Json tokens = Json::array(), logprobs = Json::array(), top = Json::array(), offsets = Json::array();
  for (const TokenLogprobEntry& e : entries) {
    const std::string_view piece = tok.token_bytes(e.token);
    tokens.push_back(std::string(piece));
    logprobs.push_back(e.scored ? Json(e.logprobs.logprob) : Json(nullptr));
    Json alternatives = Json::object();
    for (const auto& alt : e.logprobs.top) alternatives[std::string(tok.token_bytes(alt.token))] = alt.logprob;
    top.push_back(e.scored ? alternatives : Json(nullptr));
    offsets.push_back(offset);
    offset += piece.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

enum class FinishReason { Stop, Length };
inline const char* finish_name(FinishReason f) { return f == FinishReason::Stop ? "stop" : "length"; }

struct Usage {
  uint32_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  Json json() const {
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
  }
};

// The fields every response and chunk of one completion shares.
struct ResponseHead {
  CompletionRequest::Kind kind;
  std::string id;     // chatcmpl-... / cmpl-...
  int64_t created;    // Unix seconds
  std::string model;  // the served model's id
  std::string fingerprint;

  Json base(bool chunk) const {
    const bool chat = kind == CompletionRequest::Kind::Chat;
    return {{"id", id},
            {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
            {"created", created},
            {"model", model},
            {"system_fingerprint", fingerprint}};
  }

  // A whole (unstreamed) completion.
  // `logprobs`: chat_logprobs' or completion_logprobs' object, or null.
  Json response(const std::string& text, FinishReason finish, const Usage& usage, Json logprobs = nullptr) const {
    Json j = base(false);
    Json choice = {{"index", 0}, {"logprobs", std::move(logprobs)}, {"finish_reason", finish_name(finish)}};
    if (kind == CompletionRequest::Kind::Chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
    else choice["text"] = text;
    j["choices"] = Json::array({choice});
    j["usage"] = usage.json();
    return j;
  }

  // One stream chunk: new text (the first chat chunk also names the role), or
  // the finish reason with empty content. With include_usage every chunk
  // carries "usage": null and a last chunk carries the usage and no choices.
  Json chunk(const std::string& text, std::optional<FinishReason> finish, bool first, bool include_usage,
             Json logprobs = nullptr) const {
    Json j = base(true);
    Json choice = {{"index", 0}, {"logprobs", std::move(logprobs)},
                   {"finish_reason", finish ? Json(finish_name(*finish)) : Json(nullptr)}};
    if (kind == CompletionRequest::Kind::Chat) {
      Json delta = Json::object();
      if (first) delta["role"] = "assistant";
      if (!finish) delta["content"] = text;
      choice["delta"] = delta;
    } else {
      choice["text"] = text;
    }
    j["choices"] = Json::array({choice});
    if (include_usage) j["usage"] = nullptr;
    return j;
  }
  Json usage_chunk(const Usage& usage) const {
    Json j = base(true);
    j["choices"] = Json::array();
    j["usage"] = usage.json();
    return j;
  }
};

}  // namespace unicorn::server
