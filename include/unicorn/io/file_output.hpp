// unicorn/io/file_output.hpp — every byte the project writes, written so that
// nothing is lost silently.
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
// The temporary file is removed on every way out that runs code: an error, a
// C++ exception, and SIGINT/SIGTERM where the program's handler calls
// remove_open_temporaries() (tools/program_exit.hpp installs one). A process
// killed outright (SIGKILL, a power cut) leaves its temporary behind: the next
// AtomicFile for the same target removes those of processes that are gone.
// A target that is a symbolic link is followed, as the shell's `>` follows it:
// the file it names (even one that does not exist yet) is written, the link stays.
//
// Standard output goes through write_stdout: a failed write is an OutputError
// (the generator exits 1 on a full disk), and a reader that went away (EPIPE,
// `| head`) is StdoutClosed, so that callers can stop quietly, as coreutils do.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unicorn/base/error.hpp"

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

// The temporary files this process has open, for a signal handler: fixed
// slots, lock-free atomics and unlink(2) are all it may touch.
struct TemporarySlot {
  enum State : int { kFree, kFilling, kOpen };
  std::atomic<int> state{kFree};
  char path[4096];
};
inline TemporarySlot g_temporaries[64];

// A slot for `path`, or -1 when every slot is taken (the file is then only
// not removed by a signal) or the path is too long for one.
inline int register_temporary(const std::string& path) noexcept {
  if (path.size() >= sizeof(TemporarySlot::path)) return -1;
  for (int i = 0; i < int(std::size(g_temporaries)); ++i) {
    int expected = TemporarySlot::kFree;
    if (!g_temporaries[i].state.compare_exchange_strong(expected, TemporarySlot::kFilling)) continue;
    std::memcpy(g_temporaries[i].path, path.c_str(), path.size() + 1);
    g_temporaries[i].state.store(TemporarySlot::kOpen);
    return i;
  }
  return -1;
}
inline void unregister_temporary(int slot) noexcept {
  if (slot >= 0) g_temporaries[slot].state.store(TemporarySlot::kFree);
}

// `name` is `base`.tmp.<pid>.<n> (AtomicFile's temporary names) of a process
// that no longer exists.
inline bool is_orphaned_temporary(std::string_view name, std::string_view base) {
  const std::string prefix = std::string(base) + ".tmp.";
  if (!name.starts_with(prefix)) return false;
  name.remove_prefix(prefix.size());
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 9) return false;
  const std::string_view pid_text = name.substr(0, dot), counter = name.substr(dot + 1);
  const auto digits = [](std::string_view t) {
    return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(pid_text) || !digits(counter)) return false;
  const pid_t pid = pid_t(std::stol(std::string(pid_text)));
  return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

// Removes the temporaries that killed writers of `target` left beside it.
inline void remove_orphaned_temporaries(const std::filesystem::path& target) noexcept {
  std::error_code ec;
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  const std::string base = target.filename().string();
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (is_orphaned_temporary(it->path().filename().string(), base)) std::filesystem::remove(it->path(), ec);
}

}  // namespace detail

// Removes every temporary file an AtomicFile of this process has open. Safe in
// a signal handler (async-signal-safe); the AtomicFiles are left to the exit.
inline void remove_open_temporaries() noexcept {
  for (detail::TemporarySlot& t : detail::g_temporaries)
    if (t.state.load() == detail::TemporarySlot::kOpen) ::unlink(t.path);
}

class AtomicFile {
 public:
  // Opens the temporary file beside `target` (or `target` itself when it is a
  // device, pipe or terminal). Throws unicorn::Error when it cannot be created.
  explicit AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
    std::error_code ec;
    std::filesystem::path real = target_;  // a link is followed to the file it names
    for (int hops = 0; std::filesystem::is_symlink(real, ec); ++hops) {
      if (hops == 40) fail("cannot follow the symbolic link", ELOOP);
      const std::filesystem::path to = std::filesystem::read_symlink(real, ec);
      if (ec) fail("cannot read the symbolic link", ec.value());
      real = to.is_absolute() ? to : real.parent_path() / to;
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
    detail::remove_orphaned_temporaries(real);
    temp_ = real.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) fail("cannot create " + temp_.string(), errno);
    slot_ = detail::register_temporary(temp_.string());
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
    detail::unregister_temporary(std::exchange(slot_, -1));  // after the rename: a signal before it still removes it
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
    detail::unregister_temporary(std::exchange(slot_, -1));
    temp_.clear();
  }

  std::filesystem::path target_, final_, temp_;
  int fd_ = -1;
  int slot_ = -1;  // in detail::g_temporaries
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
