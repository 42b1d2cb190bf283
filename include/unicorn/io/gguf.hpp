// unicorn/io/gguf.hpp — the GGUF reader (GgufFile). The format's layout and
// value types are io/gguf_format.hpp; the writer is io/gguf_writer.hpp.
//
// The reader maps the file and never trusts it: every read is bounds-checked,
// counts are capped by the bytes that could hold them and size arithmetic is
// overflow-checked, so any input yields a GgufFile or a unicorn::Error whose
// message names the file and what is wrong.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/io/gguf_format.hpp"
#include "unicorn/io/mapped_file.hpp"
#include "unicorn/quant/formats.hpp"

namespace unicorn::io {

namespace detail {

// Sequential reader over the header; every read is bounds-checked.
class GgufCursor {
 public:
  GgufCursor(std::span<const std::byte> bytes, const std::string& file)
      : bytes_(bytes), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining())
      throw Error(file_ + ": truncated header: " + std::string(what) + " at byte " +
                  std::to_string(pos_) + " needs " + std::to_string(n) +
                  " bytes but the file has " + std::to_string(bytes_.size()) + " bytes");
  }

  template <class T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(std::string_view what) {
    const auto n = read<uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(n));
    pos_ += n;
    return s;
  }

  template <class T>
  std::vector<T> read_pod_array(uint64_t count, std::string_view what) {
    need(count * sizeof(T), what);  // count was capped by remaining() / sizeof(T)
    std::vector<T> v(static_cast<size_t>(count));
    if (count != 0) std::memcpy(v.data(), bytes_.data() + pos_, count * sizeof(T));
    pos_ += count * sizeof(T);
    return v;
  }

  [[noreturn]] void fail(const std::string& message) const { throw Error(file_ + ": " + message); }

 private:
  std::span<const std::byte> bytes_;
  const std::string& file_;
  uint64_t pos_ = 0;
};

GgufType read_gguf_type(GgufCursor& c, std::string_view what);

GgufValue read_gguf_value(GgufCursor& c, GgufType type, int depth,
                          const std::string& what);

GgufArray read_gguf_array(GgufCursor& c, int depth, const std::string& what);

// The value of an integer metadata value of any width (not bool) as uint64;
// nullopt for non-integers, and for negative values with `negative` set.
std::optional<uint64_t> gguf_as_unsigned(const GgufValue::Storage& s, bool& negative);

// A number for messages ("-1", "true"); "?" for strings and arrays.
std::string gguf_scalar_text(const GgufValue& v);

}  // namespace detail

class GgufFile {
 public:
  // Maps and parses `path`; throws unicorn::Error on any problem.
  static GgufFile open(const std::filesystem::path& path);

  // Parses bytes the caller keeps alive for the GgufFile's lifetime (tests,
  // fuzzing, in-memory files). `name` prefixes error messages.
  static GgufFile parse(std::span<const std::byte> bytes, std::string name);

  const std::string& name() const { return name_; }
  // The pages of a tensor's data, once it is on the device (MappedFile::release;
  // nothing for bytes the caller owns).
  void release(std::span<const std::byte> data) const { file_.release(data); }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section
  std::span<const std::byte> bytes() const { return bytes_; }

  // ---- metadata ----
  std::span<const GgufKv> metadata() const { return metadata_; }  // in file order
  const GgufValue* find(std::string_view key) const {
    const auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &metadata_[it->second].value;
  }

  // try_* return nullopt when the key is absent and throw unicorn::Error when it
  // is present with a type that cannot be converted; get_* also throw when absent.
  std::optional<uint32_t> try_u32(std::string_view key) const { return try_unsigned<uint32_t>(key); }
  std::optional<uint64_t> try_u64(std::string_view key) const { return try_unsigned<uint64_t>(key); }
  std::optional<float> try_f32(std::string_view key) const;
  std::optional<bool> try_bool(std::string_view key) const;
  std::optional<std::string> try_string(std::string_view key) const;
  std::optional<std::vector<std::string>> try_string_array(std::string_view key) const;
  std::optional<std::vector<float>> try_f32_array(std::string_view key) const;
  std::optional<std::vector<int32_t>> try_i32_array(std::string_view key) const;

