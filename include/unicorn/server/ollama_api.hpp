// unicorn/server/ollama_api.hpp — Ollama's API as the server speaks it beside
// OpenAI's: a /api/chat or /api/generate body in, a checked OllamaRequest out
// (its CompletionRequest is what the scheduler runs, as for /v1/*), and the
// JSON of every reply: the streamed chunks and the final one with Ollama's
// counts and durations, /api/tags, /api/show, /api/ps and /api/version. Pure
// functions over nlohmann::json, like api.hpp, whose checks they reuse; the
// HTTP layer (server/http.hpp) routes to them.
//
// Shapes follow Ollama's API (ollama/ollama docs/api.md and api/types.go).
// What differs, and why, is in docs/server.md ("Ollama's API"). In short:
// a field Ollama has that would change the output and that this server does
// not implement (images, tools, think, suffix, template, context,
// typical_p, mirostat, tfs_z) is refused with a 400 naming it, as the OpenAI
// routes refuse theirs; fields about where and how long a model is loaded
// (keep_alive, num_gpu, num_thread, use_mmap, ...) are accepted and change
// nothing, since this server loads its one model once, at start.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/config/dims.hpp"
#include "unicorn/config/sampling.hpp"
#include "unicorn/server/api.hpp"
#include "unicorn/server/data_url.hpp"
#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::server {

// A checked /api/chat or /api/generate body.
struct OllamaRequest {
  enum class Route { Chat, Generate };
  Route route = Route::Chat;
  std::string model;  // as the client named it: every reply echoes it, as Ollama's do
  // No messages, or an empty prompt: Ollama's "load the model" call, answered
  // at once with done_reason "load" (the model is loaded when the server is ready).
  bool load_only = false;
  // What the scheduler runs: a chat (/api/chat, and /api/generate through the
  // chat template), or a text completion (/api/generate with raw: true).
  CompletionRequest completion;
  // options.num_ctx, at most the server's context: the prompt and the answer
  // fit in this many tokens (the prompt must, the answer ends there: "length").
  std::optional<uint32_t> num_ctx;
};

