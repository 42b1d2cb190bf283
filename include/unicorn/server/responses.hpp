// unicorn/server/responses.hpp — the JSON of every OpenAI response and
// stream chunk a completion sends: choices, finish reasons, usage, tool calls
// and log-probabilities, from a ResponseHead that every chunk of one
// completion shares. Pure functions, as server/api.hpp's parsers are.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/server/request.hpp"
#include "unicorn/server/tools.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::server {
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
  // `calls`: the reply called functions (tools.hpp): the message holds them
  // and no content, and the finish reason is "tool_calls".
  Json response(const std::string& text, FinishReason finish, const Usage& usage, Json logprobs = nullptr,
                const std::optional<std::vector<ToolCall>>& calls = std::nullopt) const {
    Json j = base(false);
    Json choice = {{"index", 0}, {"logprobs", std::move(logprobs)},
                   {"finish_reason", calls ? "tool_calls" : finish_name(finish)}};
    if (kind == CompletionRequest::Kind::Chat && calls)
      choice["message"] = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tool_calls_json(*calls, false)}};
    else if (kind == CompletionRequest::Kind::Chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
    else choice["text"] = text;
    j["choices"] = Json::array({choice});
    j["usage"] = usage.json();
    return j;
  }

  // One stream chunk: new text (the first chat chunk also names the role), or
  // the finish reason with empty content. With include_usage every chunk
  // carries "usage": null and a last chunk carries the usage and no choices.
  // `index`: the choice's (the API's n).
  Json chunk(const std::string& text, std::optional<FinishReason> finish, bool first, bool include_usage,
             Json logprobs = nullptr, uint32_t index = 0) const {
    Json j = base(true);
    Json choice = {{"index", index}, {"logprobs", std::move(logprobs)},
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
  // A chunk of a streamed reply that called functions: each call whole (with
  // its index, as OpenAI's deltas carry it); the finish chunk follows with
  // tool_calls_finish().
  Json tool_calls_chunk(const std::vector<ToolCall>& calls, bool first, bool include_usage, Json logprobs,
                        uint32_t index = 0) const {
    Json j = base(true);
    Json delta = {{"tool_calls", tool_calls_json(calls, true)}};
    if (first) delta["role"] = "assistant", delta["content"] = nullptr;
    j["choices"] = Json::array({{{"index", index}, {"delta", delta}, {"logprobs", std::move(logprobs)},
                                 {"finish_reason", nullptr}}});
    if (include_usage) j["usage"] = nullptr;
    return j;
  }
  Json tool_calls_finish(bool include_usage, uint32_t index = 0) const {
    Json j = base(true);
    j["choices"] = Json::array({{{"index", index}, {"delta", Json::object()}, {"logprobs", nullptr},
                                 {"finish_reason", "tool_calls"}}});
    if (include_usage) j["usage"] = nullptr;
    return j;
  }
  static Json tool_calls_json(const std::vector<ToolCall>& calls, bool indexed) {
    Json out = Json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
      Json c = {{"id", calls[i].id}, {"type", "function"},
                {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
      if (indexed) c["index"] = i;
      out.push_back(std::move(c));
    }
    return out;
  }
  Json usage_chunk(const Usage& usage) const {
    Json j = base(true);
    j["choices"] = Json::array();
    j["usage"] = usage.json();
    return j;
  }
};

}  // namespace unicorn::server