  uint32_t get_u32(std::string_view key) const { return required(key, try_u32(key)); }
  uint64_t get_u64(std::string_view key) const { return required(key, try_u64(key)); }
  float get_f32(std::string_view key) const { return required(key, try_f32(key)); }
  bool get_bool(std::string_view key) const { return required(key, try_bool(key)); }
  std::string get_string(std::string_view key) const { return required(key, try_string(key)); }
  std::vector<std::string> get_string_array(std::string_view key) const {
    return required(key, try_string_array(key));
  }
  std::vector<float> get_f32_array(std::string_view key) const {
    return required(key, try_f32_array(key));
  }
  std::vector<int32_t> get_i32_array(std::string_view key) const {
    return required(key, try_i32_array(key));
  }

  // ---- tensors ----
  std::span<const GgufTensor> tensors() const { return tensors_; }  // in file order
  const GgufTensor* find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
  }

 private:
  template <class T>
  T required(std::string_view key, std::optional<T> v) const {
    if (!v) throw Error(name_ + ": metadata key '" + std::string(key) + "' is missing");
    return std::move(*v);
  }
  [[noreturn]] void wrong_type(std::string_view key, const GgufValue& v,
                               std::string_view expected) const {
    throw Error(name_ + ": metadata key '" + std::string(key) + "' has type " +
                v.type_description() + ", expected " + std::string(expected));
  }
  template <class T>
  std::optional<T> try_unsigned(std::string_view key) const;
  void parse_tensor_infos(detail::GgufCursor& c, uint64_t count);
  void place_tensors();

  MappedFile file_;  // empty when parsed from caller-owned bytes
  std::string name_;
  std::span<const std::byte> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = detail::kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> metadata_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

template <class T>
std::optional<T> GgufFile::try_unsigned(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  bool negative = false;
  const auto u = detail::gguf_as_unsigned(v->storage(), negative);
  const char* expected = sizeof(T) == 4 ? "an unsigned integer that fits in 32 bits"
                                        : "an unsigned integer";
  if (negative || (u && *u > std::numeric_limits<T>::max()))
    throw Error(name_ + ": metadata key '" + std::string(key) + "' = " +
                detail::gguf_scalar_text(*v) + " is not " + expected);
  if (!u) wrong_type(key, *v, expected);
  return static_cast<T>(*u);
}

}  // namespace unicorn::io

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::io::detail {

UNICORN_DECL GgufType read_gguf_type(GgufCursor& c, std::string_view what) {
  const auto t = c.read<uint32_t>(what);
  if (t >= kGgufTypeCount)
    c.fail("unknown GGUF value type " + std::to_string(t) + " in " + std::string(what));
  return static_cast<GgufType>(t);
}

UNICORN_DECL GgufValue read_gguf_value(GgufCursor& c, GgufType type, int depth,
                                       const std::string& what) {
  switch (type) {
    case GgufType::UInt8: return c.read<uint8_t>(what);
    case GgufType::Int8: return c.read<int8_t>(what);
    case GgufType::UInt16: return c.read<uint16_t>(what);
    case GgufType::Int16: return c.read<int16_t>(what);
    case GgufType::UInt32: return c.read<uint32_t>(what);
    case GgufType::Int32: return c.read<int32_t>(what);
    case GgufType::Float32: return c.read<float>(what);
    case GgufType::Bool: return c.read<uint8_t>(what) != 0;
    case GgufType::String: return c.read_string(what);
    case GgufType::Array: return read_gguf_array(c, depth + 1, what);
    case GgufType::UInt64: return c.read<uint64_t>(what);
    case GgufType::Int64: return c.read<int64_t>(what);
    case GgufType::Float64: return c.read<double>(what);
  }
  c.fail("unknown GGUF value type in " + what);
}

UNICORN_DECL GgufArray read_gguf_array(GgufCursor& c, int depth, const std::string& what) {
  if (depth > kGgufMaxArrayDepth)
    c.fail(what + ": arrays nested deeper than " + std::to_string(kGgufMaxArrayDepth));
  const GgufType elem = read_gguf_type(c, what);
  const auto count = c.read<uint64_t>(what);
  if (count > c.remaining() / gguf_min_encoded_size(elem))
    c.fail(what + ": array of " + std::to_string(count) + " " +
           std::string(gguf_type_name(elem)) + " elements cannot fit in the " +
           std::to_string(c.remaining()) + " bytes left in the file");
  GgufArray a;
  switch (elem) {
    case GgufType::UInt8: a.items = c.read_pod_array<uint8_t>(count, what); break;
    case GgufType::Int8: a.items = c.read_pod_array<int8_t>(count, what); break;
    case GgufType::UInt16: a.items = c.read_pod_array<uint16_t>(count, what); break;
    case GgufType::Int16: a.items = c.read_pod_array<int16_t>(count, what); break;
    case GgufType::UInt32: a.items = c.read_pod_array<uint32_t>(count, what); break;
    case GgufType::Int32: a.items = c.read_pod_array<int32_t>(count, what); break;
    case GgufType::Float32: a.items = c.read_pod_array<float>(count, what); break;
    case GgufType::UInt64: a.items = c.read_pod_array<uint64_t>(count, what); break;
    case GgufType::Int64: a.items = c.read_pod_array<int64_t>(count, what); break;
    case GgufType::Float64: a.items = c.read_pod_array<double>(count, what); break;
    case GgufType::Bool: {
      std::vector<bool> v(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) v[i] = c.read<uint8_t>(what) != 0;
      a.items = std::move(v);
      break;
    }
    case GgufType::String: {
      std::vector<std::string> v;
      v.reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) v.push_back(c.read_string(what));
      a.items = std::move(v);
      break;
    }
    case GgufType::Array: {
      std::vector<GgufArray> v;
      v.reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) {
        if (read_gguf_type(c, what) != GgufType::Array)
          c.fail(what + ": array element " + std::to_string(i) + " is not an array");
        // The element's own type tag precedes its {type, count, items}.
        v.push_back(read_gguf_array(c, depth + 1, what));
      }
      a.items = std::move(v);
      break;
    }
  }
  return a;
}

