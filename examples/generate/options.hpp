// The generator's flags that take numbers and lists from the command line, as
// CLI11 options: the sampling flags, --max-device-memory and --products. One
// definition for the generator (flags.cpp), its fuzz target
// (tests/fuzz/fuzz_cli_options.cpp) and, for --products, unicorn-bench, so
// what is fuzzed and benchmarked is what users run. The values they fill in,
// and --tokens' parser, are flags.hpp's (no CLI11).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "flags.hpp"
#include "unicorn/base/error.hpp"
#include "unicorn/config/sampling.hpp"
#include "unicorn/engine/options.hpp"
#include "unicorn/engine/step.hpp"

namespace unicorn::generate {

inline void add_sampling_flags(CLI::App& app, SamplingFlags& f) {
  SamplingParams& sp = f.params;
  app.add_option("--temp", sp.temperature, "temperature; 0 is greedy")->capture_default_str()->check(CLI::Range(0.0f, 100.0f));
  app.add_option("--top-k", sp.top_k, "keep the k most likely tokens; 0 is off")->capture_default_str();
  app.add_option("--top-p", sp.top_p, "keep the smallest set with this much probability; 1 is off")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--min-p", sp.min_p, "drop tokens below min-p times the top probability; 0 is off")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--repeat-penalty", sp.repeat_penalty, "penalty for the last --repeat-last-n tokens; 1 is off")->capture_default_str();
  app.add_option("--repeat-last-n", sp.repeat_last_n, "tokens the penalty looks back on")->capture_default_str()->check(CLI::Range(0u, unicorn::kMaxRepeatLastN));
  app.add_option("--seed", f.seed, "random seed (default: random; printed)");
}

// Throws unicorn::Error when the parsed flags are values the sampler refuses
// (CLI11's ranges let NaN through, and --top-p 0 or --repeat-penalty 0 are in range).
inline void check_sampling_flags(const SamplingFlags& f) {
  if (!sampling_params_valid(f.params))
    throw Error(sampling_params_rule());
}

// --max-device-memory: the most device memory the engine may take per heap
// (64M, 6G: binary units), checked at start-up against what the model needs.
inline void add_memory_flag(CLI::App& app, std::optional<uint64_t>& bytes) {
  app.add_option("--max-device-memory", bytes,
                 "the most device memory to use per heap (e.g. 6G); a model that needs more is refused at start-up")
      ->transform(CLI::AsSizeValue(false));
}

// --products auto|fp16|fp32: the arithmetic of prefill's matrix products on
// tensor units (EngineOptions::products; docs/precision.md).
inline void add_products_flag(CLI::App& app, Products& products) {
  app.add_option("--products", products,
                 "prefill's matrix products on tensor units: auto (fp16 operands unless every matrix is F32), "
                 "fp16, or fp32 (tiles without tensor units); default auto")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Products>{
          {"auto", Products::by_scheme}, {"fp16", Products::fp16}, {"fp32", Products::fp32}}));
}

}  // namespace unicorn::generate
