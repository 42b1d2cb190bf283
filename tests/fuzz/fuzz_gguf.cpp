// Fuzz target: the GGUF reader (io/gguf.hpp) on any bytes. Every input must
// end in a parsed file or unicorn::Error; a crash, a sanitizer report, a hang
// or another exception type escaping is a bug. A parsed file's tensor spans
// are read whole, so a span that points outside the input is an ASan report,
// and every typed accessor is tried on every key.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz.hpp"
#include "unicorn/io/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::byte> bytes = unicorn::fuzz::exact_copy(data, size);
  unicorn::fuzz::only_unicorn_errors([&] {
    const auto g = unicorn::io::GgufFile::parse(bytes, "fuzz.gguf");
    for (const auto& t : g.tensors()) {
      unicorn::fuzz::touch(t.data);
      if (t.known_type) FUZZ_CHECK(t.offset + t.bytes <= size, "a tensor's data lies past the input");
    }
    for (const auto& kv : g.metadata()) {
      const std::string_view k = kv.key;
      unicorn::fuzz::only_unicorn_errors([&] { (void)g.try_u32(k); });
      unicorn::fuzz::only_unicorn_errors([&] { (void)g.try_u64(k); });
      unicorn::fuzz::only_unicorn_errors([&] { (void)g.try_f32(k); });
      unicorn::fuzz::only_unicorn_errors([&] { (void)g.try_bool(k); });
      unicorn::fuzz::only_unicorn_errors([&] { (void)g.try_string(k); });
      unicorn::fuzz::only_unicorn_errors([&] { (void)g.try_string_array(k); });
      unicorn::fuzz::only_unicorn_errors([&] { (void)g.try_f32_array(k); });
      unicorn::fuzz::only_unicorn_errors([&] { (void)g.try_i32_array(k); });
    }
  });
  return 0;
}
