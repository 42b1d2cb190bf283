// unicorn/io/safetensors.hpp — Hugging Face safetensors checkpoints, single or sharded.
//
// A .safetensors file is: u64 (little-endian) header length N | N bytes of JSON
// | data. The JSON maps each tensor name to {"dtype", "shape", "data_offsets":
// [begin, end]} with offsets relative to the start of the data; an optional
// "__metadata__" entry holds free-form strings. Shapes are row-major with the
// outermost dimension first (the reverse of GGUF's dims).
//
// Sharded checkpoints add model.safetensors.index.json, whose "weight_map"
// names the shard file of every tensor. The loader quantizes these tensors on
// the GPU; this header only maps and validates them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/io/json_file.hpp"
#include "unicorn/io/mapped_file.hpp"

namespace unicorn::io {

struct SafeTensor {
  std::string name;
  std::string dtype;             // "BF16", "F32", "F16", ... as in the file
  std::vector<uint64_t> shape;   // row-major, outermost first
  std::span<const std::byte> data;
  std::string file;              // path of the file holding the data
};

// Bytes per element of a safetensors dtype; nullopt for a dtype we do not know.
std::optional<uint32_t> safetensors_dtype_bytes(std::string_view dtype);

namespace detail {

// The reference implementation refuses headers above 100 MB; so do we, which
// also bounds the JSON we are asked to parse.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// Throws unicorn::Error("<file>: <what>"); [[noreturn]] keeps the checks below
// free of dead fall-through paths.
struct FailWith {
  const std::string& file;
  [[noreturn]] void operator()(const std::string& what) const { throw Error(file + ": " + what); }
};

// Parses one safetensors file held in `bytes`; appends its tensors (sorted by
// data offset) to `out`. `name` prefixes error messages and fills SafeTensor::file.
void parse_safetensors(std::span<const std::byte> bytes, const std::string& name,
                       std::vector<SafeTensor>& out);

}  // namespace detail

class SafetensorsModel {
 public:
  // Opens a .safetensors file, a model.safetensors.index.json, or a directory
  // holding either (the index wins when both exist).
  static SafetensorsModel open(const std::filesystem::path& dir_or_file);

  std::span<const SafeTensor> tensors() const { return tensors_; }  // shard order, then data order
  const SafeTensor* find(std::string_view name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
  }

 private:
  void add_file(const std::filesystem::path& path);
  void open_index(const std::filesystem::path& index_path);

  std::vector<MappedFile> files_;  // the spans in tensors_ point into these mappings
  std::vector<SafeTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace unicorn::io

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::io {

UNICORN_DECL std::optional<uint32_t> safetensors_dtype_bytes(std::string_view dtype) {
  struct Entry {
    std::string_view name;
    uint32_t bytes;
  };
  static constexpr Entry kDtypes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},   {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2},  {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8},  {"I64", 8},     {"U64", 8}};
  for (const auto& e : kDtypes)
    if (e.name == dtype) return e.bytes;
  return std::nullopt;
}

}  // namespace unicorn::io

namespace unicorn::io::detail {

UNICORN_DECL void parse_safetensors(std::span<const std::byte> bytes, const std::string& name,
                                    std::vector<SafeTensor>& out) {
  const FailWith fail{name};
  if (bytes.size() < 8)
    fail("truncated: " + std::to_string(bytes.size()) +
         " bytes, too short for the safetensors header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kSafetensorsMaxHeaderBytes)
    fail("header length " + std::to_string(header_len) +
         " is not sane (over 100 MB; is this a safetensors file?)");
  if (header_len > bytes.size() - 8)
    fail("truncated: the header needs " + std::to_string(header_len) +
         " bytes after byte 8 but the file has " + std::to_string(bytes.size()) + " bytes");
  const auto* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const std::span<const std::byte> data = bytes.subspan(8 + header_len);

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + header_len);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail("header is not a JSON object");

  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  const size_t first = out.size();
  for (const auto& [key, info] : header.items()) {
    if (key == "__metadata__") continue;
    const std::string t = "tensor '" + key + "'";
    if (!info.is_object()) fail(t + ": entry is not a JSON object");
    const auto dtype_it = info.find("dtype");
    const auto shape_it = info.find("shape");
    const auto offsets_it = info.find("data_offsets");
    if (dtype_it == info.end() || !dtype_it->is_string()) fail(t + ": 'dtype' missing or not a string");
    if (shape_it == info.end() || !shape_it->is_array()) fail(t + ": 'shape' missing or not an array");
    std::optional<uint64_t> begin_opt, end_opt;
    if (offsets_it != info.end() && offsets_it->is_array() && offsets_it->size() == 2) {
      begin_opt = json_to_u64((*offsets_it)[0]);
      end_opt = json_to_u64((*offsets_it)[1]);
    }
    if (!begin_opt || !end_opt) fail(t + ": 'data_offsets' must be two non-negative integers");

    SafeTensor st;
    st.name = key;
    st.file = name;
    st.dtype = dtype_it->get<std::string>();
    const auto elem_bytes = safetensors_dtype_bytes(st.dtype);
    if (!elem_bytes) fail(t + ": unknown dtype '" + st.dtype + "'");
    if (shape_it->size() > 8) fail(t + ": shape has " + std::to_string(shape_it->size()) + " dimensions");
    uint64_t numel = 1;
    for (const auto& d : *shape_it) {
      const auto dim = json_to_u64(d);
      if (!dim) fail(t + ": shape entries must be non-negative integers");
      st.shape.push_back(*dim);
      if (__builtin_mul_overflow(numel, st.shape.back(), &numel)) fail(t + ": element count overflows");
    }
    uint64_t expected = 0;
    if (__builtin_mul_overflow(numel, *elem_bytes, &expected)) fail(t + ": byte size overflows");
    const uint64_t begin = *begin_opt;
    const uint64_t end = *end_opt;
    if (begin > end)
      fail(t + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
           "] run backwards");
    if (end - begin != expected)
      fail(t + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
           "] hold " + std::to_string(end - begin) + " bytes but " + st.dtype + " of " +
           std::to_string(numel) + " elements needs " + std::to_string(expected));
    if (end > data.size())
      fail("truncated: " + t + " data ends at byte " + std::to_string(8 + header_len + end) +
           " but the file has " + std::to_string(bytes.size()) + " bytes");
    st.data = data.subspan(static_cast<size_t>(begin), static_cast<size_t>(expected));
    ranges.push_back({begin, end, out.size() - first});
    out.push_back(std::move(st));
  }

  // Overlapping data means a corrupt or hand-edited header. Empty tensors
  // occupy no bytes and cannot overlap anything.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const Range* previous = nullptr;
  for (const Range& r : ranges) {
    if (r.begin == r.end) continue;
    if (previous != nullptr && r.begin < previous->end)
      fail("tensors '" + out[first + previous->index].name + "' and '" +
           out[first + r.index].name + "' overlap in the data section");
    previous = &r;
  }

  // Keep the file's data order (nlohmann sorts keys by name).
  std::vector<SafeTensor> sorted;
  sorted.reserve(ranges.size());
  for (const Range& r : ranges) sorted.push_back(std::move(out[first + r.index]));
  std::move(sorted.begin(), sorted.end(), out.begin() + static_cast<std::ptrdiff_t>(first));
}

}  // namespace unicorn::io::detail

