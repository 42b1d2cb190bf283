// unicorn/text/load_tokenizer.hpp — a Tokenizer from a GGUF file or a
// tokenizer.json, whichever `path` is.
//
// Kept apart from tokenizer.hpp so the tokenizer does not depend on the GGUF
// reader; the engine and the CLIs (unicorn-tokenize) call load_tokenizer.
#pragma once

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::text {

// A special token id a GGUF file may name, and the token texts this engine
// takes it to be: the engine finds <bos>, <eos>, <end_of_turn>, <unk> and
// <pad> by their text, so a file whose id names another token would be run
// with a meaning it did not intend. No texts: any token of the vocabulary.
struct GgufSpecialToken {
  std::string_view key;
  std::array<std::string_view, 2> texts;
};
inline constexpr GgufSpecialToken kGgufSpecialTokens[] = {
    {"tokenizer.ggml.bos_token_id", {"<bos>"}},
    {"tokenizer.ggml.eos_token_id", {"<eos>", "<end_of_turn>"}},  // -it files may end on the turn
    {"tokenizer.ggml.unknown_token_id", {"<unk>"}},
    {"tokenizer.ggml.padding_token_id", {"<pad>"}},
    {"tokenizer.ggml.seperator_token_id", {}},  // (llama.cpp's spelling)
    {"tokenizer.ggml.cls_token_id", {}},
    {"tokenizer.ggml.mask_token_id", {}},
};

// Throws naming the first tokenizer.ggml.* value of `gguf` that this engine
// would run with another meaning than the file's: a model other than "llama";
// an entry check_gguf_entries refuses; a special token id (kGgufSpecialTokens) past the
// vocabulary (its size: the tokens, else `rows`, the embedding's) or naming
// another token; add_bos_token false or add_eos_token true (Gemma 3's prompts
// start with <bos> and end without <eos>, and the engine builds them so).
// A file without these keys passes: it carries no vocabulary.
void check_gguf_vocabulary(const io::GgufFile& gguf, uint64_t rows);

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
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::text {

UNICORN_DECL void check_gguf_vocabulary(const io::GgufFile& gguf, uint64_t rows) {
  const std::string& file = gguf.name();
  if (const auto model = gguf.try_string("tokenizer.ggml.model"); model && *model != "llama")
    throw Error(file + ": tokenizer.ggml.model is '" + *model +
                "'; only SentencePiece vocabularies (\"llama\", as Gemma 3 GGUFs use) are supported");
  const std::vector<std::string>* tokens = nullptr;
  if (const io::GgufValue* v = gguf.find("tokenizer.ggml.tokens")) {
    const io::GgufArray* a = v->array();
    tokens = a ? std::get_if<std::vector<std::string>>(&a->items) : nullptr;
    if (!tokens) throw Error(file + ": tokenizer.ggml.tokens has type " + v->type_description() + ", expected array of string");
  }
  check_gguf_entries(tokens ? std::span<const std::string>(*tokens) : std::span<const std::string>(),
                     gguf.try_i32_array("tokenizer.ggml.token_type").value_or(std::vector<int32_t>{}),
                     gguf.try_f32_array("tokenizer.ggml.scores").value_or(std::vector<float>{}), file + ":");
  const uint64_t size = tokens ? tokens->size() : rows;
  for (const GgufSpecialToken& s : kGgufSpecialTokens) {
    const auto id = gguf.try_u32(s.key);
    if (!id) continue;
    if (*id >= size)
      throw Error(file + ": " + std::string(s.key) + " is " + std::to_string(*id) + ", past the vocabulary's " +
                  std::to_string(size) + " tokens");
    if (!tokens || s.texts[0].empty()) continue;
    const std::string& text = (*tokens)[*id];
    if (text != s.texts[0] && text != s.texts[1])
      throw Error(file + ": " + std::string(s.key) + " is " + std::to_string(*id) + ", the token '" + text +
                  "'; this engine takes it to be " + std::string(s.texts[0]) +
                  (s.texts[1].empty() ? "" : " or " + std::string(s.texts[1])));
  }
  if (gguf.try_bool("tokenizer.ggml.add_bos_token") == false)
    throw Error(file + ": tokenizer.ggml.add_bos_token is false; Gemma 3's prompts begin with <bos>, "
                "and this engine's do");
  if (gguf.try_bool("tokenizer.ggml.add_eos_token") == true)
    throw Error(file + ": tokenizer.ggml.add_eos_token is true; Gemma 3's prompts end without <eos>, "
                "and this engine's do");
}

UNICORN_DECL Tokenizer tokenizer_from_gguf(const io::GgufFile& gguf) {
  const std::string model = gguf.try_string("tokenizer.ggml.model").value_or("");
  if (model != "llama")
    throw Error(gguf.name() + ": tokenizer.ggml.model is '" + model +
                "'; only SentencePiece vocabularies (\"llama\", as Gemma 3 GGUFs use) are supported");
  check_gguf_vocabulary(gguf, 0);
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
