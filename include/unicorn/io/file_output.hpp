// unicorn/io/file_output.hpp — every byte the project writes, written so that
// nothing is lost silently (DESIGN.md decision 11).
//
// Files (GGUF from unicorn-convert, --logits-out, benchmark results, the
// pipeline cache) go through AtomicFile: the bytes land in a temporary file
// beside the target (same directory, so the final rename cannot cross file
// systems), every write and the close are checked, the data is flushed to disk,
// and only then is the temporary file renamed over the target. A failure throws
// unicorn::Error naming the target and the OS's reason, removes the temporary
// file and leaves whatever stood at the target as it was. A target that exists
// and is not a regular file (/dev/null, /dev/full, a pipe, a terminal) holds
// nothing to protect: it is written in place, with the same checks.
//
// Standard output goes through write_stdout: a failed write is an OutputError
// (the generator exits 1 on a full disk), and a reader that went away (EPIPE,
// `| head`) is StdoutClosed, so that callers can stop quietly, as coreutils do.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unicorn/error.hpp"

namespace unicorn::io {

namespace detail {

inline std::string os_reason(int err) { return std::generic_category().message(err); }

// write(2) until every byte is out; returns 0 or the errno of the failure.
inline int write_fully(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // a write that makes no progress would loop forever
    data += n;
    size -= size_t(n);
  }
  return 0;
}

}  // namespace detail

class AtomicFile {
 public:
  // Opens the temporary file beside `target` (or `target` itself when it is a
  // device, pipe or terminal). Throws unicorn::Error when it cannot be created.
  explicit AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
    std::error_code ec;
    std::filesystem::path real = target_;
    if (std::filesystem::is_symlink(target_, ec)) {  // replace the file it points to, keep the link
      const auto resolved = std::filesystem::canonical(target_, ec);
      if (!ec) real = resolved;
    }
    struct stat st {};
    const bool exists = ::stat(real.c_str(), &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
      if (S_ISDIR(st.st_mode)) fail("is a directory", 0);
      in_place_ = true;
      fd_ = ::open(real.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (fd_ < 0) fail("cannot open for writing", errno);
      return;
    }
    final_ = real;
    // Unique among this process's writers and any other process's: pid and a counter.
    static std::atomic<unsigned> counter{0};
    temp_ = real.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) fail("cannot create " + temp_.string(), errno);
    if (exists) (void)::fchmod(fd_, st.st_mode & 07777);  // a replaced file keeps its permissions
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Without commit() (an exception on the way), the target stays as it was.
  ~AtomicFile() { abandon(); }

  void write(std::span<const std::byte> bytes) {
    write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  void write(std::string_view bytes) {
    if (fd_ < 0) throw Error(target_.string() + ": internal: write after commit");
    // Small pieces (GGUF keys, padding) are gathered; large ones go straight out.
    if (buffer_.size() + bytes.size() > kBufferBytes) flush_buffer();
    if (bytes.size() >= kBufferBytes) return put(bytes.data(), bytes.size());
    buffer_.append(bytes);
  }

  // Flushes to disk and renames into place; the target then holds every byte.
  void commit() {
    flush_buffer();
    // fsync on a pipe or terminal fails with EINVAL: there is no disk to flush.
    if (!in_place_ && ::fsync(fd_) != 0) fail_and_remove("cannot flush to disk", errno);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail_and_remove("cannot write", errno);
    if (in_place_) return;
    if (::rename(temp_.c_str(), final_.c_str()) != 0) fail_and_remove("cannot rename " + temp_.string() + " into place", errno);
    temp_.clear();
  }

  const std::filesystem::path& target() const { return target_; }

 private:
  static constexpr size_t kBufferBytes = 1 << 16;

  void flush_buffer() {
    if (buffer_.empty()) return;
    put(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  void put(const char* data, size_t size) {
    if (const int err = detail::write_fully(fd_, data, size)) fail_and_remove("cannot write", err);
  }
  [[noreturn]] void fail(const std::string& what, int err) const {
    throw Error(target_.string() + ": " + what + (err ? ": " + detail::os_reason(err) : ""));
  }
  [[noreturn]] void fail_and_remove(const std::string& what, int err) {
    abandon();
    fail(what, err);
  }
  void abandon() noexcept {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    if (!temp_.empty()) ::unlink(temp_.c_str());
    temp_.clear();
  }

  std::filesystem::path target_, final_, temp_;
  int fd_ = -1;
  bool in_place_ = false;
  std::string buffer_;
};

// A whole file from one buffer (JSON results, logits).
inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

// Standard output cannot be written: a full disk, a closed descriptor, ...
struct OutputError : Error {
  using Error::Error;
};
// ... or its reader went away (EPIPE): stop writing, quietly.
struct StdoutClosed : OutputError {
  StdoutClosed() : OutputError("standard output: the reader closed the pipe") {}
};

// Writes to standard output now (after whatever std::cout holds). Throws
// StdoutClosed on EPIPE (with SIGPIPE ignored; by default the signal ends the
// process first, as it ends coreutils) and Error on any other failure.
inline void write_stdout(std::string_view text) {
  std::cout.flush();
  std::fflush(stdout);
  const int err = detail::write_fully(STDOUT_FILENO, text.data(), text.size());
  if (err == EPIPE) throw StdoutClosed();
  if (err) throw OutputError("standard output: cannot write: " + detail::os_reason(err));
}

// Flushes std::cout and reports a write error it met since the last check (a
// tool that prints through iostreams calls this before exiting 0).
inline void check_stdout() {
  errno = 0;
  std::cout.flush();
  if (std::cout && std::fflush(stdout) == 0 && !std::ferror(stdout)) return;
  const int err = errno;
  if (err == EPIPE) throw StdoutClosed();
  throw OutputError("standard output: cannot write" + (err ? ": " + detail::os_reason(err) : std::string()));
}

}  // namespace unicorn::io
