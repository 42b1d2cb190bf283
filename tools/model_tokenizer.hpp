// tools/model_tokenizer.hpp — which tokenizer a program loads beside --model,
// and the error for a model without one in the words of the programs' flags
// (the library's own names LoadOptions::tokenizer).
#pragma once

#include <filesystem>
#include <string>

#include "unicorn/base/error.hpp"
#include "unicorn/io/gguf.hpp"

namespace unicorn::tools {

inline Error no_vocabulary(const std::string& model) {
  return Error(model + " carries no vocabulary: give --tokenizer FILE (a tokenizer.json, or a GGUF that has one)");
}

// --tokenizer's file when given; else none (the model's own) when the model
// is a directory or a GGUF that carries a vocabulary; else `built_in`, the
// Gemma 3 tokenizer the build carries for its demo model (a GGUF that holds
// Gemma 3's weights without its vocabulary: the demo model, or one written
// by unicorn-convert); else none, and require_tokenizer names the flag.
inline std::string tokenizer_for_model(const std::string& model, const std::string& flag, const char* built_in) {
  if (!flag.empty() || std::filesystem::is_directory(model)) return flag;
  try {
    if (io::GgufFile::open(model).find("tokenizer.ggml.model")) return "";
  } catch (const Error&) {
    return "";  // not a GGUF that opens: the loader says why
  }
  return built_in ? built_in : "";
}

// After loading: a model that carries no vocabulary (a directory without
// tokenizer.json, a GGUF without one and no tokenizer built in) is refused
// here, before anything runs. (A tokenizer larger than the model's
// vocabulary is not: Gemma 3's has <image_soft_token> past the text model's
// rows, and the engine refuses an id it has no row for.)
template <class LoadedEngine>
void require_tokenizer(const LoadedEngine& engine, const std::string& model) {
  if (!engine.has_tokenizer()) throw no_vocabulary(model);
}

}  // namespace unicorn::tools
