// The OpenAI-compatible server program: one binary per deployment
// (unicorn_add_server), all sharing this code, which a build compiles once; a
// binary's own translation unit (main.cpp) names its deployment, whose streams
// are the server's slots and whose context is each slot's. unicorn-server
// holds several (any_file.cpp: the demo model's, and every official size in
// the formats people download, and the speculative pairs): --model's file
// (and --draft's) picks the one that serves it (../pick_pair.hpp), as in
// unicorn-generate. With a draft, a slot generating alone takes speculative
// rounds (server/scheduler.hpp).
//
//   unicorn-server                                         # the built-in demo model on 127.0.0.1:8080
//   unicorn-server -m gemma-3-4b-it-Q4_K_M.gguf             # any official file; --engines lists them
//   unicorn-gemma3-27b-server -m gemma-3-27b-it-q4_0.gguf --port 8000 --api-key $KEY
//   unicorn-server -m gemma-3-27b-it-q4_0.gguf --draft gemma-3-270m-it-q4_0.gguf   # speculative rounds
//   curl http://127.0.0.1:8080/v1/chat/completions -d '{"messages":[{"role":"user","content":"Hi"}]}'
//
// Exit codes: 0 after SIGINT/SIGTERM once running requests ended (or after
// --engines, --layout); 1 a run-time error (bad file, no engine for it,
// device, port in use, a failed engine); 2 bad command line.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "../pick_pair.hpp"
#include "model_tokenizer.hpp"
#include "../generate/options.hpp"  // --max-device-memory, as the generator takes it
#include "program.hpp"
#include "ollama_env.hpp"
#include "program_exit.hpp"
#include "tuning_env.hpp"
#include "unicorn/engine.hpp"
#include "unicorn/engine/fit.hpp"
#include "unicorn/engine/pick.hpp"
#include "unicorn/io/file_output.hpp"
#include "unicorn/layout/print.hpp"
#include "unicorn/server/serve.hpp"

