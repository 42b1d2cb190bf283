// unicorn/io/json_file.hpp — read a whole JSON file (config.json, safetensors
// index) into nlohmann::json, with errors that name the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "unicorn/base/error.hpp"
#include "unicorn/io/mapped_file.hpp"

namespace unicorn::io {

inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  const MappedFile file = MappedFile::open(path);
  const auto* text = reinterpret_cast<const char*>(file.bytes().data());
  try {
    return nlohmann::json::parse(text, text + file.size());
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not valid JSON: " + e.what());
  }
}

// A non-negative JSON integer as uint64. Parsed text yields "unsigned" numbers
// but values built in code (tests, tools) are "integer" ones; accept both.
inline std::optional<uint64_t> json_to_u64(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

}  // namespace unicorn::io
