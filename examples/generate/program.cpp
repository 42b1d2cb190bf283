// The generator program: binaries of one deployment (configs/,
// unicorn_add_engine) or of several (unicorn-generate: every official size in
// the formats people download, engines.hpp), all sharing this code, which a
// build compiles once (unicorn_add_generator's object library); a binary's own
// translation unit (main.cpp, any_file.cpp) names its deployments and calls
// generate_main. With several, --model's file picks the one that runs it
// (engine/pick.hpp).
//
//   unicorn-generate --model gemma-3-27b-it-Q4_K_M.gguf -p "Why is the sky blue?"
//   unicorn-generate --engines
//   unicorn-gemma3-1b --model gemma-3-1b-it-q4_0.gguf --chat -p "Why is the sky blue?"
//   unicorn-gemma3-1b --model DIR --tokens 2,94,2245 --logits-out logits.f32
//   unicorn-gemma3-1b --layout
//   unicorn-gemma3-27b-phoenix-ffn-gtt --placement
//
// Exit codes: 0 success (also when the reader of standard output goes away,
// `| head`); 1 a run-time error (bad file, device, context, a write that
// failed); 2 bad command line; 130 stopped by SIGINT (Ctrl-C), after the token
// being generated and the timings line. Errors are one line on stderr.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <cstdlib>
#include <optional>
#include <unistd.h>

#include "options.hpp"
#include "program.hpp"
#include "ollama_env.hpp"
#include "tuning_env.hpp"
#include "unicorn/engine.hpp"
#include "unicorn/engine/check_tensors.hpp"
#include "unicorn/engine/pick.hpp"
#include "unicorn/io/file_output.hpp"
#include "unicorn/layout/print.hpp"
#include "unicorn/placement/print.hpp"
#include "unicorn/text/chat_session.hpp"
#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/generate.hpp"
#include "unicorn/text/load_tokenizer.hpp"
#ifdef UNICORN_HAVE_LIBEDIT
#include <editline/readline.h>  // last: its macros stay out of the other headers
#endif