UNICORN_DECL std::optional<uint64_t> gguf_as_unsigned(const GgufValue::Storage& s, bool& negative) {
  negative = false;
  return std::visit(
      [&](const auto& v) -> std::optional<uint64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_signed_v<T>) {
            if (v < 0) {
              negative = true;
              return std::nullopt;
            }
          }
          return static_cast<uint64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      s);
}

UNICORN_DECL std::string gguf_scalar_text(const GgufValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, bool>) return x ? "true" : "false";
        else if constexpr (std::is_arithmetic_v<X>) return std::to_string(x);
        else return "?";
      },
      v.storage());
}

}  // namespace unicorn::io::detail

namespace unicorn::io {

UNICORN_DECL std::optional<float> GgufFile::try_f32(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  // Any number converts: writers disagree on f32/f64/integer for e.g. rope bases.
  return std::visit(
      [&](const auto& x) -> float {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_arithmetic_v<X> && !std::is_same_v<X, bool>)
          return static_cast<float>(x);
        else
          wrong_type(key, *v, "a number");
      },
      v->storage());
}

UNICORN_DECL std::optional<bool> GgufFile::try_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const bool* b = v->get_if<bool>()) return *b;
  wrong_type(key, *v, "bool");
}

UNICORN_DECL std::optional<std::string> GgufFile::try_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* s = v->get_if<std::string>()) return *s;
  wrong_type(key, *v, "string");
}

UNICORN_DECL std::optional<std::vector<std::string>> GgufFile::try_string_array(
          std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* a = v->array())
    if (const auto* s = std::get_if<std::vector<std::string>>(&a->items)) return *s;
  wrong_type(key, *v, "array of string");
}

UNICORN_DECL std::optional<std::vector<float>> GgufFile::try_f32_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* a = v->array()) {
    if (const auto* f = std::get_if<std::vector<float>>(&a->items)) return *f;
    if (const auto* d = std::get_if<std::vector<double>>(&a->items))
      return std::vector<float>(d->begin(), d->end());
  }
  wrong_type(key, *v, "array of float32");
}

