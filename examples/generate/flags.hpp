// The generator's command line as values: what flags.cpp parses (CLI11, in
// its own translation unit) and program.cpp runs (no CLI11: a third of the
// program's compile time was CLI11's). Also --tokens' parser, which
// program.cpp calls and tests/fuzz/fuzz_cli_options.cpp fuzzes.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "program.hpp"
#include "unicorn/base/error.hpp"
#include "unicorn/config/sampling.hpp"
#include "unicorn/engine/options.hpp"
#include "unicorn/layout/compiled_deployment.hpp"

namespace unicorn::generate {

// What the sampling flags fill in; defaults are llama.cpp's.
struct SamplingFlags {
  SamplingParams params{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
  std::optional<uint32_t> seed;  // none: a random seed, printed
};

// Every flag of the generator (flags.cpp says what each means, in --help).
struct GenerateFlags {
  std::string model, prompt, prompt_file, tokens, logits_out, tokenizer, system_prompt, mmproj;
  std::vector<std::string> stop, images;  // images: files, in the order given
  int n_predict = 256;
  std::optional<uint32_t> ctx;
  bool chat = false, interactive = false, show_layout = false, show_placement = false, show_engines = false,
       check_tensors = false;
  SamplingFlags sampling;
  std::optional<uint64_t> max_device_memory;
  Products products = Products::by_scheme;
  std::optional<int> gpu_layers, threads;  // llama-cli's -ngl and -t: taken, and ignored with a note
  // Speculative decoding: the draft model's file, the most tokens it drafts a
  // round (none: the pair's compiled bound; 0: off) and the fewest.
  std::string draft;
  std::optional<int> draft_max;
  int draft_min = 0;
};

// Parses the command line of a generator of `engines`: its flags, or the exit
// status when the program ends here (0 after --help; 2 after one line on
// stderr for a bad command line).
std::variant<GenerateFlags, int> parse_generate_flags(int argc, char** argv,
                                                      std::span<const CompiledDeployment> engines,
                                                      const examples::ProgramInfo& program);

// --tokens: comma-separated token ids, e.g. 2,94,2245. Each must be a decimal
// integer that fits int32 (the engine then checks it against the vocabulary).
inline std::vector<int32_t> parse_token_ids(const std::string& list) {
  std::vector<int32_t> ids;
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, end - begin);
    size_t used = 0;
    long long v = 0;
    bool ok = !item.empty() && item.find_first_not_of("0123456789-") == std::string::npos;
    if (ok) {
      try {
        v = std::stoll(item, &used);
        ok = used == item.size() && v >= INT32_MIN && v <= INT32_MAX;
      } catch (const std::exception&) {  // not a number, or past long long
        ok = false;
      }
    }
    if (!ok) throw Error("--tokens: '" + item + "' is not a token id (expected e.g. 2,94,2245)");
    ids.push_back(int32_t(v));
    begin = end + 1;
  }
  return ids;
}

}  // namespace unicorn::generate