namespace unicorn::io {

UNICORN_DECL void SafetensorsModel::add_file(const std::filesystem::path& path) {
  MappedFile file = MappedFile::open(path);
  const size_t first = tensors_.size();
  detail::parse_safetensors(file.bytes(), path.string(), tensors_);
  files_.push_back(std::move(file));
  for (size_t i = first; i < tensors_.size(); ++i) {
    const auto [it, inserted] = index_.emplace(tensors_[i].name, i);
    if (!inserted)
      throw Error(path.string() + ": tensor '" + tensors_[i].name + "' also appears in " +
                  tensors_[it->second].file);
  }
}

UNICORN_DECL void SafetensorsModel::open_index(const std::filesystem::path& index_path) {
  const std::string where = index_path.string();
  const nlohmann::json index = read_json_file(index_path);
  if (!index.is_object()) throw Error(where + ": not a JSON object");
  const auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object())
    throw Error(where + ": 'weight_map' missing or not an object");

  // shard file name -> the tensors the index says it holds
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string())
      throw Error(where + ": weight_map entry for '" + tensor + "' is not a string");
    const auto file = shard.get<std::string>();
    // Shards live beside the index; refuse paths that would lead elsewhere.
    if (file.empty() || file.find('/') != std::string::npos ||
        file.find('\\') != std::string::npos || file == "." || file == "..")
      throw Error(where + ": shard name '" + file + "' for tensor '" + tensor +
                  "' is not a plain file name");
    shards[file].push_back(tensor);
  }
  if (shards.empty()) throw Error(where + ": weight_map is empty");

  const auto dir = index_path.parent_path();
  for (const auto& [file, names] : shards) {
    const auto shard_path = dir / file;
    std::error_code ec;
    if (!std::filesystem::exists(shard_path, ec))
      throw Error(where + ": shard '" + file + "' (holding tensor '" + names.front() +
                  "') does not exist in " + (dir.empty() ? std::string(".") : dir.string()));
    add_file(shard_path);
    for (const auto& n : names) {
      const SafeTensor* t = find(n);
      if (t == nullptr || t->file != shard_path.string())
        throw Error(where + ": weight_map puts tensor '" + n + "' in shard '" + file +
                    "' but that shard does not hold it");
    }
  }
}

UNICORN_DECL SafetensorsModel SafetensorsModel::open(const std::filesystem::path& dir_or_file) {
  SafetensorsModel m;
  std::error_code ec;
  if (std::filesystem::is_directory(dir_or_file, ec)) {
    const auto index = dir_or_file / "model.safetensors.index.json";
    const auto single = dir_or_file / "model.safetensors";
    if (std::filesystem::exists(index, ec))
      m.open_index(index);
    else if (std::filesystem::exists(single, ec))
      m.add_file(single);
    else
      throw Error(dir_or_file.string() +
                  ": no model.safetensors or model.safetensors.index.json in this directory");
  } else if (dir_or_file.string().ends_with(".json")) {
    m.open_index(dir_or_file);
  } else {
    m.add_file(dir_or_file);  // MappedFile reports a missing file
  }
  return m;
}

}  // namespace unicorn::io

#endif  // UNICORN_DEFINE_HERE