namespace {

using unicorn::AnyEngine;
using unicorn::examples::ProgramInfo;
using Clock = std::chrono::steady_clock;

std::string read_all(std::istream& in) {
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Ctrl-C during an answer stops that answer at the next token (the chat then
// takes the next message; a one-shot generation prints its timings and exits
// 130). A second Ctrl-C before that ends the process at once.
std::atomic<bool> g_interrupt{false};
extern "C" void on_sigint(int) {
  g_interrupt = true;
  std::signal(SIGINT, SIG_DFL);
}
// Catches the next Ctrl-C with on_sigint. `interrupt_reads`: a read from the
// terminal that is waiting when it comes fails (no SA_RESTART), so the chat's
// prompt sees it and leaves; otherwise the read goes on.
void catch_sigint(bool interrupt_reads) {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = interrupt_reads ? 0 : SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
}

// Generated text, as it comes: a failed write ends the run (io::OutputError).
void print(std::string_view text) { unicorn::io::write_stdout(text); }

// One line of the chat's input, or nothing at its end (Ctrl-D) or on Ctrl-C.
// On a terminal, libedit gives line editing and a history (the arrow keys);
// from a pipe or a file, lines are read as they are.
std::optional<std::string> read_line(const char* prompt) {
#ifdef UNICORN_HAVE_LIBEDIT
  if (isatty(0) && isatty(1)) {
    static const bool initialised = [] {
      rl_catch_signals = 0;  // Ctrl-C reaches on_sigint, and readline returns
      return using_history(), true;
    }();
    (void)initialised;
    char* raw = readline(prompt);
    if (!raw || g_interrupt) {
      std::free(raw);
      return std::nullopt;
    }
    std::string line(raw);
    std::free(raw);
    if (!line.empty()) add_history(line.c_str());
    return line;
  }
#endif
  print(prompt);
  std::string line;
  if (!std::getline(std::cin, line) || g_interrupt) return std::nullopt;
  return line;
}

// Multi-turn chat on standard input: the KV cache is kept across turns.
int chat_loop(AnyEngine& engine, const std::string& system, unicorn::text::GenerateOptions opt) {
  auto session = engine.chat(system);
  opt.cancel = &g_interrupt;
  std::fprintf(stderr, "chat: type a message; /reset starts over, /quit, Ctrl-D or Ctrl-C at the prompt "
                       "ends; Ctrl-C stops an answer\n");
  while (true) {
    print("\n");
    g_interrupt = false;
    catch_sigint(/*interrupt_reads=*/true);  // Ctrl-C at the prompt leaves the chat
    const std::optional<std::string> read = read_line("> ");
    if (!read) {
      print("\n");
      break;
    }
    const std::string& line = *read;
    catch_sigint(/*interrupt_reads=*/false);  // from here, Ctrl-C stops the answer
    if (line == "/quit") break;
    if (line == "/reset") {
      session.reset();
      continue;
    }
    if (line.empty()) continue;
    try {
      const auto r = session.answer(line, opt, print);
      print("\n");
      std::fprintf(stderr, "[%d tokens, %.1f tokens/s%s; context %u/%u]\n", r.generated,
                   r.generated / std::max(r.decode_seconds, 1e-9),
                   r.stopped_by == "cancelled" ? ", stopped" : "", engine.position(),
                   engine.context_limit());
    } catch (const unicorn::io::OutputError&) {
      throw;  // standard output is gone: so is the chat
    } catch (const unicorn::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }
  return 0;
}

// The closing timings, one line each as llama.cpp prints them: prompt
// processing and generation are different speeds (the prompt goes through
// the GPU in chunks, each generated token alone), so neither is averaged in.
void print_timings(double load_s, const unicorn::text::GenerateResult& r) {
  const auto line = [](const char* what, int tokens, double seconds) {
    std::fprintf(stderr, "%-10s %6d tokens in %9.2f ms (%8.2f ms per token, %9.1f tokens/s)\n", what, tokens,
                 1e3 * seconds, tokens ? 1e3 * seconds / tokens : 0.0, tokens / std::max(seconds, 1e-9));
  };
  std::fprintf(stderr, "load       %.2f s\n", load_s);
  line("prompt", r.prompt_tokens, r.prefill_seconds);
  line("generation", r.generated, r.decode_seconds);
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

int unicorn::examples::generate_main(int argc, char** argv, std::span<const CompiledDeployment> engines,
                                     const ProgramInfo& program) {
  const char* const name = program.name;
  // -c is checked against the most any engine holds here, and again against
  // the one that runs the file once it is picked.
  uint32_t most_context = 0;
  for (const CompiledDeployment& e : engines) most_context = std::max(most_context, e.config.max_context);
  CLI::App app{engines.size() == 1
                   ? std::string(name) + ": Gemma 3 on Vulkan (" + std::string(engines[0].config.model.name) +
                         ", context up to " + std::to_string(most_context) + " tokens)"
                   : std::string(name) + ": Gemma 3 on Vulkan; runs a model file in the one of its " +
                         std::to_string(engines.size()) + " compiled engines that matches it (--engines lists them)"};
  std::string model, prompt, prompt_file, tokens, logits_out, tokenizer;
  std::vector<std::string> stop;
  int n_predict = 256;
  std::optional<uint32_t> ctx;
  bool chat = false, show_layout = false, show_placement = false, show_engines = false,
       interactive = program.start_interactive;
  std::string system_prompt;
  unicorn::generate::SamplingFlags sampling;
  std::optional<uint64_t> max_device_memory;
  bool check_tensors = false;
  app.add_option("-m,--model", model, "GGUF file or Hugging Face directory (default: the built-in demo model, where compiled in)");
  app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("-f,--file", prompt_file, "read the prompt from a file ('-': standard input)");
  app.add_flag("--chat", chat, "wrap the prompt in Gemma's chat template (a user turn)");
  app.add_flag("-i,--interactive,--conversation", interactive, "(also -cnv) multi-turn chat on standard input");
  bool one_shot = false;
  app.add_flag("--no-conversation", one_shot, "(also -no-cnv) one prompt, one answer: the default")->excludes("--interactive");
  app.add_option("--system,--system-prompt", system_prompt, "(also -sys) system prompt (chat)");
  app.add_option("-n,--n-predict", n_predict, "most tokens to generate")->capture_default_str()->check(CLI::Range(1, 1 << 30));
  unicorn::generate::add_sampling_flags(app, sampling);
  app.add_option("--stop", stop, "stop when this text appears (repeatable)");
  // The KV cache is allocated for this context (EngineOptions::context); the
  // compiled one is the most a binary holds.
  app.add_option("-c,--ctx,--ctx-size", ctx, "context length in tokens: the KV cache holds this many (default and "
                                             "most: the engine's compiled context, " + std::to_string(most_context) +
                                             (engines.size() == 1 ? ")" : " at most)"))
      ->check(CLI::Validator(
          [most_context](const std::string& v) -> std::string {
            const unsigned long n = std::strtoul(v.c_str(), nullptr, 10);
            if (n >= 1 && n <= most_context) return "";
            return v + " tokens: this binary is compiled for a context of 1 to " + std::to_string(most_context) +
                   " tokens; -c may lower it, never raise it";
          },
          "", "context"));
  // llama-cli's placement and CPU flags, taken so its command lines run here:
  // every layer is on the GPU (the deployment places them at compile time)
  // and no inference op runs on the CPU, so their values change nothing.
  std::optional<int> gpu_layers, threads;
  app.add_option("--n-gpu-layers,--gpu-layers", gpu_layers, "(also -ngl) accepted and ignored: every layer runs on the GPU");
  app.add_option("-t,--threads", threads, "accepted and ignored: no inference work runs on the CPU");
  app.add_option("--tokenizer", tokenizer, "tokenizer.json or GGUF to use instead of the model's own");
  app.add_option("--tokens", tokens, "teacher forcing: comma-separated token ids");
  app.add_option("--logits-out", logits_out, "with --tokens: write every position's logits (float32 LE, one row of vocab values per token)");
  app.add_flag("--layout", show_layout, "print the compile-time layout and exit");
  app.add_flag("--placement", show_placement, "print the compile-time bytes per memory pool and exit");
  if (engines.size() > 1)
    app.add_flag("--engines", show_engines, "list the compiled engines a model file is matched against, and exit");
  app.add_flag("--check-tensors", check_tensors, "after loading, scan every weight for NaN and Inf on the GPU");
  unicorn::Products products = unicorn::Products::by_scheme;
  unicorn::generate::add_products_flag(app, products);
  unicorn::generate::add_memory_flag(app, max_device_memory);
  try {
    auto args = unicorn::examples::llama_cpp_args(
        argc, argv, {{"-cnv", "--conversation"}, {"-no-cnv", "--no-conversation"}, {"-sys", "--system-prompt"},
                     {"-ngl", "--n-gpu-layers"}});
    app.parse(args);
    unicorn::generate::check_sampling_flags(sampling);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "%s: %s (see --help)\n", name, e.what());
    return 2;
  } catch (const unicorn::Error& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", name, e.what());
    return 2;
  }
  if (gpu_layers)
    std::fprintf(stderr, "%s: -ngl %d ignored: every layer runs on the GPU, placed when the engine was compiled\n",
                 name, *gpu_layers);
  if (threads) std::fprintf(stderr, "%s: -t %d ignored: no inference work runs on the CPU\n", name, *threads);
  // A reader that goes away (`| head`) is a failed write we handle, not a signal.
  std::signal(SIGPIPE, SIG_IGN);

  try {
    if (show_engines) {
      for (const CompiledDeployment& e : engines) std::cout << unicorn::engine_text(e) << "\n";
      unicorn::io::check_stdout();
      return 0;
    }
    // The engine that runs --model (the first one without: the built-in demo
    // model's, where there is one); --layout and --placement show it.
    size_t chosen = 0;
    if (!model.empty()) {
      model = unicorn::tools::resolve_model_path(model);  // ollama:NAME -> the blob in Ollama's store
      if (engines.size() > 1) chosen = unicorn::pick_engine(engines, model, name);
    }
    const CompiledDeployment& deployment = engines[chosen];
    const DeploymentConfig& config = deployment.config;
    if (show_layout) {
      unicorn::print_layout(std::cout, config, deployment.layout);
      unicorn::io::check_stdout();
      return 0;
    }
    if (show_placement) {
      unicorn::print_placement(std::cout, config, deployment.budget);
      unicorn::io::check_stdout();
      return 0;
    }
    if (ctx && *ctx > config.max_context) {
      std::fprintf(stderr, "%s: -c %u: engine %s is compiled for a context of 1 to %u tokens; "
                           "-c may lower it, never raise it (see --help)\n",
                   name, *ctx, std::string(config.model.name).c_str(), config.max_context);
      return 2;
    }
    const uint32_t context = ctx.value_or(config.max_context);
    if (!logits_out.empty() && tokens.empty()) throw unicorn::Error("--logits-out needs --tokens");
    if (model.empty()) {
      if (!program.default_model)
        throw unicorn::Error("--model is required (a GGUF file or a Hugging Face directory); "
                             "unicorn-generate runs a built-in demo model without one");
      model = program.default_model;
      if (tokenizer.empty()) tokenizer = program.default_tokenizer;
      std::fprintf(stderr, "%s: no --model given: running the built-in demo model, %s; give --model for a "
                           "real Gemma 3 file.\n", name, program.default_model_about);
    } else if (engines.size() > 1) {
      std::fprintf(stderr, "%s: engine %s\n", name, unicorn::engine_text(deployment).c_str());
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

    const auto ids_forced = tokens.empty() ? std::vector<int32_t>{} : unicorn::generate::parse_token_ids(tokens);
    const auto t0 = Clock::now();
    unicorn::tools::inject_faults_from_env();
    unicorn::gpu::Context device(unicorn::tools::device_from_env());
    if (max_device_memory) device.limit_memory(*max_device_memory);
    AnyEngine engine(device, deployment, unicorn::tools::engine_options_from_env({.context = context, .products = products}));
    const auto report = engine.load(model, {.tokenizer = tokenizer, .progress = progress_bar});
    const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::fprintf(stderr, "loaded %s (%s, %.1f MiB) in %.2f s on %s\n", model.c_str(),
                 report.format.c_str(), report.bytes / 1048576.0, load_s,
                 engine.context().info().name.c_str());
    const auto memory = engine.device_memory();
    std::fprintf(stderr, "device memory %.2f MiB: KV cache %.2f MiB, %u positions per stream\n",
                 memory.device() / 1048576.0, memory.kv_cache() / 1048576.0, engine.context_size());
    if (check_tensors) {
      const auto c = engine.check_tensors();
      std::fprintf(stderr, "check-tensors: %zu tensors (%.1f MiB) hold no NaN or Inf (%.3f s)\n", c.tensors,
                   c.bytes / 1048576.0, c.seconds);
    }

    if (!tokens.empty()) {
      const auto& ids = ids_forced;
      const auto logits = engine.forward_logits(ids);
      if (!logits_out.empty())
        unicorn::io::write_file(logits_out, std::string_view(reinterpret_cast<const char*>(logits.data()),
                                                             logits.size() * sizeof(float)));
      std::fprintf(stderr, "%zu positions x %u logits%s%s\n", ids.size(), config.model.vocab,
                   logits_out.empty() ? "" : " written to ", logits_out.c_str());
      return 0;
    }

    std::optional<uint32_t>& seed = sampling.seed;
    if (!seed) seed = std::random_device{}();
    sampling.params.seed = *seed;
    const unicorn::text::GenerateOptions request{
        .max_tokens = n_predict, .stop = stop, .sampling = sampling.params, .cancel = &g_interrupt};
    engine.tokenizer();  // a model without a vocabulary fails here
    if (interactive) return chat_loop(engine, system_prompt, request);
    if (!chat) {  // the prompt is echoed, so it is checked first
      const size_t n = engine.tokenizer().encode(prompt, /*add_bos=*/true).size();
      if (n >= context)
        throw unicorn::Error("the prompt is " + std::to_string(n) + " tokens; the context holds " +
                             std::to_string(context) + " (raise --ctx, up to " + std::to_string(config.max_context) + ")");
      print(prompt);
    }
    catch_sigint(/*interrupt_reads=*/false);
    const auto r = chat ? engine.chat(system_prompt).answer(prompt, request, print)
                        : engine.generate(prompt, request, print);
    print("\n");  // out before the stats line on stderr
    const bool interrupted = r.stopped_by == "cancelled";
    print_timings(load_s, r);
    std::fprintf(stderr, "stopped: %s; seed %u\n", interrupted ? "interrupted" : r.stopped_by.c_str(), *seed);
    return interrupted ? 130 : 0;  // 128 + SIGINT, as a shell reports a process Ctrl-C ended
  } catch (const unicorn::io::StdoutClosed&) {
    return 0;  // the reader has what it wanted (`| head`)
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}
