// unicorn/io/mapped_file.hpp — a whole file mapped read-only into memory.
//
// The GGUF and safetensors readers hand out spans into the mapping, so tensor
// data reaches the upload path without a copy. Moving a MappedFile keeps the
// mapping (and therefore every span into it) where it is.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unicorn/base/error.hpp"

namespace unicorn::io {

class MappedFile {
 public:
  // Maps `path` read-only. Throws unicorn::Error naming the path when it is
  // missing, a directory, unreadable or cannot be mapped. An empty file is
  // fine: bytes() is then an empty span.
  static MappedFile open(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept { swap(other); }
  MappedFile& operator=(MappedFile&& other) noexcept {
    MappedFile tmp(std::move(other));
    swap(tmp);
    return *this;
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }

  std::span<const std::byte> bytes() const {
    return {static_cast<const std::byte*>(data_), size_};
  }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

  // Gives the whole pages inside `range` (a part of bytes()) back to the
  // kernel. The loader calls it once a tensor is on the device, so that the
  // process holds in memory the tensors being uploaded, not the whole file
  // (resident mapped pages count as the process's own). Read again, the bytes
  // come back from the page cache or the disk. A range outside the mapping is
  // ignored.
  void release(std::span<const std::byte> range) const {
    const auto* base = static_cast<const std::byte*>(data_);
    if (!data_ || range.data() < base || range.data() + range.size() > base + size_) return;
    const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (uintptr_t(range.data()) + page - 1) / page * page;
    const uintptr_t end = (uintptr_t(range.data()) + range.size()) / page * page;
    if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }

 private:
  void swap(MappedFile& other) noexcept {
    std::swap(path_, other.path_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

  std::filesystem::path path_;
  void* data_ = nullptr;  // nullptr for an empty file (mmap rejects length 0)
  size_t size_ = 0;
};

namespace detail {

// Closes a descriptor on every exit path of MappedFile::open.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

inline std::string errno_text(int err) { return std::generic_category().message(err); }

}  // namespace detail

inline MappedFile MappedFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  detail::FdGuard fd{::open(name.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw Error(name + ": no such file");
    if (err == EACCES) throw Error(name + ": permission denied");
    throw Error(name + ": cannot open: " + detail::errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) throw Error(name + ": cannot stat: " + detail::errno_text(errno));
  if (S_ISDIR(st.st_mode)) throw Error(name + ": is a directory, expected a file");
  if (!S_ISREG(st.st_mode)) throw Error(name + ": not a regular file");
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > SIZE_MAX)
    throw Error(name + ": file size " + std::to_string(st.st_size) + " cannot be mapped");

  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ == 0) return file;
  void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED)
    throw Error(name + ": cannot map " + std::to_string(file.size_) +
                " bytes: " + detail::errno_text(errno));
  file.data_ = p;
  return file;
}

}  // namespace unicorn::io