UNICORN_DECL std::optional<std::vector<int32_t>> GgufFile::try_i32_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const GgufArray* a = v->array();
  if (a == nullptr) wrong_type(key, *v, "array of int32");
  // Any integer element type converts when every value fits (token types are
  // int32 in llama.cpp files but other writers use other widths).
  return std::visit(
      [&](const auto& items) -> std::vector<int32_t> {
        using E = typename std::decay_t<decltype(items)>::value_type;
        if constexpr (std::is_integral_v<E> && !std::is_same_v<E, bool>) {
          std::vector<int32_t> out;
          out.reserve(items.size());
          for (size_t i = 0; i < items.size(); ++i) {
            const E x = items[i];
            if (!std::in_range<int32_t>(x))
              throw Error(name_ + ": metadata key '" + std::string(key) + "' element " +
                          std::to_string(i) + " = " + std::to_string(x) +
                          " does not fit in int32");
            out.push_back(static_cast<int32_t>(x));
          }
          return out;
        } else {
          wrong_type(key, *v, "array of int32");
        }
      },
      a->items);
}

UNICORN_DECL GgufFile GgufFile::parse(std::span<const std::byte> bytes, std::string name) {
  GgufFile g;
  g.name_ = std::move(name);
  g.bytes_ = bytes;
  detail::GgufCursor c(bytes, g.name_);

  if (bytes.size() < 4)
    c.fail("not a GGUF file (" + std::to_string(bytes.size()) + " bytes, too short for the magic)");
  const auto magic = c.read<uint32_t>("magic");
  if (magic != detail::kGgufMagic) {
    char text[64];
    std::snprintf(text, sizeof text, "not a GGUF file (magic 0x%08x, expected 0x%08x \"GGUF\")",
                  magic, detail::kGgufMagic);
    c.fail(text);
  }
  g.version_ = c.read<uint32_t>("version");
  if (g.version_ != 2 && g.version_ != 3) {
    if (g.version_ == 0x02000000u || g.version_ == 0x03000000u)
      c.fail("big-endian GGUF files are not supported");
    c.fail("unsupported GGUF version " + std::to_string(g.version_) + " (this reader reads 2 and 3)");
  }
  const auto tensor_count = c.read<uint64_t>("tensor count");
  const auto kv_count = c.read<uint64_t>("metadata count");
  // Smallest tensor info: empty name (8) + n_dims (4) + type (4) + offset (8).
  if (tensor_count > c.remaining() / 24)
    c.fail("tensor count " + std::to_string(tensor_count) + " is impossible in a file of " +
           std::to_string(bytes.size()) + " bytes");
  // Smallest key/value: empty key (8) + type (4) + a one-byte value.
  if (kv_count > c.remaining() / 13)
    c.fail("metadata count " + std::to_string(kv_count) + " is impossible in a file of " +
           std::to_string(bytes.size()) + " bytes");

  g.metadata_.reserve(static_cast<size_t>(kv_count));
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = c.read_string("metadata key #" + std::to_string(i));
    const std::string what = "metadata value '" + key + "'";
    const GgufType type = detail::read_gguf_type(c, what);
    GgufValue value = detail::read_gguf_value(c, type, 0, what);
    if (!g.kv_index_.emplace(key, g.metadata_.size()).second)
      c.fail("duplicate metadata key '" + key + "'");
    g.metadata_.push_back({std::move(key), std::move(value)});
  }

  if (g.find("general.alignment") != nullptr) {
    const uint32_t a = g.get_u32("general.alignment");
    if (a == 0 || !std::has_single_bit(a))
      c.fail("general.alignment = " + std::to_string(a) + " is not a power of two");
    g.alignment_ = a;
  }

  g.parse_tensor_infos(c, tensor_count);
  // The data section starts at the first aligned offset after the header.
  const uint64_t header_end = c.pos();
  g.data_offset_ = (header_end + g.alignment_ - 1) / g.alignment_ * g.alignment_;
  g.place_tensors();
  return g;
}

