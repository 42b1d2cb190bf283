// unicorn/text/load_tokenizer.hpp — a Tokenizer from a GGUF file or a
// tokenizer.json, whichever `path` is.
//
// Kept apart from tokenizer.hpp so the tokenizer does not depend on the GGUF
// reader; the engine and the CLIs (unicorn-tokenize) call load_tokenizer.
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>

#include "unicorn/error.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::text {

// The vocabulary of an opened GGUF file. llama.cpp writes Gemma 3 as
// tokenizer.ggml.model = "llama" (SentencePiece: tokens, scores, token_type);
// GPT-2 style byte-level vocabularies are a different tokenizer and rejected.
inline Tokenizer tokenizer_from_gguf(const io::GgufFile& gguf) {
  const std::string model = gguf.try_string("tokenizer.ggml.model").value_or("");
  if (model != "llama")
    throw Error(gguf.name() + ": tokenizer.ggml.model is '" + model +
                "'; only SentencePiece vocabularies (\"llama\", as Gemma 3 GGUFs use) are supported");
  return Tokenizer::from_gguf_vocab(gguf.get_string_array("tokenizer.ggml.tokens"),
                                    gguf.try_f32_array("tokenizer.ggml.scores").value_or(std::vector<float>{}),
                                    gguf.try_i32_array("tokenizer.ggml.token_type").value_or(std::vector<int32_t>{}),
                                    gguf.try_string_array("tokenizer.ggml.merges").value_or(std::vector<std::string>{}));
}

// A GGUF file (recognised by its magic) or else a Hugging Face tokenizer.json.
inline Tokenizer load_tokenizer(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("tokenizer: cannot open " + path.string());
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0)
    return tokenizer_from_gguf(io::GgufFile::open(path));
  return Tokenizer::from_tokenizer_json(path);
}

// The tokenizer that travels with a model: inside a GGUF file, or
// tokenizer.json in a Hugging Face directory; `override_path` (a tokenizer.json
// or a GGUF) replaces it when given.
inline Tokenizer tokenizer_for(const std::filesystem::path& model, const std::filesystem::path& override_path = {}) {
  if (!override_path.empty()) return load_tokenizer(override_path);
  if (std::filesystem::is_directory(model)) return load_tokenizer(model / "tokenizer.json");
  return load_tokenizer(model);
}

}  // namespace unicorn::text
