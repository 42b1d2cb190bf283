// unicorn/text/load_tokenizer.hpp — a Tokenizer from a GGUF file or a
// tokenizer.json, whichever `path` is.
//
// Kept apart from tokenizer.hpp so the tokenizer does not depend on the GGUF
// reader; the engine and the CLIs (unicorn-tokenize) call load_tokenizer.
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "unicorn/error.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/linkage.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::text {

// The vocabulary of an opened GGUF file. llama.cpp writes Gemma 3 as
// tokenizer.ggml.model = "llama" (SentencePiece: tokens, scores, token_type);
// GPT-2 style byte-level vocabularies are a different tokenizer and rejected.
Tokenizer tokenizer_from_gguf(const io::GgufFile& gguf);

// A GGUF file (recognised by its magic) or else a Hugging Face tokenizer.json.
Tokenizer load_tokenizer(const std::filesystem::path& path);

// The tokenizer that travels with a model, if it carries one: the vocabulary
// inside a GGUF file (tokenizer.ggml.* keys), or tokenizer.json in a Hugging
// Face directory. A vocabulary that is there but unreadable is an error.
std::optional<Tokenizer> model_tokenizer(const std::filesystem::path& model);

// The model's own tokenizer, or `override_path` (a tokenizer.json or a GGUF)
// when given; an error when there is neither.
Tokenizer tokenizer_for(const std::filesystem::path& model, const std::filesystem::path& override_path = {});

}  // namespace unicorn::text

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::text {

UNICORN_DECL Tokenizer tokenizer_from_gguf(const io::GgufFile& gguf) {
  const std::string model = gguf.try_string("tokenizer.ggml.model").value_or("");
  if (model != "llama")
    throw Error(gguf.name() + ": tokenizer.ggml.model is '" + model +
                "'; only SentencePiece vocabularies (\"llama\", as Gemma 3 GGUFs use) are supported");
  return Tokenizer::from_gguf_vocab(gguf.get_string_array("tokenizer.ggml.tokens"),
                                    gguf.try_f32_array("tokenizer.ggml.scores").value_or(std::vector<float>{}),
                                    gguf.try_i32_array("tokenizer.ggml.token_type").value_or(std::vector<int32_t>{}),
                                    gguf.try_string_array("tokenizer.ggml.merges").value_or(std::vector<std::string>{}));
}

UNICORN_DECL Tokenizer load_tokenizer(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("tokenizer: cannot open " + path.string());
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0)
    return tokenizer_from_gguf(io::GgufFile::open(path));
  return Tokenizer::from_tokenizer_json(path);
}

UNICORN_DECL std::optional<Tokenizer> model_tokenizer(const std::filesystem::path& model) {
  if (std::filesystem::is_directory(model)) {
    if (!std::filesystem::exists(model / "tokenizer.json")) return std::nullopt;
    return Tokenizer::from_tokenizer_json(model / "tokenizer.json");
  }
  const auto gguf = io::GgufFile::open(model);
  if (!gguf.try_string("tokenizer.ggml.model")) return std::nullopt;
  return tokenizer_from_gguf(gguf);
}

UNICORN_DECL Tokenizer tokenizer_for(const std::filesystem::path& model, const std::filesystem::path& override_path) {
  if (!override_path.empty()) return load_tokenizer(override_path);
  if (auto tok = model_tokenizer(model)) return std::move(*tok);
  throw Error(model.string() + " carries no vocabulary (" +
              (std::filesystem::is_directory(model) ? "no tokenizer.json" : "no tokenizer.ggml.* keys") +
              "): give a tokenizer.json or a GGUF that has one (--tokenizer)");
}

}  // namespace unicorn::text

#endif  // UNICORN_DEFINE_HERE
