// Fuzz target: the generator's flags that take numbers and lists
// (examples/generate/options.hpp: the sampling flags, --tokens,
// --max-device-memory), as CLI11 parses them from any command line. A command
// line is parsed or refused (CLI::ParseError, unicorn::Error); flags that get
// through are values the sampler takes, and --tokens gives back exactly the
// ids it was written from.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz.hpp"
#include "options.hpp"

namespace {

// The ids written back as a list, parsed again: the same ids.
void check_round_trip(const std::vector<int32_t>& ids) {
  std::string list;
  for (size_t i = 0; i < ids.size(); ++i) list += (i ? "," : "") + std::to_string(ids[i]);
  FUZZ_CHECK(unicorn::generate::parse_token_ids(list) == ids, "--tokens does not round-trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  // The input as a list for --tokens, whole.
  unicorn::fuzz::only_unicorn_errors([&] { check_round_trip(unicorn::generate::parse_token_ids(input)); });

  // The input as a command line: arguments separated by NUL bytes.
  std::vector<std::string> args;
  size_t begin = 0;
  while (begin <= input.size() && args.size() < 24) {
    const size_t end = std::min(input.find('\0', begin), input.size());
    args.push_back(input.substr(begin, end - begin));
    begin = end + 1;
  }
  CLI::App app{"fuzz"};
  unicorn::generate::SamplingFlags sampling;
  std::string tokens;
  std::optional<uint64_t> memory;
  unicorn::generate::add_sampling_flags(app, sampling);
  unicorn::generate::add_memory_flag(app, memory);
  app.add_option("--tokens", tokens);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last to first
  try {
    app.parse(args);
  } catch (const CLI::ParseError&) {
    return 0;
  }
  unicorn::fuzz::only_unicorn_errors([&] {
    unicorn::generate::check_sampling_flags(sampling);
    const unicorn::SamplingParams& p = sampling.params;
    FUZZ_CHECK(std::isfinite(p.temperature) && p.temperature >= 0 && p.top_p > 0 && p.top_p <= 1 && p.min_p >= 0 &&
                   p.min_p <= 1 && p.repeat_penalty > 0 && p.repeat_last_n <= unicorn::kMaxRepeatLastN,
               "sampling flags the sampler refuses got through");
  });
  if (!tokens.empty())
    unicorn::fuzz::only_unicorn_errors([&] { check_round_trip(unicorn::generate::parse_token_ids(tokens)); });
  return 0;
}