namespace ollama {

// Ollama's error shape: {"error": "..."} (api/types.go StatusError).
inline Json error_body(const ApiError& e) { return {{"error", e.message}}; }

// The model names a request may give for the served model: its id, or the id
// with Ollama's default tag (clients that list /api/tags send "name:latest").
inline std::string tagged(const std::string& id) {
  return id.find(':') == std::string::npos ? id + ":latest" : id;
}
inline bool names_model(std::string_view given, const std::string& id) { return given == id || given == tagged(id); }
inline ApiError model_not_found(const std::string& given) {
  return {404, "model '" + given + "' not found", "invalid_request_error", "model", "model_not_found"};
}

// Ollama's defaults for options a request leaves out (api/types.go
// DefaultOptions): they are what /api/show lists under "parameters".
inline constexpr float kTemperature = 0.8f, kTopP = 0.9f;
inline constexpr uint32_t kTopK = 40, kRepeatLastN = 64;

// RFC 3339 in UTC with nine fractional digits (created_at, modified_at); Go,
// which Ollama is written in, trims trailing zeros, and parsers take either.
inline std::string rfc3339(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const std::time_t secs = std::time_t(ns / 1000000000 - (ns % 1000000000 < 0));
  const long frac = long(((ns % 1000000000) + 1000000000) % 1000000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return out;
}

namespace detail {

using parse::brief;
using parse::wrong_type;

// A field Ollama has whose only value here is `neutral` (others would change
// the output in a way this server does not implement).
inline void only_neutral(const Json& v, const std::string& field, const Json& neutral, std::string_view why) {
  if (!v.is_null() && v != neutral)
    throw bad_request(field + ": " + brief(v) + " is not supported by this server (only " + neutral.dump() + "): " +
                          std::string(why), field, "unsupported_value");
}

inline void type_only(const Json& v, const std::string& field, bool integer) {
  if (v.is_null()) return;
  if (integer) (void)parse::integer_in(v, field, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  else (void)parse::boolean(v, field);
}

// `options`: the Modelfile parameters a request may set (api/types.go
// Options and Runner, and the older ones clients still send). Null is unset,
// as Ollama has it; a name Ollama does not know is refused.
inline void options(const Json& o, OllamaRequest& r, uint32_t context, bool& whole_context_window) {
  if (!o.is_object()) throw wrong_type("options", o, "an object");
  CompletionRequest& c = r.completion;
  for (const auto& [key, v] : o.items()) {
    const std::string field = "options." + key;
    if (v.is_null()) continue;
    if (key == "num_predict") {
      // Ollama's -1 (no limit) and -2 (fill the context), and 0 (its runners
      // treat <= 0 alike): until the end of the turn or of the context.
      const int64_t n = parse::integer_in(v, field, std::numeric_limits<int32_t>::min(),
                                          std::numeric_limits<int32_t>::max());
      if (n > 0) c.max_tokens = uint32_t(n);
      else c.max_tokens.reset();
    } else if (key == "temperature") {
      c.sampling.temperature = float(parse::number_in(v, field, 0, 2));
    } else if (key == "top_k") {
      c.sampling.top_k = uint32_t(parse::integer_in(v, field, 0, 1 << 20));  // 0: off
    } else if (key == "top_p") {
      c.sampling.top_p = float(parse::number_in(v, field, 0, 1, /*open_lo=*/true));
    } else if (key == "min_p") {
      c.sampling.min_p = float(parse::number_in(v, field, 0, 1));
    } else if (key == "seed") {
      // Ollama's -1 is its default: a random seed. Others fold to the
      // sampler's 32 bits as the OpenAI routes' do.
      const int64_t s = parse::integer_in(v, field, std::numeric_limits<int64_t>::min(),
                                          std::numeric_limits<int64_t>::max());
      c.seeded = s != -1;
      if (c.seeded) c.sampling.seed = uint32_t(uint64_t(s) ^ (uint64_t(s) >> 32));
    } else if (key == "stop") {
      c.stop = parse::stop_strings(v);
    } else if (key == "repeat_penalty") {
      c.sampling.repeat_penalty = float(parse::number_in(v, field, 0, 10, /*open_lo=*/true));
    } else if (key == "repeat_last_n") {
      // -1: the whole context (Ollama's num_ctx), which the window must hold.
      const int64_t n = parse::integer_in(v, field, -1, kMaxRepeatLastN);
      whole_context_window = n == -1;
      if (n >= 0) c.sampling.repeat_last_n = uint32_t(n);
    } else if (key == "presence_penalty") {
      c.sampling.presence_penalty = float(parse::number_in(v, field, -2, 2));
    } else if (key == "frequency_penalty") {
      c.sampling.frequency_penalty = float(parse::number_in(v, field, -2, 2));
    } else if (key == "num_ctx") {
      const int64_t n = parse::integer_in(v, field, 1, std::numeric_limits<int32_t>::max());
      if (n > int64_t(context))
        throw bad_request(field + ": " + std::to_string(n) + " tokens is more than this server's context of " +
                              std::to_string(context) + " tokens per request (its --ctx-size); ask for at most " +
                              std::to_string(context), field, "invalid_value");
      r.num_ctx = uint32_t(n);
    } else if (key == "typical_p") {
      only_neutral(v, field, 1.0, "locally typical sampling is not implemented");
    } else if (key == "tfs_z") {
      only_neutral(v, field, 1.0, "tail-free sampling is not implemented");
    } else if (key == "mirostat") {
      only_neutral(v, field, 0, "Mirostat sampling is not implemented");
    } else if (key == "mirostat_tau" || key == "mirostat_eta") {
      (void)parse::number_in(v, field, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
    } else if (key == "penalize_newline") {
      // Ollama's own engines no longer read it: penalties cover every token.
      (void)parse::boolean(v, field);
    } else if (key == "num_keep" || key == "num_batch" || key == "num_gpu" || key == "main_gpu" ||
               key == "num_thread" || key == "draft_num_predict") {
      // Where and how Ollama would load and run the model: this server's
      // engine and its placement are fixed when it starts.
      type_only(v, field, true);
    } else if (key == "use_mmap" || key == "use_mlock" || key == "numa" || key == "low_vram" || key == "f16_kv" ||
               key == "vocab_only" || key == "logits_all" || key == "embedding_only") {
      type_only(v, field, false);
    } else {
      throw bad_request(field + " is not an option of Ollama's API", field, "unsupported_parameter");
    }
  }
}

// Ollama's `images`: base64 files (no data: prefix), each written before the
// text as Gemma 3's template writes an image part (text::kImageMarker).
inline std::vector<std::string> images(const Json& v, const std::string& field) {
  if (v.is_null()) return {};
  if (!v.is_array()) throw wrong_type(field, v, "an array of base64 images");
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (!v[i].is_string()) throw wrong_type(at, v[i], "a base64 string");
    try {
      out.push_back(decode_base64(v[i].get<std::string>()));
    } catch (const Error& e) {
      throw bad_request(at + ": " + e.what(), at, "invalid_image");
    }
  }
  return out;
}

inline std::string with_image_markers(size_t images, const std::string& text) {
  std::string out;
  for (size_t i = 0; i < images; ++i) out += text::kImageMarker;
  return out + text;
}

// /api/chat's messages: {role, content, images?, thinking?, tool_calls?, ...}.
inline std::vector<text::ChatMessage> messages(const Json& v) {
  if (!v.is_array()) throw wrong_type("messages", v, "an array of messages");
  std::vector<text::ChatMessage> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const Json& m = v[i];
    if (!m.is_object()) throw wrong_type(at, m, "an object");
    std::string role, content;
    std::vector<std::string> pictures;
    for (const auto& [k, f] : m.items()) {
      const std::string field = at + "." + k;
      if (k == "role") {
        if (!f.is_string()) throw wrong_type(field, f, "a string");
        role = f.get<std::string>();
      } else if (k == "content") {
        if (!f.is_null() && !f.is_string()) throw wrong_type(field, f, "a string");
        if (f.is_string()) content = f.get<std::string>();
      } else if (k == "images") {
        pictures = images(f, field);
      } else if (k == "thinking") {
        // A thinking model's reasoning on an earlier turn: Gemma 3's template
        // has no place for it (Ollama's renders only the content too).
        if (!f.is_null() && !f.is_string()) throw wrong_type(field, f, "a string");
      } else if (k == "tool_calls" || k == "tool_name" || k == "tool_call_id") {
        if (!f.is_null() && !(f.is_array() && f.empty()) && !(f.is_string() && f.get<std::string>().empty()))
          throw bad_request(field + ": this server does not call tools", field, "unsupported_parameter");
      } else {
        throw bad_request(field + " is not a field of Ollama's messages", field, "unsupported_parameter");
      }
    }
    if (!m.contains("role")) throw bad_request(at + ".role is required", at + ".role", "missing_field");
    if (role == "tool")
      throw bad_request(at + ".role: 'tool' messages answer tool calls, which this server does not make",
                        at + ".role", "unsupported_value");
    if (role != "system" && role != "user" && role != "assistant")
      throw bad_request(at + ".role must be system, user or assistant, not '" + role.substr(0, 32) + "'",
                        at + ".role", "invalid_value");
    if (!pictures.empty() && role != "user")
      throw bad_request(at + ".images: only a user's message shows images", at + ".images", "invalid_value");
    const size_t n = pictures.size();
    out.push_back({role, with_image_markers(n, content), std::move(pictures)});
  }
  return out;
}

// `format`: null or "" is plain text; "json" any JSON object, as OpenAI's
// json_object; a JSON schema (an object) a value that validates (api.hpp's
// grammars: the sampling is constrained to it).
inline void format(const Json& v, CompletionRequest& c, parse::InOrder& in_order) {
  if (v.is_null() || v == "") return;
  if (!(v == "json") && !v.is_object())
    throw bad_request("format: must be \"json\" or a JSON schema (an object), not " + brief(v), "format",
                      "invalid_value");
  c.grammar_field = "format";
  c.grammar = v.is_object() ? parse::schema_grammar(in_order.at("/format"), "format")
                            : parse::compiled_grammar(grammar::gbnf_json_object(), "format");
}

}  // namespace detail
}  // namespace ollama

// Parses and checks a /api/chat or /api/generate body; `context` is the
// server's context per request (num_ctx may not exceed it). Throws ApiError
// (400) naming the first field that is wrong or not supported.
inline OllamaRequest parse_ollama_request(std::string_view body, OllamaRequest::Route route, uint32_t context) {
  using parse::wrong_type;
  namespace detail = ollama::detail;
  const bool chat = route == OllamaRequest::Route::Chat;
  const Json j = chat ? parse_object(body, {"model", "messages", "stream", "format", "keep_alive", "tools", "options",
                                            "think", "truncate", "shift", "logprobs", "top_logprobs"})
                      : parse_object(body, {"model", "prompt", "suffix", "system", "template", "context", "stream",
                                            "raw", "format", "keep_alive", "images", "options", "think", "truncate",
                                            "shift", "logprobs", "top_logprobs"});
  OllamaRequest r;
  r.route = route;
  CompletionRequest& c = r.completion;
  c.kind = CompletionRequest::Kind::Chat;
  parse::InOrder in_order{body, {}};  // a format schema's properties in the client's order
  c.stream = true;  // Ollama streams unless told not to
  c.sampling.temperature = ollama::kTemperature;
  c.sampling.top_k = ollama::kTopK;
  c.sampling.top_p = ollama::kTopP;
  c.sampling.repeat_last_n = ollama::kRepeatLastN;
  std::vector<text::ChatMessage> messages;
  std::string prompt, system;
  std::vector<std::string> prompt_images;  // /api/generate's images
  bool raw = false, top_logprobs = false, whole_context_window = false;
  const auto string_field = [&](const std::string& key, const Json& v) {
    if (v.is_null()) return std::string();
    if (!v.is_string()) throw wrong_type(key, v, "a string");
    return v.get<std::string>();
  };
  for (const auto& [key, v] : j.items()) {
    if (key == "model") {
      r.model = string_field(key, v);
    } else if (key == "messages") {
      if (!v.is_null()) messages = detail::messages(v);
    } else if (key == "prompt") {
      prompt = string_field(key, v);
    } else if (key == "system") {
      system = string_field(key, v);
    } else if (key == "suffix") {
      if (!string_field(key, v).empty())
        throw bad_request("suffix: Gemma 3 has no fill-in-the-middle template", key, "unsupported_parameter");
    } else if (key == "template") {
      if (!string_field(key, v).empty())
        throw bad_request("template: this server renders Gemma 3's chat template only; send the prompt already "
                          "templated with raw: true", key, "unsupported_parameter");
    } else if (key == "context") {
      // Deprecated by Ollama (the tokens of an earlier exchange): a
      // conversation goes to /api/chat, and no reply of this server carries it.
      if (!v.is_null() && !v.is_array()) throw wrong_type(key, v, "an array of token ids");
      if (!v.is_null() && !v.empty())
        throw bad_request("context: Ollama's deprecated conversation tokens are not supported by this server; send "
                          "the conversation to /api/chat", key, "unsupported_parameter");
    } else if (key == "raw") {
      if (!v.is_null()) raw = parse::boolean(v, key);
    } else if (key == "stream") {
      if (!v.is_null()) c.stream = parse::boolean(v, key);
    } else if (key == "format") {
      detail::format(v, c, in_order);
    } else if (key == "keep_alive") {
      // How long Ollama keeps the model loaded after the request ("5m", 300,
      // 0 unloads, -1 forever): this server holds its one model until it stops.
      if (!v.is_null() && !v.is_string() && !v.is_number()) throw wrong_type(key, v, "a duration (\"5m\") or seconds");
    } else if (key == "images") {
      prompt_images = detail::images(v, key);
    } else if (key == "options") {
      if (!v.is_null()) detail::options(v, r, context, whole_context_window);
    } else if (key == "think") {
      if (!v.is_null() && !v.is_boolean() && !v.is_string()) throw wrong_type(key, v, "a boolean or a level");
      if (v == true || v.is_string())
        throw bad_request("think: Gemma 3 is not a thinking model", key, "unsupported_value");
    } else if (key == "tools") {
      if (!v.is_null() && !v.is_array()) throw wrong_type(key, v, "an array of tools");
      if (!v.is_null() && !v.empty())
        throw bad_request("tools: this server does not call tools", key, "unsupported_parameter");
    } else if (key == "truncate" || key == "shift") {
      // Ollama's defaults (true) cut a prompt past the context and shift the
      // context when the answer fills it. This server does neither: such a
      // prompt is a 400 and the answer ends there ("length"). Either value
      // is accepted.
      if (!v.is_null()) (void)parse::boolean(v, key);
    } else if (key == "logprobs") {
      if (!v.is_null()) c.sampling.logprobs = parse::boolean(v, key);
    } else if (key == "top_logprobs") {
      if (!v.is_null()) c.sampling.top_logprobs = uint32_t(parse::integer_in(v, key, 0, kMaxTopLogprobs)), top_logprobs = true;
    }
  }
  if (r.model.empty()) throw bad_request("model is required", "model", "missing_field");
  if (raw && !system.empty())  // (a template or context is refused above, raw or not)
    throw bad_request("raw mode does not support template, system, or context", "raw", "invalid_value");
  if (top_logprobs && c.sampling.top_logprobs > 0 && !c.sampling.logprobs)
    throw bad_request("top_logprobs needs logprobs: true", "top_logprobs", "invalid_value");
  if (whole_context_window) {
    const uint32_t window = r.num_ctx.value_or(context);
    if (window > kMaxRepeatLastN)
      throw bad_request("options.repeat_last_n: -1 asks for the whole context (" + std::to_string(window) +
                            " tokens) as the penalty window; this server's window holds at most " +
                            std::to_string(kMaxRepeatLastN), "options.repeat_last_n", "invalid_value");
    c.sampling.repeat_last_n = window;
  }
  // completion.model stays empty: the route checks r.model, which may carry Ollama's ":latest".
  if (chat) {
    r.load_only = messages.empty();
    if (!r.load_only) parse::renderable(messages);
    c.messages = std::move(messages);
  } else if (prompt.empty()) {
    r.load_only = true;
  } else if (raw) {
    if (!prompt_images.empty())
      throw bad_request("images with raw: true: a raw prompt has no place for an image", "images", "invalid_value");
    c.kind = CompletionRequest::Kind::Text;
    c.prompt_text = std::move(prompt);
  } else {  // through the chat template, as one user turn after the system prompt
    if (!system.empty()) c.messages.push_back({"system", std::move(system)});
    const size_t n = prompt_images.size();
    c.messages.push_back({"user", detail::with_image_markers(n, prompt), std::move(prompt_images)});
  }
  return r;
}

// --- replies ---

// What the final reply reports (Ollama's Metrics, durations in nanoseconds).
struct OllamaStats {
  int64_t total_ns = 0;        // from the request's arrival to its end
  int64_t load_ns = 0;         // loading the model: always 0, it is loaded when the server is ready
  uint32_t prompt_tokens = 0;  // the whole prompt, cached prefix included
  int64_t prompt_ns = 0;       // from the arrival to the first token (waiting for a slot included)
  uint32_t eval_tokens = 0;    // tokens generated
  int64_t eval_ns = 0;         // from the first token to the end
};

inline OllamaStats ollama_stats(std::chrono::steady_clock::time_point arrived,
                                std::optional<std::chrono::steady_clock::time_point> first_token,
                                std::chrono::steady_clock::time_point ended, const Usage& usage) {
  const auto ns = [](auto d) { return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()); };
  const auto first = first_token.value_or(ended);
  return {ns(ended - arrived), 0, usage.prompt_tokens, ns(first - arrived), usage.completion_tokens, ns(ended - first)};
}

