// unicorn/server/tools.hpp — function calling (OpenAI's `tools`) for Gemma 3,
// which has no tool tokens: Google documents function calling for Gemma 3 as
// a prompt that lists the functions as JSON schemas and asks for a JSON reply
// naming the function and its parameters. So here:
//   - the tools go into the conversation's system text (tools_preamble);
//   - a reply that calls is `{"name": ..., "parameters": {...}}`, or a JSON
//     array of such objects for several calls at once (parallel_tool_calls);
//   - the reply is constrained by a grammar (tool_gbnf): with tool_choice
//     "required" or a named function it must be such a call, whose parameters
//     validate against the function's schema; with "auto" it is either such a
//     call or free text that does not start with '{' or '[';
//   - the finished reply is read back into OpenAI's tool_calls (read_calls);
//   - an assistant message's earlier tool_calls are written back as the JSON
//     the model would have written, and `role: "tool"` results become a user
//     turn (Gemma 3 has only user and model turns).
// Pure functions over nlohmann::json, as api.hpp's.
#pragma once

#include <optional>
#include <random>
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/grammar/json_schema.hpp"

namespace unicorn::server {

// JSON whose objects keep their keys in the order given (a schema's
// properties are written, and so generated, in that order).
using OrderedJson = nlohmann::ordered_json;

struct ToolFunction {
  std::string name;
  std::string description;
  OrderedJson parameters;  // a JSON schema of the arguments object
};

// A request's tools, checked.
struct ToolUse {
  std::vector<ToolFunction> tools;
  enum class Choice { None, Auto, Required, Named } choice = Choice::Auto;
  std::string named;     // Choice::Named: the function
  bool parallel = true;  // parallel_tool_calls: a reply may call several

  // Whether the reply may call a function (tools given and not "none").
  bool active() const { return !tools.empty() && choice != Choice::None; }
};

// One call in a reply: OpenAI's {id, type: "function", function: {name, arguments}}.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text of the arguments object
};

namespace tools_detail {

using Json = OrderedJson;

// A copy of a function's parameters schema whose "$defs" (or "definitions")
// live under the combined schema's "$defs", prefixed by the function's index,
// with its "$ref"s rewritten to match: several functions' schemas become one.
inline Json hoist_defs(const Json& schema, const std::string& prefix, Json& defs) {
  const auto rewrite = [&](auto&& self, const Json& v) -> Json {
    if (v.is_array()) {
      Json out = Json::array();
      for (const Json& x : v) out.push_back(self(self, x));
      return out;
    }
    if (!v.is_object()) return v;
    Json out = Json::object();
    for (const auto& [k, x] : v.items()) {
      if (k == "$ref" && x.is_string()) {
        const std::string ref = x.template get<std::string>();
        for (const std::string_view base : {"#/$defs/", "#/definitions/"})
          if (ref.starts_with(base)) out[k] = "#/$defs/" + prefix + ref.substr(base.size());
        if (!out.contains(k)) out[k] = ref;  // refused by the schema compiler if it cannot follow it
      } else if (&v == &schema && (k == "$defs" || k == "definitions")) {
        continue;
      } else {
        out[k] = self(self, x);
      }
    }
    return out;
  };
  for (const char* key : {"$defs", "definitions"})
    if (schema.is_object() && schema.contains(key) && schema[key].is_object())
      for (const auto& [name, def] : schema[key].items()) defs[prefix + name] = rewrite(rewrite, def);
  return rewrite(rewrite, schema);
}

}  // namespace tools_detail

// The JSON schema a calling reply validates against: one call object (or, with
// parallel calls, also an array of at least one), each call naming one of the
// functions that tool_choice allows with parameters valid for it.
inline OrderedJson calls_schema(const ToolUse& use) {
  using Json = OrderedJson;
  Json defs = Json::object(), calls = Json::array();
  for (size_t i = 0; i < use.tools.size(); ++i) {
    const ToolFunction& f = use.tools[i];
    if (use.choice == ToolUse::Choice::Named && f.name != use.named) continue;
    const Json params = f.parameters.is_null() ? Json{{"type", "object"}}
                                               : tools_detail::hoist_defs(f.parameters, "f" + std::to_string(i) + "-", defs);
    calls.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", f.name}}}, {"parameters", params}}},
                     {"required", {"name", "parameters"}},
                     {"additionalProperties", false}});
  }
  const Json call = calls.size() == 1 ? calls[0] : Json{{"anyOf", calls}};
  Json schema = use.parallel && use.choice != ToolUse::Choice::Named
                    ? Json{{"anyOf", {call, {{"type", "array"}, {"items", call}, {"minItems", 1}}}}}
                    : call;
  if (!defs.empty()) schema["$defs"] = defs;
  return schema;
}

