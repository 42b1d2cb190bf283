// The generator's command line, parsed with CLI11 (flags.hpp's
// parse_generate_flags): the one translation unit of the generator program
// that instantiates CLI11's parser, so program.cpp compiles without it.
// llama-cli's spellings are taken with their meanings (-cnv, -sys, -ngl, -t).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "flags.hpp"
#include "options.hpp"
#include "program_exit.hpp"

std::variant<unicorn::generate::GenerateFlags, int> unicorn::generate::parse_generate_flags(
    int argc, char** argv, std::span<const CompiledDeployment> engines, const examples::ProgramInfo& program) {
  const char* const name = program.name;
  // -c is checked against the most any engine holds here, and again against
  // the one that runs the file once it is picked (program.cpp).
  uint32_t most_context = 0;
  for (const CompiledDeployment& e : engines) most_context = std::max(most_context, e.config.max_context);
  CLI::App app{engines.size() == 1
                   ? std::string(name) + ": Gemma 3 on Vulkan (" + std::string(engines[0].config.model.name) +
                         ", context up to " + std::to_string(most_context) + " tokens)"
                   : std::string(name) + ": Gemma 3 on Vulkan; runs a model file in the one of its " +
                         std::to_string(engines.size()) + " compiled engines that matches it (--engines lists them)"};
  GenerateFlags f;
  f.interactive = program.start_interactive;
  app.add_option("-m,--model", f.model, "GGUF file or Hugging Face directory (default: the built-in demo model, where compiled in)");
  app.add_option("-p,--prompt", f.prompt, "prompt text");
  app.add_option("-f,--file", f.prompt_file, "read the prompt from a file ('-': standard input)");
  app.add_flag("--chat", f.chat, "wrap the prompt in Gemma's chat template (a user turn)");
  app.add_flag("-i,--interactive,--conversation", f.interactive, "(also -cnv) multi-turn chat on standard input");
  bool one_shot = false;
  app.add_flag("--no-conversation", one_shot, "(also -no-cnv) one prompt, one answer: the default")->excludes("--interactive");
  app.add_option("--system,--system-prompt", f.system_prompt, "(also -sys) system prompt (chat)");
  app.add_option("-n,--n-predict", f.n_predict, "most tokens to generate")->capture_default_str()->check(CLI::Range(1, 1 << 30));
  add_sampling_flags(app, f.sampling);
  app.add_option("--stop", f.stop, "stop when this text appears (repeatable)");
  // The KV cache is allocated for this context (EngineOptions::context); the
  // compiled one is the most a binary holds.
  app.add_option("-c,--ctx,--ctx-size", f.ctx, "context length in tokens: the KV cache holds this many (default: "
                                               "the engine's, 32768 for Gemma 3 4B, 12B and 27B, or its whole "
                                               "context where shorter; most: the engine's compiled context, " +
                                               std::to_string(most_context) + (engines.size() == 1 ? ")" : " at most)"))
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
  app.add_option("--n-gpu-layers,--gpu-layers", f.gpu_layers, "(also -ngl) accepted and ignored: every layer runs on the GPU");
  app.add_option("-t,--threads", f.threads, "accepted and ignored: no inference work runs on the CPU");
  app.add_option("--tokenizer", f.tokenizer, "tokenizer.json or GGUF to use instead of the model's own");
  app.add_option("--image", f.images,
                 "an image (PNG, JPEG, BMP, GIF, WebP) the prompt is about; repeatable; each goes where the prompt "
                 "writes <start_of_image>, else all before it (Gemma 3 4B, 12B, 27B with their mmproj)");
  app.add_option("--mmproj", f.mmproj,
                 "the image encoder's file (llama.cpp's mmproj GGUF); default: the one mmproj*.gguf beside the model");
  app.add_option("--draft,--model-draft", f.draft,
                 "speculative decoding: a smaller Gemma 3 of the model's vocabulary drafts tokens that the model "
                 "checks in one pass; the text stays the model's token for token (docs/speculative.md)");
  app.add_option("--draft-max", f.draft_max,
                 "with --draft: the most tokens drafted a round (default: the pair's compiled bound; 0: no drafting)")
      ->check(CLI::Range(0, int(kMaxDraftTokens)));
  app.add_option("--draft-min", f.draft_min, "with --draft: the fewest tokens drafted a round (0: always --draft-max; more: the count follows the "
                 "guesses the last rounds kept)")
      ->capture_default_str()
      ->check(CLI::Range(0, int(kMaxDraftTokens)));
  app.add_option("--tokens", f.tokens, "teacher forcing: comma-separated token ids");
  app.add_option("--logits-out", f.logits_out, "with --tokens: write every position's logits (float32 LE, one row of vocab values per token)");
  app.add_flag("--layout", f.show_layout, "print the compile-time layout and exit");
  app.add_flag("--placement", f.show_placement, "print the compile-time bytes per memory pool and exit");
  if (engines.size() > 1)
    app.add_flag("--engines", f.show_engines, "list the compiled engines a model file is matched against, and exit");
  app.add_flag("--check-tensors", f.check_tensors, "after loading, scan every weight for NaN and Inf on the GPU");
  add_products_flag(app, f.products);
  add_memory_flag(app, f.max_device_memory);
  try {
    auto args = examples::llama_cpp_args(
        argc, argv, {{"-cnv", "--conversation"}, {"-no-cnv", "--no-conversation"}, {"-sys", "--system-prompt"},
                     {"-ngl", "--n-gpu-layers"}});
    app.parse(args);
    check_sampling_flags(f.sampling);
    // (Empty, it would read as no --tokens, and the prompt would come from standard input.)
    if (app.count("--tokens") && f.tokens.empty())
      throw CLI::ValidationError("--tokens", "is empty: give comma-separated token ids");
    if ((app.count("--draft-max") || app.count("--draft-min")) && f.draft.empty())
      throw CLI::ValidationError("--draft-max and --draft-min", "need --draft FILE, the draft model");
    if (f.draft_max && f.draft_min > *f.draft_max)
      throw CLI::ValidationError("--draft-min", std::to_string(f.draft_min) + " is more than --draft-max " +
                                                    std::to_string(*f.draft_max));
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return tools::exit_for(app, e, name);  // --help
    std::fprintf(stderr, "%s: %s (see --help)\n", name, e.what());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", name, e.what());
    return 2;
  }
  return f;
}
