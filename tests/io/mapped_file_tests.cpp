#include "unicorn/io/mapped_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "io_test_util.hpp"

namespace unicorn::io {
namespace {

using test::expect_error;
using test::TempDir;

TEST(MappedFile, MapsWholeFile) {
  TempDir dir;
  test::write_file(dir / "a.bin", "hello");
  const MappedFile f = MappedFile::open(dir / "a.bin");
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(f.bytes().data()), 5), "hello");
  EXPECT_EQ(f.path(), dir / "a.bin");
}

TEST(MappedFile, EmptyFileIsAllowed) {
  TempDir dir;
  test::write_file(dir / "empty", "");
  const MappedFile f = MappedFile::open(dir / "empty");
  EXPECT_EQ(f.size(), 0u);
  EXPECT_TRUE(f.bytes().empty());
}

TEST(MappedFile, MoveKeepsTheMapping) {
  TempDir dir;
  test::write_file(dir / "a.bin", "abc");
  MappedFile a = MappedFile::open(dir / "a.bin");
  const std::byte* p = a.bytes().data();
  MappedFile b = std::move(a);
  EXPECT_EQ(b.bytes().data(), p);
  EXPECT_TRUE(a.bytes().empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  MappedFile c;
  c = std::move(b);
  EXPECT_EQ(c.bytes().data(), p);
  EXPECT_EQ(c.size(), 3u);
}

TEST(MappedFile, MissingFile) {
  TempDir dir;
  const auto msg = expect_error([&] { MappedFile::open(dir / "nope.gguf"); }, "no such file");
  EXPECT_NE(msg.find("nope.gguf"), std::string::npos);
}

TEST(MappedFile, Directory) {
  TempDir dir;
  expect_error([&] { MappedFile::open(dir.path()); }, "is a directory");
}

TEST(MappedFile, PermissionDenied) {
  TempDir dir;
  test::write_file(dir / "secret", "x");
  ::chmod((dir / "secret").c_str(), 0);
  // Root reads any file: drop to "nobody" for the attempt (real uid stays 0,
  // so the effective uid can be restored; the test binary is single-threaded).
  const bool root = ::geteuid() == 0;
  if (root && ::seteuid(65534) != 0) GTEST_SKIP() << "cannot drop root privileges";
  expect_error([&] { MappedFile::open(dir / "secret"); }, "secret: permission denied");
  if (root) ASSERT_EQ(::seteuid(0), 0);
}

// The loader gives a tensor's pages back once it is on the device; the bytes
// read again are the file's (from the page cache), and a range outside the
// mapping is ignored.
TEST(MappedFile, ReleasedPagesReadBackTheSameBytes) {
  TempDir dir;
  std::vector<std::byte> data(5 * 4096 + 123);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 7 % 251);
  test::write_file(dir / "pages", data);
  const MappedFile f = MappedFile::open(dir / "pages");
  const auto bytes = f.bytes();
  f.release(bytes.subspan(100, 3 * 4096));  // whole pages inside it only
  f.release(bytes);
  const std::vector<std::byte> elsewhere(64);
  f.release(elsewhere);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), data.begin(), data.end()));
}

TEST(MappedFile, DeviceIsNotARegularFile) {
  expect_error([] { MappedFile::open("/dev/null"); }, "/dev/null: not a regular file");
}

}  // namespace
}  // namespace unicorn::io
