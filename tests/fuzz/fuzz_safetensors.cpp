// Fuzz target: the safetensors reader (io/safetensors.hpp) on any bytes: a
// parsed file's tensors lie inside the input, in bounds and apart; anything
// else is unicorn::Error.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz.hpp"
#include "unicorn/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::byte> bytes = unicorn::fuzz::exact_copy(data, size);
  unicorn::fuzz::only_unicorn_errors([&] {
    std::vector<unicorn::io::SafeTensor> out;
    unicorn::io::detail::parse_safetensors(bytes, "fuzz.safetensors", out);
    for (const auto& t : out) {
      unicorn::fuzz::touch(t.data);
      FUZZ_CHECK(t.data.empty() || (t.data.data() >= bytes.data() && t.data.data() + t.data.size() <= bytes.data() + size),
                 "a tensor's data lies outside the input");
    }
  });
  return 0;
}
