// unicorn/io/gguf_format.hpp — GGUF (v2/v3, little-endian) as a format: its
// layout, value types, limits and tensor sizes, which the reader (io/gguf.hpp)
// and the writer (io/gguf_writer.hpp) share.
//
// GGUF is llama.cpp's single-file model format:
//   "GGUF" | u32 version | u64 tensor_count | u64 kv_count
//   kv_count × { string key | u32 value_type | value }
//   tensor_count × { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
//   padding to general.alignment (default 32) | tensor data
// Strings are { u64 length | bytes } without a terminator; an array value is
// { u32 element_type | u64 count | elements }. Tensor offsets are relative to
// the start of the data section and are multiples of the alignment.
//
// Dimension order is ggml's: ne[0] is the innermost (contiguous) dimension, so
// a Hugging Face Linear weight of shape [out, in] is stored with dims [in, out].

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
#include "unicorn/quant/formats.hpp"

namespace unicorn::io {

static_assert(std::endian::native == std::endian::little,
              "unicorn: the GGUF reader and writer assume a little-endian host");

// GGUF metadata value types; the numeric values are the type ids in the file.
enum class GgufType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

inline constexpr uint32_t kGgufTypeCount = 13;

inline std::string_view gguf_type_name(GgufType type) {
  constexpr std::string_view kNames[kGgufTypeCount] = {
      "uint8", "int8",  "uint16", "int16", "uint32", "int32",  "float32",
      "bool",  "string", "array", "uint64", "int64", "float64"};
  const auto i = static_cast<uint32_t>(type);
  return i < kGgufTypeCount ? kNames[i] : std::string_view("unknown");
}

// Name of any ggml type id (for messages such as "type 12 (Q4_K)"), including
// those this engine cannot run. Ids retired from ggml read as "unknown".
inline std::string_view ggml_type_name(uint32_t ggml_type) {
  constexpr std::string_view kNames[] = {
      "F32",     "F16",   "Q4_0",   "Q4_1",   "unknown", "unknown", "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",  "Q2_K",   "Q3_K",   "Q4_K",    "Q5_K",    "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",  "IQ3_S",   "IQ2_S", "IQ4_XS",
      "I8",      "I16",   "I32",    "I64",    "F64",     "IQ1_M",   "BF16",  "unknown",
      "unknown", "unknown", "TQ1_0", "TQ2_0", "unknown", "unknown", "unknown", "MXFP4"};
  return ggml_type < std::size(kNames) ? kNames[ggml_type] : std::string_view("unknown");
}

struct GgufArray;

// The element types an array can hold, indexed like GgufType.
template <class T>
concept GgufArrayElement =
    std::same_as<T, uint8_t> || std::same_as<T, int8_t> || std::same_as<T, uint16_t> ||
    std::same_as<T, int16_t> || std::same_as<T, uint32_t> || std::same_as<T, int32_t> ||
    std::same_as<T, float> || std::same_as<T, bool> || std::same_as<T, std::string> ||
    std::same_as<T, GgufArray> || std::same_as<T, uint64_t> || std::same_as<T, int64_t> ||
    std::same_as<T, double>;

// A typed array: one std::vector per element type (compact for the 262k-entry
// tokenizer arrays). Arrays of arrays hold GgufArrays of any element type.
struct GgufArray {
  using Items =
      std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                   std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                   std::vector<float>, std::vector<bool>, std::vector<std::string>,
                   std::vector<GgufArray>, std::vector<uint64_t>, std::vector<int64_t>,
                   std::vector<double>>;
  Items items;

  GgufType elem_type() const { return static_cast<GgufType>(items.index()); }
  size_t size() const {
    return std::visit([](const auto& v) { return v.size(); }, items);
  }
  bool operator==(const GgufArray&) const = default;
};

// One metadata value. Implicit constructors let the writer take plain values:
// set("n", uint32_t{26}), set("name", "gemma"), set("tokens", std::vector<std::string>{...}).
class GgufValue {
 public:
  // Alternatives in GgufType order, so storage().index() is the type id.
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float,
                               bool, std::string, GgufArray, uint64_t, int64_t, double>;

