// A test's scratch directory: made fresh under $TMPDIR, removed with everything
// in it when the owner goes — a test run leaves nothing on the machine's disk.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace unicorn::test {

class TempDir {
 public:
  // `prefix` names the directory for whoever finds one (a crashed run's).
  explicit TempDir(std::string_view prefix = "unicorn-test") : owner_(::getpid()) {
    std::string templ = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("cannot make a directory like " + templ);
    path_ = templ;
  }
  // Only the process that made it removes it: a forked child that exits
  // normally must not take its parent's files.
  ~TempDir() {
    if (::getpid() != owner_) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
  pid_t owner_;
};

}  // namespace unicorn::test
