// Helpers shared by the io tests: a temporary directory and raw file I/O.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "temp_dir.hpp"
#include "unicorn/base/error.hpp"

namespace unicorn::io::test {

using unicorn::test::TempDir;

inline void write_file(const std::filesystem::path& p, std::span<const std::byte> bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

inline void write_file(const std::filesystem::path& p, std::string_view text) {
  write_file(p, std::as_bytes(std::span(text.data(), text.size())));
}

inline std::vector<std::byte> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
  return b;
}

inline std::vector<std::byte> to_bytes(std::string_view s) {
  std::vector<std::byte> b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

// Runs `f`, expecting unicorn::Error whose message contains `needle`; returns the message.
inline std::string expect_error(const std::function<void()>& f, std::string_view needle) {
  try {
    f();
  } catch (const unicorn::Error& e) {
    EXPECT_NE(std::string_view(e.what()).find(needle), std::string_view::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-unicorn exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw; expected an error containing: " << needle;
  return {};
}

}  // namespace unicorn::io::test