namespace tools_detail {

// GBNF text with the rule `root` named `name` instead, wherever it is a rule
// name: outside "literals" and [classes] (a schema's key "root" stays).
inline std::string rename_root(std::string_view gbnf, std::string_view name) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
  std::string out;
  for (size_t i = 0; i < gbnf.size();) {
    const char c = gbnf[i];
    if (c == '"' || c == '[') {  // copy a literal or class whole, escapes included
      const char close = c == '"' ? '"' : ']';
      size_t j = i + 1;
      while (j < gbnf.size() && gbnf[j] != close) j += gbnf[j] == '\\' ? 2 : 1;
      out.append(gbnf.substr(i, j + 1 - i));
      i = j + 1;
    } else if (c == '#') {  // a comment, to the end of its line
      const size_t j = std::min(gbnf.find('\n', i), gbnf.size());
      out.append(gbnf.substr(i, j - i));
      i = j;
    } else if (word(c)) {
      size_t j = i;
      while (j < gbnf.size() && word(gbnf[j])) ++j;
      const std::string_view w = gbnf.substr(i, j - i);
      out.append(w == "root" ? name : w);
      i = j;
    } else {
      out += c, ++i;
    }
  }
  return out;
}

}  // namespace tools_detail

// The grammar of a reply (GBNF): a call as calls_schema says; with "auto",
// that or free text whose first character is not '{' or '['.
inline std::string tool_gbnf(const ToolUse& use) {
  const std::string calls = grammar::gbnf_from_json_schema(calls_schema(use));
  if (use.choice != ToolUse::Choice::Auto) return calls;
  return tools_detail::rename_root(calls, "call") + "\nroot ::= call | free-text\nfree-text ::= [^{[] [^\\x00]*\n";
}

// The system text that tells the model its functions and how to call them.
inline std::string tools_preamble(const ToolUse& use) {
  OrderedJson list = OrderedJson::array();
  for (const ToolFunction& f : use.tools) {
    OrderedJson entry = {{"name", f.name}};
    if (!f.description.empty()) entry["description"] = f.description;
    entry["parameters"] = f.parameters.is_null() ? OrderedJson{{"type", "object"}} : f.parameters;
    list.push_back(entry);
  }
  std::string out =
      "You can call functions. To call one, reply with nothing but a JSON object of the form "
      "{\"name\": <the function's name>, \"parameters\": <an object of its arguments>}";
  if (use.parallel && use.choice != ToolUse::Choice::Named)
    out += "; to call several at once, reply with a JSON array of such objects";
  out += ". ";
  if (use.choice == ToolUse::Choice::Required) out += "Call at least one function now. ";
  if (use.choice == ToolUse::Choice::Named) out += "Call the function " + use.named + " now. ";
  if (use.choice == ToolUse::Choice::Auto) out += "If no function helps, answer in plain text. ";
  out += "The functions, with their parameters as JSON schemas:\n";
  for (const auto& entry : list) out += entry.dump() + "\n";
  return out;
}

// How an assistant message's earlier calls go back into the conversation: as
// the reply the model would have written.
inline std::string calls_text(const std::vector<ToolCall>& calls) {
  OrderedJson out = OrderedJson::array();
  for (const ToolCall& c : calls) {
    OrderedJson args = OrderedJson::parse(c.arguments, nullptr, false);
    out.push_back({{"name", c.name}, {"parameters", args.is_discarded() ? OrderedJson(c.arguments) : args}});
  }
  return (out.size() == 1 ? out[0] : out).dump();
}

// A function's result (role "tool") as the user turn's text gives it.
inline std::string tool_result_text(const std::string& call_id, const std::string& name, const std::string& content) {
  OrderedJson j = {{"tool_call_id", call_id}};
  if (!name.empty()) j["name"] = name;
  j["result"] = content;
  return j.dump();
}

// A finished reply read as calls: its JSON as calls_schema describes, else
// nothing (a free-text answer under "auto"). Ids are "call_" and 24 hex digits.
template <class Rng>
std::optional<std::vector<ToolCall>> read_calls(std::string_view text, const ToolUse& use, Rng& rng) {
  if (!use.active()) return std::nullopt;
  const OrderedJson j = OrderedJson::parse(text, nullptr, false);
  if (j.is_discarded() || !(j.is_object() || j.is_array())) return std::nullopt;
  const OrderedJson items = j.is_array() ? j : OrderedJson::array({j});
  std::vector<ToolCall> calls;
  for (const auto& c : items) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || !c.contains("parameters")) return std::nullopt;
    std::string id = "call_";
    static constexpr char kHex[] = "0123456789abcdef";
    for (int i = 0; i < 24; ++i) id += kHex[std::uniform_int_distribution<int>(0, 15)(rng)];
    calls.push_back({std::move(id), c["name"].get<std::string>(), c["parameters"].dump()});
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace unicorn::server
