// io::AtomicFile and io::write_stdout: a file is replaced whole or not at all,
// and every failure names the path and the OS's reason — a full device, a
// directory the user cannot write, a write cut short by the file-size limit.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io_test_util.hpp"
#include "unicorn/io/file_output.hpp"

namespace unicorn::io {
namespace {

using test::expect_error;
using test::TempDir;
namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  const auto b = test::read_file(p);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

size_t entries(const fs::path& dir) {
  return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// Runs `f` in a child process (after `setup`, e.g. dropping privileges or
// lowering a limit) and returns the message of the unicorn::Error it threw,
// or what else happened.
template <class Setup, class F>
std::string error_in_child(Setup&& setup, F&& f) {
  int pipe_fd[2];
  if (::pipe(pipe_fd) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fd[0]);
    std::string message = "no error";
    if (!setup()) {
      message = "setup failed";
    } else {
      try {
        f();
      } catch (const Error& e) {
        message = e.what();
      }
    }
    (void)!::write(pipe_fd[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(pipe_fd[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fd[0], buf, sizeof buf)) > 0;) message.append(buf, size_t(n));
  ::close(pipe_fd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return message;
}

TEST(AtomicFile, ReplacesTheTargetWholeAndLeavesNothingElse) {
  TempDir dir;
  const fs::path target = dir / "out.bin";
  write_file(target, "first");
  EXPECT_EQ(read_text(target), "first");
  ::chmod(target.c_str(), 0640);
  // Large and small writes, in order.
  AtomicFile f(target);
  const std::string big(200000, 'x');
  f.write("head:");
  f.write(big);
  f.write(":tail");
  EXPECT_EQ(read_text(target), "first") << "the target changes only at commit()";
  f.commit();
  EXPECT_EQ(read_text(target), "head:" + big + ":tail");
  EXPECT_EQ(entries(dir.path()), 1u) << "the temporary file was renamed";
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u) << "a replaced file keeps its permissions";
}

TEST(AtomicFile, AbandonedWriteLeavesTheOldFile) {
  TempDir dir;
  const fs::path target = dir / "model.gguf";
  write_file(target, "old model");
  {
    AtomicFile f(target);
    f.write(std::string(100000, 'n'));
  }  // no commit: an exception on the way out
  EXPECT_EQ(read_text(target), "old model");
  EXPECT_EQ(entries(dir.path()), 1u);
}

TEST(AtomicFile, SymlinkKeepsPointingAtTheReplacedFile) {
  TempDir dir;
  write_file(dir / "real.json", "{}");
  fs::create_symlink(dir / "real.json", dir / "link.json");
  write_file(dir / "link.json", "[1]");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read_text(dir / "real.json"), "[1]");
}

TEST(AtomicFile, FullDeviceIsAnErrorNamingThePath) {
  expect_error([] { write_file("/dev/full", "logits"); }, "/dev/full: cannot write: No space left on device");
  // Large writes skip the buffer and fail at once.
  AtomicFile f("/dev/full");
  expect_error([&] { f.write(std::string(1 << 20, 'x')); }, "/dev/full: cannot write: No space left on device");
  write_file("/dev/null", "discarded");  // a device that takes bytes is written in place
}

TEST(AtomicFile, MissingDirectoryAndDirectoryTarget) {
  TempDir dir;
  expect_error([&] { write_file(dir / "no" / "x", "x"); }, "no/x: cannot create");
  expect_error([&] { write_file(dir.path(), "x"); }, ": is a directory");
}

// A directory the user may not write: the old file stays, nothing is left
// behind. Root may write anywhere, so as root the writer runs as nobody.
TEST(AtomicFile, ReadOnlyDirectoryLeavesTheOldFile) {
  TempDir dir;
  const fs::path ro = dir / "ro";
  fs::create_directory(ro);
  write_file(ro / "results.json", "old");
  ::chmod(ro.c_str(), 0555);
  ::chmod(dir.path().c_str(), 0755);
  const std::string message = error_in_child(
      [] { return ::geteuid() != 0 || (::setgid(65534) == 0 && ::setuid(65534) == 0); },
      [&] { write_file(ro / "results.json", "new"); });
  EXPECT_NE(message.find("results.json: cannot create"), std::string::npos) << message;
  EXPECT_NE(message.find("Permission denied"), std::string::npos) << message;
  EXPECT_EQ(read_text(ro / "results.json"), "old");
  EXPECT_EQ(entries(ro), 1u);
  ::chmod(ro.c_str(), 0755);
}

// A write that fails half-way (here the file-size limit, EFBIG, as a full disk
// would with ENOSPC): the old file stays whole and the temporary file goes.
TEST(AtomicFile, WriteFailingHalfWayLeavesTheOldFile) {
  TempDir dir;
  const fs::path target = dir / "model.gguf";
  write_file(target, "old model");
  const std::string message = error_in_child(
      [] {
        std::signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG instead of ending the process
        const rlimit limit{1 << 16, 1 << 16};
        return ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
      },
      [&] { write_file(target, std::string(1 << 20, 'w')); });
  EXPECT_NE(message.find("model.gguf: cannot write: File too large"), std::string::npos) << message;
  EXPECT_EQ(read_text(target), "old model");
  EXPECT_EQ(entries(dir.path()), 1u);
}

TEST(WriteStdout, ClosedPipeAndFullDevice) {
  // Standard output redirected in a child: to /dev/full, then to a pipe whose
  // reader is gone.
  const auto into = [](const char* how) {
    return error_in_child(
        [how] {
          std::signal(SIGPIPE, SIG_IGN);
          if (std::string_view(how) == "full") return ::freopen("/dev/full", "w", stdout) != nullptr;
          int p[2];
          if (::pipe(p) != 0) return false;
          ::close(p[0]);
          return ::dup2(p[1], STDOUT_FILENO) >= 0;
        },
        [] {
          try {
            write_stdout("text");
          } catch (const StdoutClosed& e) {
            throw Error(std::string("closed: ") + e.what());
          }
        });
  };
  EXPECT_EQ(into("full"), "standard output: cannot write: No space left on device");
  EXPECT_EQ(into("pipe"), "closed: standard output: the reader closed the pipe");
}

}  // namespace
}  // namespace unicorn::io
