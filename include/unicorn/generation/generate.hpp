// unicorn/generation/generate.hpp — the text loop around one stream of an engine:
// feed a prompt, stream text as tokens come back, stop at <eos>,
// <end_of_turn>, a stop string, the token limit or a cancel. AnyEngine::generate
// and ChatSession (chat_session.hpp) are its public faces; tokens are chosen on
// the GPU with the request's own sampling parameters, only their ids come back.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/base/linkage.hpp"
#include "unicorn/config/sampling.hpp"
#include "unicorn/engine/core.hpp"
#include "unicorn/generation/speculative.hpp"
#include "unicorn/gpu/device_error.hpp"
#include "unicorn/text/text_stream.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::text {

// Receives generated text as it becomes final (complete UTF-8, never the start
// of a stop string that may still complete).
using TextSink = std::function<void(std::string_view)>;

// One request: everything that may differ between two calls on the same engine.
struct GenerateOptions {
  int max_tokens = 256;
  std::vector<std::string> stop;      // stop strings (not part of the text)
  SamplingParams sampling;            // greedy unless set; applied to this request only
  // Set from any thread (or a signal handler) to stop after the token being
  // made; the result then says StopReason::cancelled. Not owned.
  const std::atomic<bool>* cancel = nullptr;
  // Encoded image files (PNG, JPEG, BMP, GIF, WebP) for a model that sees
  // images (AnyEngine::sees_images): AnyEngine::generate puts each where the
  // prompt writes <start_of_image>, or all before the prompt.
  std::vector<std::string> images = {};
  // Speculative decoding, where the engine has a draft model (AnyEngine::
  // has_draft): the most tokens it guesses a round (-1: the deployment's
  // draft_max; 0: none, every token from a decode step) and, below that, the
  // fewest (0: always the most; else the count adapts between the two to the
  // run of guesses last kept). The text is the same either way.
  int draft_max = -1;
  int draft_min = 0;
};

// Why generation stopped. Each name says what happened in full ("limit" alone
// could be any limit, "eos" is a token's name); to_string gives the short
// words the programs print, unchanged (unicorn-generate's "stopped: ..." line).
enum class StopReason {
  end_of_sequence,  // the model chose <eos>
  end_of_turn,      // the model chose <end_of_turn>
  stop_string,      // the text reached one of GenerateOptions::stop
  length_limit,     // GenerateOptions::max_tokens were generated
  context_full,     // the stream's context (AnyEngine::context_limit) holds no more
  cancelled,        // GenerateOptions::cancel or ChatSession::cancel was set
};
constexpr std::string_view to_string(StopReason r) {
  switch (r) {
    case StopReason::end_of_sequence: return "eos";
    case StopReason::end_of_turn: return "end_of_turn";
    case StopReason::stop_string: return "stop string";
    case StopReason::length_limit: return "limit";
    case StopReason::context_full: return "context full";
    case StopReason::cancelled: return "cancelled";
  }
  return "unknown";  // not a StopReason value
}

struct GenerateResult {
  int prompt_tokens = 0;     // fed: the whole prompt, unless cancelled inside it
  int generated = 0;          // tokens produced (the stop token not counted)
  double prefill_seconds = 0;
  double decode_seconds = 0;
  std::string text;           // what was streamed
  StopReason stopped_by = StopReason::length_limit;  // to_string(stopped_by): in words
  int32_t pending = -1;       // the last token produced, not yet fed to the model; -1: cancelled
                              // before the prompt was all in (the stream holds a part of it)
  // Speculative decoding: tokens the draft guessed, those kept, and the
  // target's verify passes (0 without a draft).
  int drafted = 0;
  int accepted = 0;
  int verify_passes = 0;
};

