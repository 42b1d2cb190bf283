// unicorn/server/api.hpp — the OpenAI API's requests as the server speaks
// them: a /v1/chat/completions or /v1/completions body in, a checked
// CompletionRequest out (or an ApiError with the status and the OpenAI error
// object), from request.hpp's parsers of each field; and llama-server's
// /tokenize and /detokenize. With responses.hpp (the JSON of every response
// and stream chunk), pure functions over nlohmann::json, with no sockets and
// no engine, so the fuzz target and the unit tests call them as the HTTP layer
// (server/http.hpp) does.
//
// A field this server does not implement is refused with a 400 that names it,
// never silently ignored: a client that asks for a feature this server lacks learns at
// once that it will not get it.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "unicorn/server/request.hpp"
#include "unicorn/server/responses.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::server {

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
  int grammars = 0;  // response_format, grammar and json_schema each set one
  InOrder in_order{body, {}};
  std::string named_tool;  // tool_choice's field, when it names a function
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
    } else if (key == "n") {  // choices: at most the server's slots (checked with the prompt)
      if (!v.is_null()) r.n = uint32_t(integer_in(v, key, 1, kMaxChoices));
    } else if (chat && key == "logprobs") {
      if (!v.is_null()) r.sampling.logprobs = boolean(v, key);
    } else if (chat && key == "top_logprobs") {
      if (!v.is_null()) r.sampling.top_logprobs = uint32_t(integer_in(v, key, 0, kMaxTopLogprobs)), top_logprobs = true;
    } else if (key == "logprobs") {  // the legacy API's: how many alternatives, and the chosen tokens'
      if (!v.is_null()) r.sampling.logprobs = true, r.sampling.top_logprobs = uint32_t(integer_in(v, key, 0, 5));
    } else if (key == "response_format") {
      if (!v.is_null() && response_format(v, r, in_order)) ++grammars;
    } else if (key == "grammar") {  // llama-server's: GBNF text
      if (v.is_null()) continue;
      if (!v.is_string()) throw wrong_type(key, v, "a string of GBNF");
      r.grammar = compiled_grammar(v.get<std::string>(), key), r.grammar_field = key, ++grammars;
    } else if (key == "json_schema") {  // llama-server's: the schema itself
      if (!v.is_null()) r.grammar = schema_grammar(in_order.at("/json_schema"), key), r.grammar_field = key, ++grammars;
    } else if (key == "logit_bias") {
      if (!v.is_null()) r.sampling.logit_bias = logit_bias(v);
    } else if (chat && key == "tools") {
      if (!v.is_null()) r.tools.tools = tool_functions(v, in_order);
    } else if (chat && key == "tool_choice") {
      if (!v.is_null()) tool_choice(v, r.tools, named_tool);
    } else if (chat && key == "parallel_tool_calls") {
      if (!v.is_null()) r.tools.parallel = boolean(v, key);
    } else if (key == "suffix" || key == "functions" || key == "function_call") {
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
  if (!named_tool.empty() &&
      std::none_of(r.tools.tools.begin(), r.tools.tools.end(), [&](const ToolFunction& f) { return f.name == r.tools.named; }))
    throw bad_request("'tool_choice' names the function '" + r.tools.named + "', which 'tools' does not hold",
                      named_tool, "invalid_value");
  if (r.tools.choice == ToolUse::Choice::Required && r.tools.tools.empty())
    throw bad_request("'tool_choice' is \"required\" but there are no 'tools'", "tool_choice", "invalid_value");
  if (r.tools.active()) {
    if (grammars > 0)
      throw bad_request("'tools' cannot go with structured output ('" + r.grammar_field + "'): a reply that calls "
                        "a function follows the function's schema", r.grammar_field, "invalid_value");
    std::string gbnf;  // the replies the model may give: a call, or (with "auto") free text
    try {
      gbnf = tool_gbnf(r.tools);
    } catch (const Error& e) {
      throw bad_request(std::string("'tools': a function's parameters: ") + e.what(), "tools", "unsupported_schema");
    }
    r.grammar = compiled_grammar(gbnf, "tools");
    r.grammar_field = "tools";
    // The functions go first into the system text (Gemma 3 puts it in the first user turn).
    const std::string preamble = tools_preamble(r.tools);
    if (!r.messages.empty() && r.messages.front().role == "system")
      r.messages.front().content = preamble + "\n" + r.messages.front().content;
    else
      r.messages.insert(r.messages.begin(), {"system", preamble});
  }
  if (grammars > 1)
    throw bad_request("give one of 'response_format', 'grammar' and 'json_schema'", r.grammar_field, "invalid_value");
  if (r.grammar && r.ignore_eos)
    throw bad_request("'ignore_eos' cannot go with structured output: the grammar ends the answer", "ignore_eos",
                      "invalid_value");
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

}  // namespace unicorn::server
