// Fuzz target: unicorn-perplexity's KL-divergence base file
// (examples/perplexity/kld_base.hpp), which --kl-divergence reads from disk.
// Every input must end in a parsed file or unicorn::Error; a parsed file's
// rows are read whole, so a row that points outside the input is an ASan report.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz.hpp"
#include "kld_base.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // operator new's alignment, as a mapping's: the rows are read as uint16_t.
  const std::vector<std::byte> bytes = unicorn::fuzz::exact_copy(data, size);
  unicorn::fuzz::only_unicorn_errors([&] {
    const auto base = unicorn::perplexity::KldBase::parse_bytes(bytes, "fuzz.kld");
    const auto& h = base.header();
    FUZZ_CHECK(base.tokens().size() == size_t(h.ctx) * h.chunks, "the windows' tokens are not ctx x chunks");
    for (uint32_t c = 0; c < h.chunks; ++c)
      for (uint32_t i = 0; i < h.scored; ++i) unicorn::fuzz::touch(std::as_bytes(base.row(c, i).q));
  });
  return 0;
}
