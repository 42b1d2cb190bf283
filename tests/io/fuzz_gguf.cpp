// libFuzzer target for the parsers that read untrusted files: GGUF (the main
// subject), the safetensors header and config.json. Every input must end in a
// parsed result or unicorn::Error; anything else (a crash, a sanitizer report,
// another exception type escaping) is a bug.
//
//   clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined \
//       -Iinclude tests/io/fuzz_gguf.cpp -o fuzz_gguf
//   ./fuzz_gguf -max_total_time=60 corpus/
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "unicorn/io/gguf.hpp"
#include "unicorn/io/hf_config.hpp"
#include "unicorn/io/safetensors.hpp"

namespace {

// Touches what a loader would touch, so a span that points outside the input
// is caught by the address sanitizer.
void use_gguf(const unicorn::io::GgufFile& g) {
  volatile uint8_t sink = 0;
  for (const auto& t : g.tensors())
    for (const std::byte b : t.data) sink = sink ^ static_cast<uint8_t>(b);
  // Every accessor on every key: each either converts or throws unicorn::Error.
  for (const auto& kv : g.metadata()) {
    const auto try_each = [&](auto&& accessor) {
      try {
        accessor(kv.key);
      } catch (const unicorn::Error&) {
      }
    };
    try_each([&](std::string_view k) { (void)g.try_u32(k); });
    try_each([&](std::string_view k) { (void)g.try_f32(k); });
    try_each([&](std::string_view k) { (void)g.try_string(k); });
    try_each([&](std::string_view k) { (void)g.try_string_array(k); });
    try_each([&](std::string_view k) { (void)g.try_f32_array(k); });
    try_each([&](std::string_view k) { (void)g.try_i32_array(k); });
  }
  (void)sink;
}

template <class F>
void expect_only_unicorn_errors(F&& f) {
  try {
    f();
  } catch (const unicorn::Error&) {
    // The expected outcome for malformed input.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size heap copy so reads past the end are sanitizer reports.
  const std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data),
                                     reinterpret_cast<const std::byte*>(data) + size);
  expect_only_unicorn_errors([&] {
    const auto g = unicorn::io::GgufFile::parse(bytes, "fuzz.gguf");
    use_gguf(g);
  });
  expect_only_unicorn_errors([&] {
    std::vector<unicorn::io::SafeTensor> out;
    unicorn::io::detail::parse_safetensors(bytes, "fuzz.safetensors", out);
    volatile uint8_t sink = 0;
    for (const auto& t : out)
      for (const std::byte b : t.data) sink = sink ^ static_cast<uint8_t>(b);
  });
  expect_only_unicorn_errors([&] {
    const auto* text = reinterpret_cast<const char*>(data);
    const auto json = nlohmann::json::parse(text, text + size, nullptr, /*allow_exceptions=*/false);
    if (!json.is_discarded()) (void)unicorn::io::parse_hf_config_json(json, "fuzz.json");
  });
  return 0;
}
