// unicorn/io/gguf_writer.hpp — writing GGUF v3 files (unicorn-convert, the
// tests' fixtures): metadata and tensors in, a file llama.cpp loads out. The
// format and its value types are in io/gguf_format.hpp, the reader in io/gguf.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/io/file_output.hpp"
#include "unicorn/io/gguf_format.hpp"

namespace unicorn::io {

// GGUF v3, the files llama.cpp reads. Tensor data is not copied: the writer
// keeps the caller's spans, which must stay valid until write() returns.
class GgufWriter {
 public:
  // Sets (or replaces) a metadata key; keys keep their first insertion order.
  // general.alignment, when set, must be a uint32 power of two and is honoured.
  void set(std::string_view key, GgufValue value) {
    for (auto& kv : kvs_)
      if (kv.key == key) {
        kv.value = std::move(value);
        return;
      }
    kvs_.push_back({std::string(key), std::move(value)});
  }

  // Adds a tensor; dims are ggml's (ne[0] innermost). For a type in
  // quant/formats.hpp the data size must match dims; other type ids are
  // written as given (their size is the caller's business).
  void add_tensor(std::string name, uint32_t ggml_type, std::vector<uint64_t> dims,
                  std::span<const std::byte> data) {
    if (name.size() > detail::kGgufMaxNameBytes)
      throw Error("GGUF writer: tensor name '" + name + "' is longer than 63 bytes (llama.cpp's limit)");
    if (dims.size() > detail::kGgufMaxDims)
      throw Error("GGUF writer: tensor '" + name + "' has more than 4 dimensions");
    for (const auto& t : tensors_)
      if (t.name == name) throw Error("GGUF writer: duplicate tensor '" + name + "'");
    if (const FormatInfo* f = find_format(ggml_type)) {
      const uint64_t ne0 = dims.empty() ? 1 : dims[0];
      if (ne0 % f->block_elems != 0)
        throw Error("GGUF writer: tensor '" + name + "' dims[0] = " + std::to_string(ne0) +
                    " is not a multiple of the " + std::string(f->name) + " block size");
      const auto expected = detail::tensor_bytes(*f, dims);
      if (!expected || *expected != data.size())
        throw Error("GGUF writer: tensor '" + name + "' has " + std::to_string(data.size()) +
                    " bytes of data, its " + std::string(f->name) + " dims need " +
                    (expected ? std::to_string(*expected) : std::string("an overflowing size")));
    }
    tensors_.push_back({std::move(name), ggml_type, std::move(dims), data});
  }

  // Writes to `path` whole or not at all (io::AtomicFile): a failure throws
  // naming the path and the reason, and leaves a file already there untouched.
  void write(const std::filesystem::path& path) const;

 private:
  struct PendingTensor {
    std::string name;
    uint32_t ggml_type;
    std::vector<uint64_t> dims;
    std::span<const std::byte> data;
  };

  uint32_t alignment() const;

  std::vector<GgufKv> kvs_;
  std::vector<PendingTensor> tensors_;
};

namespace detail {

class GgufSink {
 public:
  explicit GgufSink(std::string& out) : out_(out) {}
  template <class T>
  void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    out_.append(s);
  }
  void put_array(const GgufArray& a) {
    put<uint32_t>(static_cast<uint32_t>(a.elem_type()));
    put<uint64_t>(a.size());
    std::visit(
        [&](const auto& items) {
          using E = typename std::decay_t<decltype(items)>::value_type;
          for (const auto& x : items) {
            if constexpr (std::is_same_v<E, std::string>) {
              put_string(x);
            } else if constexpr (std::is_same_v<E, GgufArray>) {
              put<uint32_t>(static_cast<uint32_t>(GgufType::Array));
              put_array(x);
            } else if constexpr (std::is_same_v<E, bool>) {
              put<uint8_t>(x ? 1 : 0);
            } else {
              put<E>(x);
            }
          }
        },
        a.items);
  }
  void put_value(const GgufValue& v) {
    put<uint32_t>(static_cast<uint32_t>(v.type()));
    std::visit(
        [&](const auto& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, std::string>) put_string(x);
          else if constexpr (std::is_same_v<X, GgufArray>) put_array(x);
          else if constexpr (std::is_same_v<X, bool>) put<uint8_t>(x ? 1 : 0);
          else put<X>(x);
        },
        v.storage());
  }

 private:
  std::string& out_;
};

inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace detail

inline uint32_t GgufWriter::alignment() const {
  for (const auto& kv : kvs_)
    if (kv.key == "general.alignment") {
      const auto* a = kv.value.get_if<uint32_t>();
      if (a == nullptr || *a == 0 || !std::has_single_bit(*a))
        throw Error("GGUF writer: general.alignment must be a uint32 power of two");
      return *a;
    }
  return detail::kGgufDefaultAlignment;
}

inline void GgufWriter::write(const std::filesystem::path& path) const {
  const uint64_t align = alignment();

  std::string header;
  detail::GgufSink sink(header);
  sink.put<uint32_t>(detail::kGgufMagic);
  sink.put<uint32_t>(3);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(kvs_.size());
  for (const auto& kv : kvs_) {
    sink.put_string(kv.key);
    sink.put_value(kv.value);
  }
  uint64_t offset = 0;  // relative to the data section
  for (const auto& t : tensors_) {
    sink.put_string(t.name);
    sink.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (const uint64_t d : t.dims) sink.put<uint64_t>(d);
    sink.put<uint32_t>(t.ggml_type);
    sink.put<uint64_t>(offset);
    offset = detail::align_up(offset + t.data.size(), align);
  }
  header.resize(detail::align_up(header.size(), align), '\0');

  AtomicFile out(path);
  out.write(header);
  static constexpr char kZeros[256] = {};
  for (const auto& t : tensors_) {
    out.write(t.data);
    const uint64_t pad = detail::align_up(t.data.size(), align) - t.data.size();
    for (uint64_t done = 0; done < pad;) {
      const uint64_t n = std::min<uint64_t>(pad - done, sizeof kZeros);
      out.write(std::string_view(kZeros, n));
      done += n;
    }
  }
  out.commit();
}

}  // namespace unicorn::io
