// The generator: one binary per deployment (configs/, unicorn_add_engine).
// UNICORN_DEPLOYMENT_HEADER / UNICORN_DEPLOYMENT name the compiled engine.
//
//   unicorn-gemma3-1b --model gemma-3-1b-it-q4_0.gguf --chat -p "Why is the sky blue?"
//   unicorn-gemma3-1b --model DIR --tokens 2,94,2245 --logits-out logits.f32
//   unicorn-gemma3-1b --layout
//   unicorn-gemma3-27b-phoenix-ffn-gtt --placement
//
// Exit codes: 0 success; 1 a run-time error (bad file, device, context);
// 2 bad command line. Errors are one line on stderr.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>
#include <unistd.h>

#include UNICORN_DEPLOYMENT_HEADER
#include "unicorn/layout/print.hpp"
#include "unicorn/placement/print.hpp"
#include "unicorn/text/chat_session.hpp"
#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/generate.hpp"
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

std::string read_all(std::istream& in) {
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Ctrl-C during an answer stops that answer, not the program.
std::atomic<bool> g_interrupt{false};
extern "C" void on_sigint(int) { g_interrupt = true; }

// Multi-turn chat on standard input: the KV cache is kept across turns.
int chat_loop(Engine& engine, const unicorn::text::Tokenizer& tok, const std::string& system,
              const unicorn::text::GenerateOptions& opt) {
  std::signal(SIGINT, on_sigint);
  unicorn::text::ChatSession session(engine.core(), tok, system);
  std::fprintf(stderr, "chat: type a message; /reset starts over, /quit or Ctrl-D ends; Ctrl-C "
                       "stops an answer\n");
  std::string line;
  while (true) {
    std::cout << "\n> " << std::flush;
    g_interrupt = false;
    if (!std::getline(std::cin, line)) break;
    if (line == "/quit") break;
    if (line == "/reset") {
      session.reset();
      continue;
    }
    if (line.empty()) continue;
    try {
      const auto r = session.answer(line, opt, [](std::string_view s) { std::cout << s << std::flush; },
                                    &g_interrupt);
      std::cout << std::endl;
      std::fprintf(stderr, "[%d tokens, %.1f tokens/s%s; context %u/%u]\n", r.generated,
                   r.generated / std::max(r.decode_seconds, 1e-9),
                   r.stopped_by == "cancelled" ? ", stopped" : "", engine.position(),
                   engine.core().context_limit());
    } catch (const unicorn::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }
  return 0;
}

void progress_bar(uint64_t done, uint64_t total) {
  static int shown = -1;
  const int pct = total ? int(100 * done / total) : 100;
  if (pct == shown || !isatty(2)) return;  // redraw only when it changes, only on a terminal
  shown = pct;
  const int width = 30, filled = width * pct / 100;
  std::fprintf(stderr, "\rloading [%.*s%*s] %3d%%", filled, "==============================",
               width - filled, "", pct);
  if (done == total) std::fputc('\n', stderr);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{std::string(UNICORN_BINARY_NAME) + ": Gemma 3 on Vulkan (" +
               std::string(Engine::kConfig.model.name) + ", context up to " +
               std::to_string(Engine::kConfig.max_context) + " tokens)"};
  std::string model, prompt, prompt_file, tokens, logits_out, tokenizer;
  std::vector<std::string> stop;
  int n_predict = 256;
  uint32_t ctx = Engine::kConfig.max_context;
  bool chat = false, show_layout = false, show_placement = false, interactive = false;
#ifdef UNICORN_START_INTERACTIVE
  interactive = true;
#endif
  std::string system_prompt;
  unicorn::SamplingParams sp{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
  std::optional<uint32_t> seed;
  app.add_option("-m,--model", model, "GGUF file or Hugging Face directory (default: the built-in demo model, where compiled in)");
  app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("-f,--file", prompt_file, "read the prompt from a file ('-': standard input)");
  app.add_flag("--chat", chat, "wrap the prompt in Gemma's chat template (a user turn)");
  app.add_flag("-i,--interactive", interactive, "multi-turn chat on standard input");
  app.add_option("--system", system_prompt, "system prompt (chat)");
  app.add_option("-n,--n-predict", n_predict, "most tokens to generate")->capture_default_str()->check(CLI::Range(1, 1 << 30));
  app.add_option("--temp", sp.temperature, "temperature; 0 is greedy")->capture_default_str()->check(CLI::Range(0.0f, 100.0f));
  app.add_option("--top-k", sp.top_k, "keep the k most likely tokens; 0 is off")->capture_default_str();
  app.add_option("--top-p", sp.top_p, "keep the smallest set with this much probability; 1 is off")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--min-p", sp.min_p, "drop tokens below min-p times the top probability; 0 is off")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--repeat-penalty", sp.repeat_penalty, "penalty for the last --repeat-last-n tokens; 1 is off")->capture_default_str();
  app.add_option("--repeat-last-n", sp.repeat_last_n, "tokens the penalty looks back on")->capture_default_str()->check(CLI::Range(0u, unicorn::detail::kMaxPenaltyHistory));
  app.add_option("--seed", seed, "random seed (default: random; printed)");
  app.add_option("--stop", stop, "stop when this text appears (repeatable)");
  app.add_option("-c,--ctx", ctx, "context length in tokens")->capture_default_str()->check(CLI::Range(1u, Engine::kConfig.max_context));
  app.add_option("--tokenizer", tokenizer, "tokenizer.json or GGUF to use instead of the model's own");
  app.add_option("--tokens", tokens, "teacher forcing: comma-separated token ids");
  app.add_option("--logits-out", logits_out, "with --tokens: write every position's logits (float32 LE, one row of vocab values per token)");
  app.add_flag("--layout", show_layout, "print the compile-time layout and exit");
  app.add_flag("--placement", show_placement, "print the compile-time bytes per memory pool and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "%s: %s (see --help)\n", UNICORN_BINARY_NAME, e.what());
    return 2;
  }

  try {
    if (show_layout) {
      unicorn::print_layout(std::cout, Engine::kConfig, Engine::kLayout.view());
      return 0;
    }
    if (show_placement) {
      unicorn::print_placement(std::cout, Engine::kConfig, Engine::kBudget);
      return 0;
    }
    if (!logits_out.empty() && tokens.empty()) throw unicorn::Error("--logits-out needs --tokens");
    if (model.empty()) {
#ifdef UNICORN_DEFAULT_MODEL
      model = UNICORN_DEFAULT_MODEL;
      if (tokenizer.empty()) tokenizer = UNICORN_DEFAULT_TOKENIZER;
      std::fprintf(stderr, "%s: no --model given: running the built-in demo model, %s; give --model for a "
                           "real Gemma 3 file.\n", UNICORN_BINARY_NAME, UNICORN_DEFAULT_MODEL_ABOUT);
#else
      throw unicorn::Error("--model is required (a GGUF file or a Hugging Face directory); "
                           "unicorn-generate runs a built-in demo model without one");
#endif
    }
    if (!prompt_file.empty()) {
      if (!prompt.empty()) throw unicorn::Error("give --prompt or --file, not both");
      if (prompt_file == "-") {
        prompt = read_all(std::cin);
      } else {
        std::ifstream f(prompt_file, std::ios::binary);
        if (!f) throw unicorn::Error(prompt_file + ": cannot read the prompt file");
        prompt = read_all(f);
      }
    } else if (prompt.empty() && tokens.empty() && !interactive && !isatty(0)) {
      prompt = read_all(std::cin);
    }
    if (prompt.empty() && tokens.empty() && !interactive)
      throw unicorn::Error("no prompt: give --prompt, --file or text on standard input");

    const auto t0 = Clock::now();
    Engine engine;
    engine.core().set_context_limit(ctx);
    const auto report = engine.load(model, progress_bar);
    const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::fprintf(stderr, "loaded %s (%s, %.1f MiB) in %.2f s on %s\n", model.c_str(),
                 report.format.c_str(), report.bytes / 1048576.0, load_s,
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

    if (!seed) seed = std::random_device{}();
    sp.seed = *seed;
    engine.set_sampling(sp);
    const auto tok = tokenizer_for(model, tokenizer);
    if (interactive) return chat_loop(engine, tok, system_prompt, {.max_tokens = n_predict, .stop = stop});
    std::vector<unicorn::text::ChatMessage> turn;
    if (!system_prompt.empty()) turn.push_back({"system", system_prompt});
    turn.push_back({"user", prompt});
    const auto ids = chat ? tok.encode(unicorn::text::render_chat(turn, true))
                          : tok.encode(prompt, /*add_bos=*/true);
    if (ids.size() >= ctx)
      throw unicorn::Error("the prompt is " + std::to_string(ids.size()) +
                           " tokens; the context holds " + std::to_string(ctx) +
                           " (raise --ctx, up to " + std::to_string(Engine::kConfig.max_context) + ")");
    if (!chat) std::cout << prompt << std::flush;
    const auto r = unicorn::text::generate(
        engine.core(), tok, ids, {.max_tokens = n_predict, .stop = stop},
        [](std::string_view s) { std::cout << s << std::flush; });
    std::cout << std::endl;  // flushed before the stats line on stderr
    std::fprintf(stderr,
                 "load %.2f s; prompt %d tokens at %.1f tokens/s; generated %d tokens at %.1f "
                 "tokens/s (stopped: %s; seed %u)\n",
                 load_s, r.prompt_tokens, r.prompt_tokens / std::max(r.prefill_seconds, 1e-9),
                 r.generated, r.generated / std::max(r.decode_seconds, 1e-9), r.stopped_by.c_str(),
                 *seed);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", UNICORN_BINARY_NAME, e.what());
    return 1;
  }
}
