// The generator program: binaries of one deployment (configs/,
// unicorn_add_engine) or of several (unicorn-generate: every official size in
// the formats people download, engines.hpp), all sharing this code, which a
// build compiles once (unicorn_add_generator's object library); a binary's own
// translation unit (main.cpp, any_file.cpp) names its deployments and calls
// generate_main. With several, --model's file picks the one that runs it
// (engine/pick.hpp). The flags are parsed in flags.cpp (CLI11), and this file
// runs what they ask.
//
//   unicorn-generate --model gemma-3-27b-it-Q4_K_M.gguf -p "Why is the sky blue?"
//   unicorn-generate --engines
//   unicorn-gemma3-1b --model gemma-3-1b-it-q4_0.gguf --chat -p "Why is the sky blue?"
//   unicorn-gemma3-1b --model DIR --tokens 2,94,2245 --logits-out logits.f32
//   unicorn-gemma3-1b --layout
//   unicorn-gemma3-27b-phoenix-ffn-gtt --placement
//   unicorn-generate --model gemma-3-27b-it-q4_0.gguf --draft gemma-3-270m-it-q4_0.gguf -p "Why is the sky blue?"
//
// With --draft the engine is a speculative pair's (unicorn/gemma3.hpp's
// Gemma3_Pairs): the one whose model runs --model and whose draft runs
// --draft. Without it, an engine without a draft, as before.
//
// Exit codes: 0 success (also when the reader of standard output goes away,
// `| head`); 1 a run-time error (bad file, device, context, a write that
// failed); 2 bad command line; 130 stopped by SIGINT (Ctrl-C), 143 by SIGTERM:
// after the token being generated and the timings line, between two passes of
// the prompt, or between two tensors of the load, with a line that says so.
// Errors are one line on stderr.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <unistd.h>
#include <variant>

#include "../pick_pair.hpp"
#include "flags.hpp"
#include "program.hpp"
#include "model_tokenizer.hpp"
#include "ollama_env.hpp"
#include "program_exit.hpp"
#include "tuning_env.hpp"
#include "unicorn/engine.hpp"
#include "unicorn/engine/check_tensors.hpp"
#include "unicorn/engine/pick.hpp"
#include "unicorn/generation/chat_session.hpp"
#include "unicorn/generation/generate.hpp"
#include "unicorn/io/file_output.hpp"
#include "unicorn/layout/placement_print.hpp"
#include "unicorn/layout/print.hpp"
#include "unicorn/text/chat_template.hpp"
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

// SIGINT (Ctrl-C) and SIGTERM stop the run at the next point that can stop:
// a load between tensors, a prompt between passes, an answer after the token
// being made. Ctrl-C in the chat stops that answer and the chat takes the next
// message; otherwise the run says what stopped it and exits 128 + the signal.
// A second signal before that ends the process at once, its temporary files
// (--logits-out's) removed.
std::atomic<bool> g_interrupt{false};
std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int sig) {
  if (g_interrupt.exchange(true)) {
    unicorn::io::remove_open_temporaries();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
}
// Catches the next SIGINT and SIGTERM with on_stop_signal. `interrupt_reads`:
// a read from the terminal that is waiting when one comes fails (no
// SA_RESTART), so the chat's prompt sees it and leaves; otherwise the read goes on.
void catch_stop_signals(bool interrupt_reads) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = interrupt_reads ? 0 : SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}
// What a signal stopped, for the exit: thrown where the run stops (the load's
// progress, between steps), caught by generate_main.
struct Stopped : std::exception {
  std::string during;
  explicit Stopped(std::string d) : during(std::move(d)) {}
};
void stop_if_signalled(const char* during) {
  if (g_interrupt) throw Stopped(during);
}
const char* signal_words(int sig) { return sig == SIGTERM ? "terminated (SIGTERM)" : "interrupted (SIGINT)"; }
int signal_status(int sig) { return 128 + (sig ? sig : SIGINT); }  // as a shell reports a process a signal ended

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
// An image file's bytes (decoded later, by the engine, within its limits);
// an error naming the file where it cannot be read whole.
std::string read_image_file(const std::string& path) {
  constexpr std::uintmax_t kMaxImageFileBytes = 256u << 20;  // no photo a user sends is near it
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw unicorn::Error(path + ": cannot read the image (" + ec.message() + ")");
  if (size > kMaxImageFileBytes)
    throw unicorn::Error(path + ": " + std::to_string(size >> 20) + " MiB is past the " +
                         std::to_string(kMaxImageFileBytes >> 20) + " MiB an image file may have");
  std::ifstream in(path, std::ios::binary);
  std::string bytes(size, '\0');
  if (!in || !in.read(bytes.data(), std::streamsize(size)))
    throw unicorn::Error(path + ": cannot read the image");
  return bytes;
}

