// tools/ollama_env.hpp — where the programs look up `--model ollama:NAME`:
// Ollama's own default store, from the environment as Ollama reads it (the
// library takes the root as a value: io/ollama.hpp). Kept apart from
// tuning_env.hpp so a test of it needs no Vulkan headers.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "unicorn/base/error.hpp"
#include "unicorn/io/ollama.hpp"

namespace unicorn::tools {

// Ollama's store root as Ollama finds it: $OLLAMA_MODELS (trimmed of spaces
// and quotes, as its envconfig.Var does), else $HOME/.ollama/models.
inline std::filesystem::path ollama_store_root() {
  std::string models;
  if (const char* v = std::getenv("OLLAMA_MODELS")) models = v;
  const auto trim = [&](std::string_view chars) {
    const size_t b = models.find_first_not_of(chars);
    if (b == std::string::npos) return models.clear();
    models = models.substr(b, models.find_last_not_of(chars) - b + 1);
  };
  trim(" \t\r\n");
  trim("\"'");
  if (!models.empty()) return models;
  const char* home = std::getenv("HOME");
  if (!home || !*home) throw Error("ollama: neither OLLAMA_MODELS nor HOME is set, so Ollama's store cannot be found");
  return std::filesystem::path(home) / ".ollama" / "models";
}

// What a --model argument names on disk: the blob for "ollama:NAME" in
// Ollama's store (io/ollama.hpp), else the argument itself.
inline std::string resolve_model_path(const std::string& model) {
  if (!std::string_view(model).starts_with(io::kOllamaPrefix)) return model;
  return io::ollama_model_blob(ollama_store_root(), model).string();
}

}  // namespace unicorn::tools
