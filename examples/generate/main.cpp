// The generator: one binary per deployment (configs/, unicorn_add_engine).
// UNICORN_DEPLOYMENT_HEADER / UNICORN_DEPLOYMENT name the compiled engine.
//
//   unicorn-gemma3-1b --model gemma-3-1b-it-q4_0.gguf --prompt "Why is the sky blue?"
//   unicorn-gemma3-1b --model DIR --tokens 2,94,2245 --logits-out logits.f32
//   unicorn-gemma3-1b --layout
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include UNICORN_DEPLOYMENT_HEADER
#include "unicorn/layout/print.hpp"
#include "unicorn/text/load_tokenizer.hpp"

namespace {

using Engine = unicorn::Engine<UNICORN_DEPLOYMENT>;
using Clock = std::chrono::steady_clock;

std::vector<int32_t> parse_ids(const std::string& list) {
  std::vector<int32_t> ids;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      ids.push_back(int32_t(v));
    } catch (const std::exception&) {
      throw unicorn::Error("--tokens: '" + item + "' is not a token id (expected e.g. 2,94,2245)");
    }
  }
  if (ids.empty()) throw unicorn::Error("--tokens: no token ids given");
  return ids;
}

// The tokenizer travels with the model: inside a GGUF file, or tokenizer.json
// in a Hugging Face directory; --tokenizer overrides.
unicorn::text::Tokenizer tokenizer_for(const std::filesystem::path& model,
                                       const std::string& override_path) {
  if (!override_path.empty()) return unicorn::text::load_tokenizer(override_path);
  if (std::filesystem::is_directory(model)) return unicorn::text::load_tokenizer(model / "tokenizer.json");
  return unicorn::text::load_tokenizer(model);
}

void progress_bar(uint64_t done, uint64_t total) {
  const int width = 30, filled = total ? int(width * done / total) : width;
  std::fprintf(stderr, "\rloading [%.*s%*s] %3d%%", filled, "==============================",
               width - filled, "", total ? int(100 * done / total) : 100);
  if (done == total) std::fputc('\n', stderr);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{std::string(UNICORN_BINARY_NAME) + ": Gemma 3 on Vulkan (" +
               std::string(Engine::kConfig.model.name) + ")"};
  std::string model, prompt, tokens, logits_out, tokenizer;
  int n_predict = 64;
  bool show_layout = false;
  app.add_option("-m,--model", model, "GGUF file or Hugging Face directory");
  app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("--tokenizer", tokenizer, "tokenizer.json or GGUF file (default: the model's)");
  app.add_option("-n,--n-predict", n_predict, "tokens to generate")->capture_default_str();
  app.add_option("--tokens", tokens, "teacher-forced token ids, e.g. 2,94,2245");
  app.add_option("--logits-out", logits_out,
                 "with --tokens: write the logits of every position (float32 LE, one row of "
                 "vocab values per token)");
  app.add_flag("--layout", show_layout, "print the compile-time layout and exit");
  CLI11_PARSE(app, argc, argv);

  try {
    if (show_layout) {
      unicorn::print_layout(std::cout, Engine::kConfig, Engine::kLayout.view());
      return 0;
    }
    if (model.empty()) {
#ifdef UNICORN_DEFAULT_MODEL
      model = UNICORN_DEFAULT_MODEL;
      if (tokenizer.empty()) tokenizer = UNICORN_DEFAULT_TOKENIZER;
      std::fprintf(stderr,
                   "%s: no --model given: running the built-in demo model (Gemma 3 "
                   "architecture, %u layers, random weights, real Gemma 3 tokenizer). Its text "
                   "is noise by design; give --model for a real Gemma 3 file.\n",
                   UNICORN_BINARY_NAME, Engine::kConfig.model.layers);
#else
      throw unicorn::Error("--model is required (a GGUF file or a Hugging Face directory); "
                           "unicorn-generate runs a built-in demo model without one");
#endif
    }
    const auto t0 = Clock::now();
    Engine engine;
    const auto report = engine.load(model, progress_bar);
    std::fprintf(stderr, "loaded %s (%s, %.1f MiB) in %.2f s on %s\n", model.c_str(),
                 report.format.c_str(), report.bytes / 1048576.0,
                 std::chrono::duration<double>(Clock::now() - t0).count(),
                 engine.context().info().name.c_str());

    if (!tokens.empty()) {
      const auto ids = parse_ids(tokens);
      const auto logits = engine.forward_logits(ids);
      if (!logits_out.empty()) {
        std::ofstream f(logits_out, std::ios::binary);
        f.write(reinterpret_cast<const char*>(logits.data()), std::streamsize(logits.size() * 4));
        if (!f) throw unicorn::Error(logits_out + ": cannot write");
      }
      std::fprintf(stderr, "%zu positions x %u logits%s%s\n", ids.size(), Engine::kConfig.model.vocab,
                   logits_out.empty() ? "" : " written to ", logits_out.c_str());
      return 0;
    }

    const auto tok = tokenizer_for(model, tokenizer);
    const auto ids = tok.encode(prompt, /*add_bos=*/true);
    unicorn::text::StreamDecoder stream(tok);
    const auto p0 = Clock::now();
    int32_t next = engine.prefill(ids);
    const double prefill_s = std::chrono::duration<double>(Clock::now() - p0).count();
    std::cout << prompt << std::flush;
    const auto g0 = Clock::now();
    int generated = 0;
    for (; generated < n_predict; ++generated) {
      if (next == tok.eos_id() || next == tok.end_of_turn_id()) break;
      std::cout << stream.feed(next) << std::flush;
      if (generated + 1 == n_predict) break;
      next = engine.decode(next);
    }
    std::cout << stream.flush() << "\n";
    const double gen_s = std::chrono::duration<double>(Clock::now() - g0).count();
    std::fprintf(stderr, "prompt: %zu tokens, %.1f tokens/s; generation: %d tokens, %.1f tokens/s\n",
                 ids.size(), ids.size() / prefill_s, generated, generated / std::max(gen_s, 1e-9));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", UNICORN_BINARY_NAME, e.what());
    return 1;
  }
}
