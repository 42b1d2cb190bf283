// unicorn/io/json_file.hpp — read a whole JSON file (config.json, safetensors
// index) into nlohmann::json, with errors that name the file.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "unicorn/error.hpp"
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

}  // namespace unicorn::io