int unicorn::examples::serve_main(int argc, char** argv, std::span<const CompiledDeployment> engines,
                                  const ProgramInfo& program) {
  using Invariance = unicorn::server::BatchInvariance;
  using Overlap = unicorn::server::PrefillOverlap;
  const char* const name = program.name;
  const bool several = engines.size() > 1;
  // One engine: its slots and context are the flags' limits and defaults. Several:
  // those of the one the file picks, checked once it is picked.
  const std::string limit = several ? "the picked engine's compiled " : "the compiled ";
  const auto& first = engines.front().config;
  CLI::App app{several ? std::string(name) + ": an OpenAI-compatible server; serves a model file in the one of its " +
                             std::to_string(engines.size()) + " compiled engines that matches it (--engines lists them)"
                       : std::string(name) + ": an OpenAI-compatible server for " + std::string(first.model.name) +
                             " (" + std::to_string(first.streams) + " slots of " +
                             std::to_string(first.max_context) + " tokens, compiled in)"};
  std::string model, tokenizer, mmproj, draft;
  unicorn::server::ServerOptions opt;
  std::optional<uint32_t> slots, context;
  std::optional<uint64_t> max_device_memory;
  unsigned timeout = 60, grace = 30;
  bool quiet = false, no_webui = false, check_tensors = false, show_engines = false, show_layout = false;
  app.add_option("-m,--model", model, "GGUF file or Hugging Face directory (default: the built-in demo model, where compiled in)");
  app.add_option("--tokenizer", tokenizer, "tokenizer.json or GGUF to use instead of the model's own");
  app.add_option("--mmproj", mmproj,
                 "the image encoder's file (llama.cpp's mmproj GGUF) for image_url parts; default: the one "
                 "mmproj*.gguf beside the model");
  app.add_option("--draft,--model-draft", draft,
                 "speculative decoding: a smaller Gemma 3 of the model's vocabulary drafts for a slot generating "
                 "alone, checked in one pass; the text stays the model's token for token (docs/speculative.md)");
  app.add_option("--host", opt.host, "address to listen on")->capture_default_str();
  app.add_option("--port", opt.port, "port to listen on (0: any free port, printed)")->capture_default_str();
  app.add_option("--api-key", opt.api_key, "require 'Authorization: Bearer KEY' (not on /health and /metrics)");
  app.add_option("--cors-origin", opt.cors_origins,
                 "let scripts of this web origin call the server (e.g. https://app.example; '*' for any; "
                 "repeat for several); default: none");
  app.add_option("--parallel", slots, "(also -np) slots: requests decoded together, each with a KV cache of "
                                      "--ctx-size tokens (default: as many as the device's free memory holds, at "
                                      "most " + limit + (several ? "slots" : std::to_string(first.streams)) + ")");
  app.add_option("-c,--ctx-size", context, "tokens per slot, prompt and answer (at most " + limit +
                                               (several ? "context" : std::to_string(first.max_context)) + ")");
  app.add_option("--queue", opt.queue_limit, "requests that may wait for a slot; more get 503")->capture_default_str();
  app.add_option("--alias", opt.model_id, "the model's name in /v1/models and requests (default: the file's name)");
  app.add_option("--max-body", opt.max_body_bytes, "largest request body in bytes (413 past it)")->capture_default_str();
  app.add_option("--timeout", timeout, "seconds an idle connection stays open")->capture_default_str();
  app.add_option("--shutdown-grace", grace, "seconds running requests get after SIGINT/SIGTERM")->capture_default_str();
  unicorn::generate::add_memory_flag(app, max_device_memory);
  app.add_flag("--quiet", quiet, "no line per request on stderr");
  app.add_flag("--no-webui", no_webui, "no chat page at / (GET / and /index.html answer 404)");
  app.add_flag("--check-tensors", check_tensors, "after loading, scan every weight for NaN and Inf on the GPU");
  app.add_flag("--layout", show_layout, "print the compile-time layout of the engine that serves --model's file, and exit");
  if (several)
    app.add_flag("--engines", show_engines, "list the compiled engines a model file is matched against, and exit");
  app.add_option("--batch-invariance", opt.batch_invariance,
                 "which decode steps run the same kernels at any batch size, so that a request's text does not "
                 "depend on other traffic: 'deterministic' (steps holding a seeded or greedy request), 'always', "
                 "'off' (every step the fastest kernels for its size)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Invariance>{
          {"deterministic", Invariance::Deterministic},
          {"always", Invariance::Always},
          {"off", Invariance::Off}}))
      ->default_str("deterministic");
  app.add_option("--prefill-overlap", opt.prefill_overlap,
                 "decode steps while a prefill pass runs on the GPU's second queue (where it has one): 'one' "
                 "step beside each pass, then the next waits for it (the most tokens/s); 'all' steps until the "
                 "pass is done (the shortest inter-token latency); 'off': every step waits for the pass")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Overlap>{
          {"one", Overlap::OneStep}, {"all", Overlap::AllSteps}, {"off", Overlap::Off}}))
      ->default_str("one");
  auto args = unicorn::examples::llama_cpp_args(argc, argv, {{"-np", "--parallel"}});  // llama-server's spelling
  const auto usage_error = [&](const CLI::Error& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", name, e.what());
    return 2;
  };
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return unicorn::tools::exit_for(app, e, name);  // --help
    return usage_error(e);
  }
  if (show_engines) {
    std::string list;
    for (const CompiledDeployment& e : engines) list += unicorn::examples::engine_words(e) + "\n";
    return unicorn::tools::print_and_finish(name, list);
  }

  // Slots and context are compiled in; flags may lower them, never raise them.
  // With one engine that is checked before anything is read; with several,
  // against the one the file picks.
  const auto check_limits = [&](const CompiledDeployment& d) {
    const std::string whose = several ? "the engine that serves this file is" : "this server is";
    const auto compiled_for = [&](uint32_t n, const char* what, const char* argument) {
      return whose + " compiled for " + std::to_string(n) + " " + what +
             (several ? "" : std::string(" (") + argument + " of unicorn_add_server)") +
             "; a flag may lower that, never raise it";
    };
    if (slots && (*slots == 0 || *slots > d.config.streams))
      return usage_error(CLI::ValidationError(
          "--parallel", std::to_string(*slots) + ": " + compiled_for(d.config.streams, "slots", "STREAMS")));
    if (context && (*context < 2 || *context > d.config.max_context))
      return usage_error(CLI::ValidationError(
          "--ctx-size", std::to_string(*context) + ": " +
                            compiled_for(d.config.max_context, "tokens per slot", "CONTEXT")));
    return 0;
  };
  if (!several)
    if (const int status = check_limits(engines.front())) return status;
  const auto show_layout_of = [&](const CompiledDeployment& d) {
    std::ostringstream text;
    unicorn::print_layout(text, d.config, d.layout);
    return unicorn::tools::print_and_finish(name, text.str());
  };
  if (show_layout && model.empty()) return show_layout_of(engines.front());  // the demo model's, where there is one

  size_t chosen = 0;  // with no --model, the first engine: the built-in demo model's, where there is one
  const bool demo = model.empty() && program.default_model;
  try {
    if (model.empty()) {
      if (!program.default_model) throw unicorn::Error("--model is required (a GGUF file or a Hugging Face directory)");
      model = program.default_model;
      if (tokenizer.empty()) tokenizer = program.default_tokenizer;
    }
    if (opt.model_id.empty()) opt.model_id = std::filesystem::path(model).filename().replace_extension().string();
    if (!draft.empty()) draft = unicorn::tools::resolve_model_path(draft);
    if (!demo) model = unicorn::tools::resolve_model_path(model);  // ollama:NAME -> the blob in Ollama's store
    if (several && (!demo || !draft.empty())) chosen = unicorn::examples::pick_for(engines, model, draft, name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
  const CompiledDeployment& deployment = engines[chosen];
  if (several)
    if (const int status = check_limits(deployment)) return status;
  if (several && !demo)
    std::fprintf(stderr, "%s: engine %s%s\n", name, unicorn::examples::engine_words(deployment).c_str(),
                 unicorn::held_embedding_words(deployment, model).c_str());
  if (show_layout) {  // with the file's embedding format
    std::ostringstream text;
    try {
      unicorn::print_layout_for_file(text, deployment, model);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", name, e.what());
      return 1;
    }
    return unicorn::tools::print_and_finish(name, text.str());
  }
  if (demo)
    std::fprintf(stderr, "%s: no --model given: serving the built-in demo model, %s.\n", name,
                 program.default_model_about);
  opt.slots = slots.value_or(0);  // 0: as many as fit, chosen once the device is open
  opt.context = context.value_or(deployment.config.max_context);
  opt.idle_timeout = std::chrono::seconds(timeout);
  opt.shutdown_grace = std::chrono::seconds(grace);
  opt.log_requests = !quiet;
  opt.webui = !no_webui;

  try {
    std::optional<unicorn::gpu::Context> device;
    std::optional<AnyEngine> engine;
    return unicorn::server::serve(opt, [&] {
      std::fprintf(stderr, "%s: loading %s\n", name, model.c_str());
      unicorn::tools::inject_faults_from_env();
      device.emplace(unicorn::tools::device_from_env());
      if (max_device_memory) device->limit_memory(*max_device_memory);
      if (!opt.slots) {
        const unicorn::StreamsFit fit = unicorn::streams_that_fit(*device, deployment.config, opt.context);
        opt.slots = fit.streams;
        if (fit.fits)
          std::fprintf(stderr,
                       "%s: %u slot%s of %u tokens (%.1f MiB of KV cache each): as many as %.1f GiB of free device "
                       "memory holds, of the %u compiled (--parallel chooses)\n",
                       name, fit.streams, fit.streams == 1 ? "" : "s", opt.context,
                       fit.kv_bytes_per_stream / 1048576.0, fit.free_bytes / 1073741824.0, fit.compiled);
        else
          std::fprintf(stderr,
                       "%s: 1 slot of %u tokens: %.1f GiB of free device memory holds no slot with room to spare; "
                       "trying one (--parallel chooses, -c lowers the tokens a slot)\n",
                       name, opt.context, fit.free_bytes / 1073741824.0);
      }
      // The KV cache holds `context` positions for each of the slots.
      engine.emplace(*device, deployment,
                     unicorn::tools::engine_options_from_env({.context = opt.context, .streams = opt.slots}));
      const auto report = engine->load(
          model, {.tokenizer = unicorn::tools::tokenizer_for_model(model, tokenizer, program.default_tokenizer),
                  .mmproj = mmproj,
                  .draft = draft});
      unicorn::tools::require_tokenizer(*engine, model);
      engine->tokenizer();  // built now: a vocabulary that does not read fails before serving
      if (check_tensors) {
        const auto c = engine->check_tensors();
        std::fprintf(stderr, "%s: check-tensors: %zu tensors hold no NaN or Inf (%.3f s)\n", name,
                     c.tensors, c.seconds);
      }
      std::fprintf(stderr, "%s: loaded %s (%s, %.1f MiB) on %s\n", name, model.c_str(),
                   report.format.c_str(), report.bytes / 1048576.0, engine->context().info().name.c_str());
      if (engine->sees_images())
        std::fprintf(stderr, "%s: image encoder from %s\n", name, engine->vision_source().c_str());
      if (engine->has_draft())
        std::fprintf(stderr, "%s: draft %s (%s): a slot generating alone takes rounds of up to %u drafted tokens\n",
                     name, draft.c_str(), std::string(engine->draft()->config().model.name).c_str(),
                     deployment.config.draft_max);
      return unicorn::server::Model(*engine);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}
