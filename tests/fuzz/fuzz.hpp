// What the fuzz targets share: an exact-size copy of the input (so a read one
// byte past it is an ASan report), the rule that outside bytes may end only in
// unicorn::Error, and a check that stops the fuzzer with a message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "unicorn/base/error.hpp"

// A broken property: print it and abort, which libFuzzer reports as a crash
// and saves the input for.
#define FUZZ_CHECK(cond, what)                                                       \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "fuzz check failed at %s:%d: %s\n", __FILE__, __LINE__, what); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

namespace unicorn::fuzz {

inline std::vector<std::byte> exact_copy(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(data) + size};
}

// Runs f; unicorn::Error is the expected outcome for malformed input, and any
// other exception escapes to libFuzzer, which reports it.
template <class F>
void only_unicorn_errors(F&& f) {
  try {
    f();
  } catch (const unicorn::Error&) {
  }
}

// Reads every byte, so a span pointing outside the input is an ASan report.
inline void touch(std::span<const std::byte> bytes) {
  volatile uint8_t sink = 0;
  for (const std::byte b : bytes) sink = sink ^ static_cast<uint8_t>(b);
  (void)sink;
}

}  // namespace unicorn::fuzz
