// unicorn/text/generate.hpp — the text loop around an engine: feed a prompt,
// stream text as tokens come back, stop at <eos>, <end_of_turn>, a stop string
// or the token limit. Used by the generator and the chat; tokens are chosen on
// the GPU (EngineCore::set_sampling), only their ids come back.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "unicorn/engine/core.hpp"
#include "unicorn/gpu/device_error.hpp"
#include "unicorn/text/text_stream.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::text {

struct GenerateOptions {
  int max_tokens = 256;
  std::vector<std::string> stop;  // user stop strings (not printed)
};

struct GenerateResult {
  int prompt_tokens = 0;
  int generated = 0;          // tokens produced (the stop token not counted)
  double prefill_seconds = 0;
  double decode_seconds = 0;
  std::string text;           // what was streamed
  std::string stopped_by;     // "eos", "end_of_turn", "stop string", "limit", "cancelled"
  int32_t pending = -1;       // the last token produced, not yet fed to the model
};

// Appends `prompt` at the engine's current position and generates. `on_text`
// receives complete UTF-8 text as it becomes final; text that might be the
// start of a stop string is held back until it is known not to be.
inline GenerateResult generate(unicorn::detail::EngineCore& engine, const Tokenizer& tok,
                               std::span<const int32_t> prompt, const GenerateOptions& opt,
                               const std::function<void(std::string_view)>& on_text,
                               const std::atomic<bool>* cancel = nullptr) {
  using Clock = std::chrono::steady_clock;
  GenerateResult r;
  r.prompt_tokens = int(prompt.size());
  auto t0 = Clock::now();
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
  int32_t next = step("prefill of " + std::to_string(prompt.size()) + " prompt tokens at position " +
                          std::to_string(engine.position()),
                      [&] { return engine.prefill(prompt); });
  r.prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  TextStream stream(tok, opt.stop);
  auto emit = [&](const std::string& text) {
    on_text(text);
    r.text += text;
  };

  t0 = Clock::now();
  r.stopped_by = "limit";
  while (r.generated < opt.max_tokens) {
    if (next == tok.eos_id()) { r.stopped_by = "eos"; break; }
    if (next == tok.end_of_turn_id()) { r.stopped_by = "end_of_turn"; break; }
    if (cancel && cancel->load()) { r.stopped_by = "cancelled"; break; }
    ++r.generated;
    emit(stream.push(next));
    if (stream.stopped()) { r.stopped_by = "stop string"; break; }
    if (r.generated == opt.max_tokens) break;
    if (engine.position() >= engine.context_limit()) { r.stopped_by = "context full"; break; }
    next = step("decode step " + std::to_string(r.generated) + " of " + std::to_string(opt.max_tokens) +
                    " at position " + std::to_string(engine.position()),
                [&] { return engine.decode(next); });
  }
  r.pending = next;
  emit(stream.finish());
  r.decode_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace unicorn::text