  GgufValue(uint8_t v) : v_(v) {}
  GgufValue(int8_t v) : v_(v) {}
  GgufValue(uint16_t v) : v_(v) {}
  GgufValue(int16_t v) : v_(v) {}
  GgufValue(uint32_t v) : v_(v) {}
  GgufValue(int32_t v) : v_(v) {}
  GgufValue(float v) : v_(v) {}
  GgufValue(bool v) : v_(v) {}
  GgufValue(std::string v) : v_(std::move(v)) {}
  GgufValue(std::string_view v) : v_(std::string(v)) {}
  GgufValue(const char* v) : v_(std::string(v)) {}
  GgufValue(GgufArray v) : v_(std::move(v)) {}
  GgufValue(uint64_t v) : v_(v) {}
  GgufValue(int64_t v) : v_(v) {}
  GgufValue(double v) : v_(v) {}
  template <GgufArrayElement T>
  GgufValue(std::vector<T> v) : v_(GgufArray{std::move(v)}) {}

  GgufType type() const { return static_cast<GgufType>(v_.index()); }
  const Storage& storage() const { return v_; }
  template <class T>
  const T* get_if() const { return std::get_if<T>(&v_); }
  const GgufArray* array() const { return get_if<GgufArray>(); }

  // "string", "uint32", "array of float32", ... for messages.
  std::string type_description() const {
    if (const auto* a = array()) return "array of " + std::string(gguf_type_name(a->elem_type()));
    return std::string(gguf_type_name(type()));
  }
  bool operator==(const GgufValue&) const = default;

 private:
  Storage v_;
};

struct GgufKv {
  std::string key;
  GgufValue value;
};

struct GgufTensor {
  std::string name;
  uint32_t ggml_type = 0;
  std::vector<uint64_t> dims;  // ne[0] innermost, as in GGUF
  uint64_t n_elements = 0;
  uint64_t offset = 0;  // absolute file offset of the data
  uint64_t bytes = 0;   // 0 when !known_type
  std::span<const std::byte> data;  // empty when !known_type
  // False for ggml types outside quant/formats.hpp (K-quants, IQ*, ...): the
  // tensor is listed so the loader can name it and its type, but its size and
  // data are unknown to this reader.
  bool known_type = true;
};

namespace detail {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint32_t kGgufMaxDims = 4;        // GGML_MAX_DIMS
inline constexpr uint32_t kGgufMaxNameBytes = 63;  // GGML_MAX_NAME - 1 (llama.cpp limit)
inline constexpr int kGgufMaxArrayDepth = 8;       // bounds recursion on hostile input

// Smallest encoding of one element of each type; caps array counts by the
// bytes left so a hostile count cannot make us allocate beyond the file size.
inline constexpr uint64_t gguf_min_encoded_size(GgufType t) {
  switch (t) {
    case GgufType::UInt8: case GgufType::Int8: case GgufType::Bool: return 1;
    case GgufType::UInt16: case GgufType::Int16: return 2;
    case GgufType::UInt32: case GgufType::Int32: case GgufType::Float32: return 4;
    case GgufType::UInt64: case GgufType::Int64: case GgufType::Float64: return 8;
    case GgufType::String: return 8;   // u64 length
    case GgufType::Array: return 12;   // u32 type + u64 count
  }
  return 1;
}

inline bool checked_mul(uint64_t a, uint64_t b, uint64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}
inline bool checked_add(uint64_t a, uint64_t b, uint64_t& out) {
  return !__builtin_add_overflow(a, b, &out);
}

// Bytes of a tensor of a known format, or nullopt on a size overflow.
// Precondition: dims[0] is a multiple of the block size.
inline std::optional<uint64_t> tensor_bytes(const FormatInfo& f,
                                             std::span<const uint64_t> dims) {
  uint64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i)
    if (!checked_mul(rows, dims[i], rows)) return std::nullopt;
  const uint64_t ne0 = dims.empty() ? 1 : dims[0];
  uint64_t row = 0, total = 0;
  if (!checked_mul(ne0 / f.block_elems, f.block_bytes, row) || !checked_mul(row, rows, total))
    return std::nullopt;
  return total;
}

}  // namespace detail

}  // namespace unicorn::io
