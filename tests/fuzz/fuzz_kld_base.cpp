// libFuzzer target for unicorn-perplexity's KL-divergence base file
// (examples/perplexity/kld_base.hpp), which --kl-divergence reads from disk.
// Every input must end in a parsed file or unicorn::Error; anything else (a
// crash, a sanitizer report, another exception escaping) is a bug.
//
//   fuzz_kld_base -max_total_time=60 <corpus dir>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "kld_base.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size heap copy, 4-byte aligned as a mapping is, so reads past the end are reports.
  std::vector<uint32_t> words((size + 3) / 4);
  std::memcpy(words.data(), data, size);
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(words.data()), size);
  try {
    const auto base = unicorn::perplexity::KldBase::parse_bytes(bytes, "fuzz.kld");
    const auto& h = base.header();
    volatile uint32_t sink = 0;
    for (uint32_t c = 0; c < h.chunks; ++c)
      for (uint32_t i = 0; i < h.scored; ++i) {
        const auto row = base.row(c, i);
        sink = sink + row.q.front() + row.q.back();
      }
  } catch (const unicorn::Error&) {
    // The expected outcome for malformed input.
  }
  return 0;
}
