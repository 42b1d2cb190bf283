#include "unicorn/io/mapped_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

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
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  TempDir dir;
  test::write_file(dir / "secret", "x");
  ::chmod((dir / "secret").c_str(), 0);
  expect_error([&] { MappedFile::open(dir / "secret"); }, "permission denied");
}

TEST(MappedFile, DeviceIsNotARegularFile) {
  expect_error([] { MappedFile::open("/dev/null"); }, "/dev/null: not a regular file");
}

}  // namespace
}  // namespace unicorn::io