// How the draft did, where one drafted: the drafted tokens the model took,
// and the tokens each verify pass gave (those it took and its own).
std::string draft_words(const unicorn::text::GenerateResult& r) {
  char line[160];
  std::snprintf(line, sizeof line, "%d of %d drafted tokens accepted (%.0f %%), %.2f tokens per verify pass (%d passes)",
                r.accepted, r.drafted, r.drafted ? 100.0 * r.accepted / r.drafted : 0.0,
                r.verify_passes ? double(r.accepted + r.verify_passes) / r.verify_passes : 0.0, r.verify_passes);
  return line;
}

int chat_loop(AnyEngine& engine, const std::string& system, unicorn::text::GenerateOptions opt) {
  auto session = engine.chat(system);
  opt.cancel = &g_interrupt;
  std::fprintf(stderr, "chat: type a message; %s/reset starts over, /quit, Ctrl-D or Ctrl-C at the prompt "
                       "ends; Ctrl-C stops an answer\n",
               engine.sees_images() ? "/image PATH shows the next message an image, " : "");
  while (true) {
    print("\n");
    if (g_signal == SIGTERM) {  // the answer it stopped is closed
      std::fprintf(stderr, "%s\n", signal_words(SIGTERM));
      return signal_status(SIGTERM);
    }
    g_interrupt = false;
    catch_stop_signals(/*interrupt_reads=*/true);  // Ctrl-C at the prompt leaves the chat
    const std::optional<std::string> read = read_line("> ");
    if (!read) {
      print("\n");
      if (g_signal == SIGTERM) return signal_status(SIGTERM);
      break;
    }
    const std::string& line = *read;
    catch_stop_signals(/*interrupt_reads=*/false);  // from here, Ctrl-C stops the answer
    if (line == "/quit") break;
    if (line == "/reset") {
      session.reset();
      continue;
    }
    if (line.starts_with("/image")) {  // as llama.cpp's mtmd CLI: the next message is about it
      std::string path = line.substr(6);
      path.erase(0, path.find_first_not_of(" \t"));
      path.erase(path.find_last_not_of(" \t") + 1);
      try {
        if (path.empty()) throw unicorn::Error("/image PATH: name an image file");
        if (!engine.sees_images()) (void)engine.encode_images({});  // names why it cannot
        opt.images.push_back(read_image_file(path));
        std::fprintf(stderr, "%s: the next message is about it (%zu image%s)\n", path.c_str(), opt.images.size(),
                     opt.images.size() == 1 ? "" : "s");
      } catch (const unicorn::Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
      }
      continue;
    }
    if (line.empty()) continue;
    try {
      const auto r = session.answer(line, opt, print);
      opt.images.clear();
      print("\n");
      std::fprintf(stderr, "[%d tokens, %.1f tokens/s%s; context %u/%u%s%s]\n", r.generated,
                   r.generated / std::max(r.decode_seconds, 1e-9),
                   r.stopped_by == unicorn::text::StopReason::cancelled ? ", stopped" : "", engine.position(),
                   engine.context_limit(), engine.has_draft() ? "; draft: " : "",
                   engine.has_draft() ? draft_words(r).c_str() : "");
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
  stop_if_signalled("while loading");
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
  auto parsed = unicorn::generate::parse_generate_flags(argc, argv, engines, program);  // flags.cpp
  if (const int* exit_status = std::get_if<int>(&parsed)) return *exit_status;
  auto& flags = std::get<unicorn::generate::GenerateFlags>(parsed);
  if (flags.gpu_layers)
    std::fprintf(stderr, "%s: -ngl %d ignored: every layer runs on the GPU, placed when the engine was compiled\n",
                 name, *flags.gpu_layers);
  if (flags.threads) std::fprintf(stderr, "%s: -t %d ignored: no inference work runs on the CPU\n", name, *flags.threads);
  // A reader that goes away (`| head`) is a failed write we handle, not a signal.
  std::signal(SIGPIPE, SIG_IGN);
  catch_stop_signals(/*interrupt_reads=*/false);

  try {
    if (flags.show_engines) {
      std::string list;
      for (const CompiledDeployment& e : engines) list += unicorn::examples::engine_words(e) + "\n";
      return unicorn::tools::print_and_finish(name, list);
    }
    // The engine that runs --model (the first one without: the built-in demo
    // model's, where there is one; with --draft, the pair that runs both
    // files); --layout and --placement show it.
    size_t chosen = 0;
    if (!flags.model.empty()) flags.model = unicorn::tools::resolve_model_path(flags.model);  // ollama:NAME -> the blob in Ollama's store
    if (!flags.draft.empty()) flags.draft = unicorn::tools::resolve_model_path(flags.draft);
    const std::string model_to_pick = flags.model.empty() && !flags.draft.empty() && program.default_model
                                          ? std::string(program.default_model)
                                          : flags.model;
    if (!model_to_pick.empty() && engines.size() > 1) chosen = unicorn::examples::pick_for(engines, model_to_pick, flags.draft, name);
    const CompiledDeployment& deployment = engines[chosen];
    const DeploymentConfig& config = deployment.config;
    if (flags.show_layout || flags.show_placement) {
      if (engines.size() > 1 && !flags.model.empty())  // which engine the file picked, as a run says it
        std::fprintf(stderr, "%s: engine %s%s\n", name, unicorn::engine_text(deployment).c_str(),
                     unicorn::held_embedding_words(deployment, flags.model).c_str());
      std::ostringstream text;
      if (flags.show_layout && !model_to_pick.empty()) unicorn::print_layout_for_file(text, deployment, model_to_pick);
      else if (flags.show_layout) unicorn::print_layout(text, config, deployment.layout);
      else unicorn::print_placement(text, config, deployment.budget);
      return unicorn::tools::print_and_finish(name, text.str());
    }
    if (flags.ctx && *flags.ctx > config.max_context) {
      std::fprintf(stderr, "%s: -c %u: engine %s is compiled for a context of 1 to %u tokens; "
                           "-c may lower it, never raise it (see --help)\n",
                   name, *flags.ctx, std::string(config.model.name).c_str(), config.max_context);
      return 2;
    }
    const uint32_t context = flags.ctx.value_or(config.context_by_default());
    if (!flags.logits_out.empty() && flags.tokens.empty()) throw unicorn::Error("--logits-out needs --tokens");
    if (flags.model.empty()) {
      if (!program.default_model)
        throw unicorn::Error("--model is required (a GGUF file or a Hugging Face directory); "
                             "unicorn-generate runs a built-in demo model without one");
      flags.model = program.default_model;
      if (flags.tokenizer.empty()) flags.tokenizer = program.default_tokenizer;
      std::fprintf(stderr, "%s: no --model given: running the built-in demo model, %s; give --model for a "
                           "real Gemma 3 file.\n", name, program.default_model_about);
    } else if (engines.size() > 1) {
      std::fprintf(stderr, "%s: engine %s%s\n", name, unicorn::engine_text(deployment).c_str(),
                   unicorn::held_embedding_words(deployment, flags.model).c_str());
    }
    if (!flags.prompt_file.empty()) {
      if (!flags.prompt.empty()) throw unicorn::Error("give --prompt or --file, not both");
      if (flags.prompt_file == "-") {
        flags.prompt = read_all(std::cin);
      } else {
        std::ifstream f(flags.prompt_file, std::ios::binary);
        if (!f) throw unicorn::Error(flags.prompt_file + ": cannot read the prompt file");
        flags.prompt = read_all(f);
      }
    } else if (flags.prompt.empty() && flags.tokens.empty() && !flags.interactive && !isatty(0)) {
      flags.prompt = read_all(std::cin);
    }
    if (flags.prompt.empty() && flags.tokens.empty() && !flags.interactive)
      throw unicorn::Error("no prompt: give --prompt, --file or text on standard input");

    const auto ids_forced =
        flags.tokens.empty() ? std::vector<int32_t>{} : unicorn::generate::parse_token_ids(flags.tokens);
    // Opened now, so that an unwritable path is refused before the model is
    // loaded and run; written whole or not at all once the logits are in.
    std::optional<unicorn::io::AtomicFile> logits_file;
    if (!flags.logits_out.empty()) logits_file.emplace(flags.logits_out);
    const auto t0 = Clock::now();
    unicorn::tools::inject_faults_from_env();
    unicorn::gpu::Context device(unicorn::tools::device_from_env());
    if (flags.max_device_memory) device.limit_memory(*flags.max_device_memory);
    stop_if_signalled("while opening the device");
    AnyEngine engine(device, deployment,
                     unicorn::tools::engine_options_from_env({.context = context, .products = flags.products}));
    if (ids_forced.empty())  // --tokens needs none
      flags.tokenizer = unicorn::tools::tokenizer_for_model(flags.model, flags.tokenizer, program.default_tokenizer);
    // Read before the model loads, so that a missing image fails at once.
    std::vector<std::string> images;
    for (const std::string& path : flags.images) images.push_back(read_image_file(path));
    const auto report = engine.load(
        flags.model,
        {.tokenizer = flags.tokenizer, .progress = progress_bar, .mmproj = flags.mmproj, .draft = flags.draft});
    stop_if_signalled("while loading");
    const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::fprintf(stderr, "loaded %s (%s, %.1f MiB) in %.2f s on %s\n", flags.model.c_str(),
                 report.format.c_str(), report.bytes / 1048576.0, load_s,
                 engine.context().info().name.c_str());
    const auto memory = engine.device_memory();
    std::fprintf(stderr, "device memory %.2f MiB: KV cache %.2f MiB, %u positions per stream\n",
                 memory.device() / 1048576.0, memory.kv_cache() / 1048576.0, engine.context_size());
    if (engine.sees_images()) std::fprintf(stderr, "image encoder from %s\n", engine.vision_source().c_str());
    if (engine.has_draft()) {
      if (flags.draft_max && uint32_t(*flags.draft_max) > config.draft_max)
        throw unicorn::Error("--draft-max " + std::to_string(*flags.draft_max) + ": this pair's verify pass is compiled for " +
                             std::to_string(config.draft_max) + " drafted tokens at most");
      std::fprintf(stderr, "draft %s (%s), up to %d tokens a round\n", flags.draft.c_str(),
                   std::string(engine.draft()->config().model.name).c_str(),
                   flags.draft_max.value_or(int(config.draft_max)));
    }
    if (!images.empty() && !engine.sees_images())
      (void)engine.encode_images(images);  // names why this engine reads no images
    if (flags.check_tensors) {
      const auto c = engine.check_tensors();
      std::fprintf(stderr, "check-tensors: %zu tensors (%.1f MiB) hold no NaN or Inf (%.3f s)\n", c.tensors,
                   c.bytes / 1048576.0, c.seconds);
    }

    if (!flags.tokens.empty()) {
      const auto& ids = ids_forced;
      const auto logits = engine.forward_logits(ids);
      stop_if_signalled("while running the tokens");
      // Logits that are not finite are a model that computes nothing (a weight
      // of NaN: --check-tensors names it), never a result to hand on.
      const auto bad = std::find_if(logits.begin(), logits.end(), [](float x) { return !std::isfinite(x); });
      if (bad != logits.end()) {
        const size_t at = size_t(bad - logits.begin());
        throw unicorn::Error("the logits at position " + std::to_string(at / config.model.vocab) + " (token " +
                             std::to_string(at % config.model.vocab) + ") are " + (std::isnan(*bad) ? "NaN" : "infinite") +
                             ": the model's weights or the device computed no number there (--check-tensors "
                             "scans the weights)" + (logits_file ? "; " + flags.logits_out + " was not written" : ""));
      }
      if (logits_file) {
        logits_file->write(std::string_view(reinterpret_cast<const char*>(logits.data()), logits.size() * sizeof(float)));
        logits_file->commit();
      }
      std::fprintf(stderr, "%zu positions x %u logits%s%s\n", ids.size(), config.model.vocab,
                   flags.logits_out.empty() ? "" : " written to ", flags.logits_out.c_str());
      return 0;
    }

    std::optional<uint32_t>& seed = flags.sampling.seed;
    if (!seed) seed = std::random_device{}();
    flags.sampling.params.seed = *seed;
    const unicorn::text::GenerateOptions request{.max_tokens = flags.n_predict,
                                                 .stop = flags.stop,
                                                 .sampling = flags.sampling.params,
                                                 .cancel = &g_interrupt,
                                                 .images = images,
                                                 .draft_max = flags.draft_max.value_or(-1),
                                                 .draft_min = flags.draft_min};
    unicorn::tools::require_tokenizer(engine, flags.model);  // a model without a vocabulary fails here
    engine.tokenizer();
    if (flags.interactive) return chat_loop(engine, flags.system_prompt, request);
    if (!flags.chat && images.empty()) {  // the prompt is echoed, so it is checked first
      const size_t n = engine.tokenizer().encode(flags.prompt, /*add_bos=*/true).size();
      if (n >= context)
        throw unicorn::Error("the prompt is " + std::to_string(n) + " tokens; the context holds " +
                             std::to_string(context) + " (raise --ctx, up to " + std::to_string(config.max_context) + ")");
      print(flags.prompt);
    }
    const auto r = flags.chat ? engine.chat(flags.system_prompt).answer(flags.prompt, request, print)
                              : engine.generate(flags.prompt, request, print);
    print("\n");  // out before the stats line on stderr
    const bool interrupted = r.stopped_by == unicorn::text::StopReason::cancelled;
    print_timings(load_s, r);
    if (engine.has_draft()) std::fprintf(stderr, "draft      %s\n", draft_words(r).c_str());
    const std::string stopped_by(unicorn::text::to_string(r.stopped_by));
    std::fprintf(stderr, "stopped: %s%s; seed %u\n", interrupted ? signal_words(g_signal) : stopped_by.c_str(),
                 interrupted && r.pending < 0 ? " during the prompt" : "", *seed);
    return interrupted ? signal_status(g_signal) : 0;
  } catch (const unicorn::io::StdoutClosed&) {
    return 0;  // the reader has what it wanted (`| head`)
  } catch (const Stopped& s) {
    std::fprintf(stderr, "%s: %s %s%s\n", name, signal_words(g_signal), s.during.c_str(),
                 flags.logits_out.empty() ? "" : ("; " + flags.logits_out + " was not written").c_str());
    return signal_status(g_signal);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}
