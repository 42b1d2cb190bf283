// Fuzz target: the mmproj reader (model/vision_from_mmproj.hpp) on any bytes
// parsed as GGUF, then its checks against the tiny text model and encoder.
// Every input must end in VisionWeights or unicorn::Error; a crash, a
// sanitizer report, a hang or another exception type escaping is a bug. The
// tensors of a file read whole are touched, so a span outside the input is an
// ASan report.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/model/vision_from_mmproj.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::byte> bytes = unicorn::fuzz::exact_copy(data, size);
  unicorn::fuzz::only_unicorn_errors([&] {
    const auto g = unicorn::io::GgufFile::parse(bytes, "fuzz-mmproj.gguf");
    const unicorn::VisionWeights w = unicorn::vision_from_mmproj(g);
    uint64_t total = 0;
    for (const auto& t : w.tensors) {
      unicorn::fuzz::touch(t.data);
      FUZZ_CHECK(t.data.size() == t.bytes, "a tensor's bytes are not its shape's in its format");
      total += t.bytes;
    }
    FUZZ_CHECK(total == w.bytes(), "the table's bytes do not add up");
    unicorn::fuzz::only_unicorn_errors([&] { unicorn::check_vision_fits_text(w, unicorn::kGemma3Tiny); });
    unicorn::fuzz::only_unicorn_errors([&] { unicorn::check_vision_fits(w, unicorn::kGemma3SiglipTiny); });
  });
  return 0;
}