// The fields every reply of one /api/chat or /api/generate shares.
struct OllamaHead {
  OllamaRequest::Route route;
  std::string model;  // as the request named it

  Json base(const std::string& text, std::chrono::system_clock::time_point now) const {
    Json j = {{"model", model}, {"created_at", ollama::rfc3339(now)}};
    if (route == OllamaRequest::Route::Chat) j["message"] = {{"role", "assistant"}, {"content", text}};
    else j["response"] = text;
    return j;
  }
  // A streamed piece of the answer. `logprobs`: the chosen tokens' (chat_logprobs' "content"), or null.
  Json chunk(const std::string& text, Json logprobs = nullptr,
             std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const {
    Json j = base(text, now);
    j["done"] = false;
    if (!logprobs.is_null()) j["logprobs"] = std::move(logprobs);
    return j;
  }
  // The last reply: the rest of the text (all of it unstreamed, none streamed), the counts and durations.
  Json final(const std::string& text, FinishReason finish, const OllamaStats& s, Json logprobs = nullptr,
             std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const {
    Json j = base(text, now);
    j["done"] = true;
    j["done_reason"] = finish_name(finish);
    j["total_duration"] = s.total_ns;
    j["load_duration"] = s.load_ns;
    j["prompt_eval_count"] = s.prompt_tokens;
    j["prompt_eval_duration"] = s.prompt_ns;
    j["eval_count"] = s.eval_tokens;
    j["eval_duration"] = s.eval_ns;
    if (!logprobs.is_null()) j["logprobs"] = std::move(logprobs);
    return j;
  }
  // The answer to a request with no messages or an empty prompt: Ollama's load call.
  Json loaded(std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const {
    Json j = base("", now);
    j["done"] = true;
    j["done_reason"] = "load";
    return j;
  }
};

// --- the model: /api/tags, /api/show, /api/ps ---

// What the server knows of the model it serves.
struct OllamaModelFacts {
  std::string id;             // ServerOptions::model_id
  ModelDims dims;             // the architecture
  uint64_t parameters = 0;    // weights' elements (a tied LM head counted once)
  uint64_t weight_bytes = 0;  // on the device
  std::string quantization;   // the scheme's name (Q8_0, Q4_K_M, ...)
  uint32_t context = 0;       // tokens per request (the server's --ctx-size)
  int64_t loaded_at = 0;      // Unix seconds: the server's start
  int32_t bos = -1, eos = -1, end_of_turn = -1;
  uint32_t vocab = 0;
  bool vision = false;  // images are taken (an image encoder is loaded)
};

namespace ollama {

// Ollama's human parameter count (format.HumanNumber): 999.89M, 4.3B, 12B.
inline std::string human_number(uint64_t n) {
  char out[32];
  const auto at = [&](double unit, const char* suffix, const char* decimals) {
    const double x = double(n) / unit;
    if (x == std::floor(x)) std::snprintf(out, sizeof out, "%.0f%s", x, suffix);
    else std::snprintf(out, sizeof out, decimals, x, suffix);
    return std::string(out);
  };
  if (n >= 1000000000) return at(1e9, "B", "%.1f%s");
  if (n >= 1000000) return at(1e6, "M", "%.2f%s");
  if (n >= 1000) {
    std::snprintf(out, sizeof out, "%.0fK", double(n) / 1e3);
    return out;
  }
  return std::to_string(n);
}

// The prompt /api/generate renders (text/chat_template.hpp's render_chat, in
// Ollama's template language; <bos> is the tokenizer's). Shown by /api/show;
// a request's own `template` is refused.
inline constexpr std::string_view kTemplate =
    "<start_of_turn>user\n{{ if .System }}{{ .System }}\n\n{{ end }}{{ .Prompt }}<end_of_turn>\n"
    "<start_of_turn>model\n{{ .Response }}<end_of_turn>\n";

inline Json details(const OllamaModelFacts& m) {
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", "gemma3"},
          {"families", Json::array({"gemma3"})},
          {"parameter_size", human_number(m.parameters)},
          {"quantization_level", m.quantization}};
}

// Ollama's "parameters" text: one "name value" line each, names padded to 30.
inline std::string parameters(const OllamaModelFacts& m) {
  std::string out;
  const auto line = [&](std::string_view name, const std::string& value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%-30.*s ", int(name.size()), name.data());
    out += buf + value + "\n";
  };
  const auto num = [](float x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(x));
    return std::string(buf);
  };
  line("num_ctx", std::to_string(m.context));
  line("repeat_last_n", std::to_string(kRepeatLastN));
  line("temperature", num(kTemperature));
  line("top_k", std::to_string(kTopK));
  line("top_p", num(kTopP));
  return out.substr(0, out.size() - 1);
}

}  // namespace ollama

// GET /api/tags: the one model this server serves.
inline Json ollama_tags(const OllamaModelFacts& m) {
  const auto when = ollama::rfc3339(std::chrono::system_clock::time_point(std::chrono::seconds(m.loaded_at)));
  return {{"models", Json::array({{{"name", ollama::tagged(m.id)},
                                   {"model", ollama::tagged(m.id)},
                                   {"modified_at", when},
                                   {"size", m.weight_bytes},
                                   {"digest", ""},  // Ollama's is its manifest's; this server has none
                                   {"details", ollama::details(m)}}})}};
}

// GET /api/ps: the model is loaded for as long as the server runs.
inline Json ollama_ps(const OllamaModelFacts& m) {
  return {{"models", Json::array({{{"name", ollama::tagged(m.id)},
                                   {"model", ollama::tagged(m.id)},
                                   {"size", m.weight_bytes},
                                   {"digest", ""},
                                   {"details", ollama::details(m)},
                                   {"expires_at", "9999-12-31T23:59:59Z"},  // never: keep_alive does not apply
                                   {"size_vram", m.weight_bytes},
                                   {"context_length", m.context}}})}};
}

// POST /api/show: {"model" (or Ollama's older "name"), "verbose"?} -> the
// model's details, parameters, template and architecture.
inline Json ollama_show(const OllamaModelFacts& m, std::string_view body) {
  const Json j = parse_object(body, {"model", "name", "verbose", "system", "template", "options"});
  std::string given;
  for (const char* key : {"model", "name"})
    if (j.contains(key) && !j[key].is_null()) {
      if (!j[key].is_string()) throw parse::wrong_type(key, j[key], "a string");
      if (given.empty()) given = j[key].get<std::string>();
    }
  if (given.empty()) throw bad_request("model is required", "model", "missing_field");
  if (j.contains("verbose") && !j["verbose"].is_null()) (void)parse::boolean(j["verbose"], "verbose");
  if (!ollama::names_model(given, m.id)) throw ollama::model_not_found(given);
  const ModelDims& d = m.dims;
  const std::string params = ollama::parameters(m);
  std::string modelfile = "# Modelfile of the model unicorn-server serves\nFROM " + ollama::tagged(m.id) +
                          "\nTEMPLATE \"\"\"" + std::string(ollama::kTemplate) + "\"\"\"\n";
  for (size_t at = 0; at < params.size();) {
    const size_t end = std::min(params.find('\n', at), params.size());
    const std::string line = params.substr(at, end - at);
    const size_t gap = line.find(' ');
    modelfile += "PARAMETER " + line.substr(0, gap) + " " + line.substr(line.find_first_not_of(' ', gap)) + "\n";
    at = end + 1;
  }
  return {{"modelfile", modelfile},
          {"parameters", params},
          {"template", ollama::kTemplate},
          {"details", ollama::details(m)},
          {"model_info",
           {{"general.architecture", "gemma3"},
            {"general.basename", std::string(d.name)},
            {"general.parameter_count", m.parameters},
            {"gemma3.block_count", d.layers},
            {"gemma3.context_length", d.max_context},
            {"gemma3.embedding_length", d.hidden},
            {"gemma3.feed_forward_length", d.ffn},
            {"gemma3.attention.head_count", d.heads},
            {"gemma3.attention.head_count_kv", d.kv_heads},
            {"gemma3.attention.key_length", d.head_dim},
            {"gemma3.attention.value_length", d.head_dim},
            {"gemma3.attention.sliding_window", d.sliding_window},
            {"gemma3.attention.layer_norm_rms_epsilon", d.rms_eps},
            {"gemma3.rope.freq_base", d.rope_theta_global},
            {"gemma3.vocab_size", m.vocab},
            {"tokenizer.ggml.bos_token_id", m.bos},
            {"tokenizer.ggml.eos_token_id", m.eos},
            {"tokenizer.ggml.eot_token_id", m.end_of_turn}}},
          {"capabilities", m.vision ? Json::array({"completion", "vision"}) : Json::array({"completion"})},
          {"modified_at", ollama::rfc3339(std::chrono::system_clock::time_point(std::chrono::seconds(m.loaded_at)))}};
}

// GET /api/version: this server's version (CMakeLists.txt's project()), not
// an Ollama release's.
inline constexpr std::string_view kServerVersion = "0.1.0";
inline Json ollama_version() { return {{"version", kServerVersion}}; }

}  // namespace unicorn::server