UNICORN_DECL void GgufFile::parse_tensor_infos(detail::GgufCursor& c, uint64_t count) {
  tensors_.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    GgufTensor t;
    t.name = c.read_string("tensor #" + std::to_string(i) + " name");
    const std::string what = "tensor '" + t.name + "' info";
    const auto n_dims = c.read<uint32_t>(what);
    if (n_dims > detail::kGgufMaxDims)
      c.fail("tensor '" + t.name + "' has " + std::to_string(n_dims) +
             " dimensions (at most 4)");
    t.dims = c.read_pod_array<uint64_t>(n_dims, what);
    t.ggml_type = c.read<uint32_t>(what);
    t.offset = c.read<uint64_t>(what);  // relative until place_tensors()

    t.n_elements = 1;
    for (const uint64_t d : t.dims) {
      // ggml keeps sizes in int64_t: larger values are corrupt, not big.
      if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          !detail::checked_mul(t.n_elements, d, t.n_elements) ||
          t.n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        c.fail("tensor '" + t.name + "' element count overflows");
    }
    if (const FormatInfo* f = find_format(t.ggml_type)) {
      const uint64_t ne0 = t.dims.empty() ? 1 : t.dims[0];
      if (ne0 % f->block_elems != 0)
        c.fail("tensor '" + t.name + "' has dims[0] = " + std::to_string(ne0) +
               ", not a multiple of the " + std::string(f->name) + " block size " +
               std::to_string(f->block_elems));
      const auto b = detail::tensor_bytes(*f, t.dims);
      if (!b) c.fail("tensor '" + t.name + "' byte size overflows");
      t.bytes = *b;
    } else if (ggml_type_name(t.ggml_type) == "unknown") {
      c.fail("tensor '" + t.name + "' has unknown ggml type " + std::to_string(t.ggml_type));
    } else {
      t.known_type = false;
    }
    if (!tensor_index_.emplace(t.name, tensors_.size()).second)
      c.fail("duplicate tensor name '" + t.name + "'");
    tensors_.push_back(std::move(t));
  }
}

UNICORN_DECL void GgufFile::place_tensors() {
  const uint64_t file_size = bytes_.size();
  for (GgufTensor& t : tensors_) {
    if (t.offset % alignment_ != 0)
      throw Error(name_ + ": tensor '" + t.name + "' data offset " + std::to_string(t.offset) +
                  " is not a multiple of the alignment " + std::to_string(alignment_));
    uint64_t begin = 0, end = 0;
    if (!detail::checked_add(data_offset_, t.offset, begin) ||
        !detail::checked_add(begin, t.bytes, end))
      throw Error(name_ + ": tensor '" + t.name + "' data offset " + std::to_string(t.offset) +
                  " is out of range");
    t.offset = begin;
    if (!t.known_type) continue;  // size unknown: the loader reports the type
    if (t.bytes && begin > file_size)
      throw Error(name_ + ": truncated or damaged: tensor '" + t.name + "' data offset " + std::to_string(begin - data_offset_) +
                  " points past the end of the file (its data would start at byte " + std::to_string(begin) +
                  " of " + std::to_string(file_size) + ")");
    if (end > file_size)
      throw Error(name_ + ": truncated: tensor '" + t.name + "' data ends at byte " +
                  std::to_string(end) + " but the file has " + std::to_string(file_size) +
                  " bytes");
    t.data = bytes_.subspan(static_cast<size_t>(begin), static_cast<size_t>(t.bytes));
  }
  // Two tensors sharing bytes is a damaged file (or a crafted one): refuse it.
  std::vector<const GgufTensor*> by_offset;
  for (const GgufTensor& t : tensors_)
    if (t.known_type && t.bytes) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensor& a = *by_offset[i - 1];
    const GgufTensor& b = *by_offset[i];
    if (b.offset < a.offset + a.bytes)
      throw Error(name_ + ": tensors '" + a.name + "' and '" + b.name + "' overlap: '" + a.name +
                  "' holds bytes " + std::to_string(a.offset) + " to " + std::to_string(a.offset + a.bytes) +
                  " of the file and '" + b.name + "' starts at byte " + std::to_string(b.offset));
  }
}

}  // namespace unicorn::io

namespace unicorn::io {

UNICORN_DECL GgufFile GgufFile::open(const std::filesystem::path& path) {
  MappedFile file = MappedFile::open(path);
  GgufFile g = parse(file.bytes(), path.string());
  g.file_ = std::move(file);  // the mapping does not move: spans stay valid
  return g;
}

}  // namespace unicorn::io

#endif  // UNICORN_DEFINE_HERE