namespace detail {

// Appends `prompt` at `stream`'s current position and generates with
// `opt.sampling` (set on that stream, its draws starting over). `also_cancel`
// is a second flag (ChatSession::cancel's). Used through AnyEngine::generate
// and ChatSession.
// `images` place image soft tokens in the prompt (by stream position:
// engine/step.hpp's PromptImage; generation/image_prompt.hpp lays them out).
// With `draft` (an engine of one stream over the same vocabulary) and a
// verify pass in `engine`, tokens come speculatively (speculative.hpp),
// except for a constrained stream or one whose log-probabilities are asked.
GenerateResult generate(unicorn::detail::EngineCore& engine, const Tokenizer& tok, uint32_t stream,
                        std::span<const int32_t> prompt, const GenerateOptions& opt, const TextSink& on_text,
                        const std::atomic<bool>* also_cancel = nullptr, std::span<const PromptImage> images = {},
                        unicorn::detail::EngineCore* draft = nullptr);

}  // namespace detail
}  // namespace unicorn::text

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::text::detail {

UNICORN_DECL GenerateResult generate(unicorn::detail::EngineCore& engine, const Tokenizer& tok, uint32_t stream,
                                     std::span<const int32_t> prompt, const GenerateOptions& opt, const TextSink& on_text,
                                     const std::atomic<bool>* also_cancel, std::span<const PromptImage> images,
                                     unicorn::detail::EngineCore* draft) {
  using Clock = std::chrono::steady_clock;
  GenerateResult r;
  r.prompt_tokens = int(prompt.size());
  const auto cancelled = [&] {
    return (opt.cancel && opt.cancel->load()) || (also_cancel && also_cancel->load());
  };
  // A failure names the pass that was running (a device lost mid-answer, a
  // weights file that makes NaN), keeping the error's type.
  const auto step = [&](const std::string& what, auto&& run) {
    try {
      return run();
    } catch (const gpu::DeviceError& e) {
      throw gpu::DeviceError(e.result(), what + ": " + e.what());
    } catch (const Error& e) {
      throw Error(what + ": " + e.what());
    }
  };
  // A new setting starts the stream's draws over; the same one (the next turn
  // of a chat) continues them, as one sampler would.
  if (engine.sampling(stream) != opt.sampling) engine.set_sampling(stream, opt.sampling);
  auto t0 = Clock::now();
  // The prompt goes in a pass at a time, so that a cancel is seen within one
  // pass (a long prompt is many), not after the whole prompt.
  const std::string prefill_what = "prefill of " + std::to_string(prompt.size()) + " prompt tokens at position " +
                                   std::to_string(engine.position(stream));
  // A pass ends before an image it would cut (an image's rows see each
  // other, so they go in together).
  using Core = unicorn::detail::EngineCore;
  const size_t chunk = engine.config().prefill_chunk;
  const uint32_t start = engine.position(stream);
  step(prefill_what, [&] { Core::check_images_fit(start, prompt.size(), chunk, images, "prefill"); });
  size_t at = 0;
  for (size_t n; (n = Core::chunk_tokens(start + uint32_t(at), prompt.size() - at, chunk, images)) < prompt.size() - at;
       at += n) {
    if (cancelled()) {
      r.stopped_by = StopReason::cancelled;  // with no pending token: the prompt is not all in
      r.prompt_tokens = int(at);    // what went in
      r.prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      return r;
    }
    step(prefill_what, [&] { engine.feed(stream, prompt.subspan(at, n), images); });
  }
  int32_t next = step(prefill_what, [&] { return engine.prefill(stream, prompt.subspan(at), images); });
  r.prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  TextStream text(tok, opt.stop);
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    if (on_text) on_text(piece);
    r.text += piece;
  };

  std::optional<Speculator> speculator;
  const uint32_t draft_max = opt.draft_max < 0 ? engine.config().draft_max : uint32_t(opt.draft_max);
  if (draft && draft_max > 0 && engine.verify_rows() > 1 && !engine.constrained(stream) && !opt.sampling.logprobs)
    speculator.emplace(engine, stream, *draft, draft_max, uint32_t(std::max(opt.draft_min, 0)));
  // Tokens a verify pass gave past `next` (fed up to the last, which is not),
  // and the position `next` is fed at: where the stream goes back to if the
  // answer stops before it reaches them.
  std::vector<int32_t> ahead;
  size_t ahead_at = 0;
  uint32_t next_pos = engine.position(stream);

  t0 = Clock::now();
  r.stopped_by = StopReason::length_limit;
  while (r.generated < opt.max_tokens) {
    if (next == tok.eos_id()) { r.stopped_by = StopReason::end_of_sequence; break; }
    if (next == tok.end_of_turn_id()) { r.stopped_by = StopReason::end_of_turn; break; }
    if (cancelled()) { r.stopped_by = StopReason::cancelled; break; }
    ++r.generated;
    emit(text.push(next));
    if (text.stopped()) { r.stopped_by = StopReason::stop_string; break; }
    if (r.generated == opt.max_tokens) break;
    if (ahead_at < ahead.size()) {
      next = ahead[ahead_at++];
      ++next_pos;
      continue;
    }
    if (engine.position(stream) >= engine.context_limit()) { r.stopped_by = StopReason::context_full; break; }
    const std::string what = "decode step " + std::to_string(r.generated) + " of " + std::to_string(opt.max_tokens) +
                             " at position " + std::to_string(engine.position(stream));
    if (speculator) {
      ahead = step(what, [&] { return speculator->next(next); });
      next = ahead[0];
      ahead_at = 1;
    } else {
      next = step(what, [&] {
        if (stream == 0) return engine.decode(next);
        const StreamToken row[] = {{stream, next}};
        return engine.decode(row)[0];
      });
    }
    ++next_pos;
  }
  // `next` is not fed: tokens a verify pass fed after it go.
  if (engine.position(stream) > next_pos) engine.rewind(stream, next_pos);
  r.pending = next;
  if (speculator) {
    r.drafted = speculator->stats().drafted;
    r.accepted = speculator->stats().accepted;
    r.verify_passes = speculator->stats().verify_passes;
  }
  emit(text.finish());
  r.decode_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace unicorn::text::detail

#endif  // UNICORN_DEFINE_HERE
