// Fuzz target: structured output's grammars (unicorn/grammar), from a
// request's GBNF text or JSON schema. The first byte picks which (even: GBNF,
// odd: a JSON schema converted to GBNF); the rest is the text. Then a short
// walk over the small test tokenizer's vocabulary (UNICORN_TINY_TOKENIZER),
// choosing allowed tokens by the input's bytes. Properties:
//   - bad input ends only in unicorn::Error;
//   - a schema that converts gives GBNF that compiles, unless the schema
//     refers to itself before any character (then left recursion, an Error);
//   - every mask bit is what the token's own bytes say (Matcher::allows), the
//     end tokens are allowed exactly when the grammar is complete, and an
//     allowed token is accepted;
//   - a walk over a schema's grammar that completes is JSON nlohmann parses.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz.hpp"
#include "unicorn/grammar/grammar.hpp"
#include "unicorn/grammar/json_schema.hpp"
#include "unicorn/grammar/matcher.hpp"
#include "unicorn/grammar/vocabulary.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace {

const std::shared_ptr<const unicorn::grammar::Vocabulary>& vocabulary() {
  static const auto v = [] {
    const char* path = std::getenv("UNICORN_TINY_TOKENIZER");
    if (!path) {
      std::fprintf(stderr, "fuzz_grammar: set UNICORN_TINY_TOKENIZER to tests/server/fixtures/tiny_tokenizer.json\n");
      std::exit(2);
    }
    return unicorn::grammar::Vocabulary::from_tokenizer(unicorn::text::Tokenizer::from_tokenizer_json(path));
  }();
  return v;
}

void walk(const std::shared_ptr<const unicorn::grammar::Grammar>& g, const uint8_t* choices, size_t n, bool json) {
  const auto& v = vocabulary();
  unicorn::grammar::Matcher m(g, v);
  std::vector<uint32_t> words((v->size() + 31) / 32 + 1);
  std::string text;
  for (size_t step = 0; step < 24; ++step) {
    m.allowed_tokens(words);
    std::vector<int32_t> allowed;
    for (size_t id = 0; id < v->size(); ++id) {
      const bool on = (words[id / 32] >> (id % 32)) & 1;
      FUZZ_CHECK(on == m.allows(int32_t(id)), "a mask bit differs from the token's own bytes");
      if (on && !v->is_end(int32_t(id))) allowed.push_back(int32_t(id));
    }
    FUZZ_CHECK(words.back() == 0, "a mask bit past the vocabulary");
    FUZZ_CHECK(((words[size_t(v->eos_id()) / 32] >> (v->eos_id() % 32)) & 1) == m.complete(),
               "the end token is not allowed exactly when the grammar is complete");
    if (allowed.empty() || (n > 0 && choices[step % n] == 0xFF && m.complete())) break;
    const int32_t id = allowed[(n ? choices[step % n] * 7919u + step : step) % allowed.size()];
    FUZZ_CHECK(m.accept(id), "an allowed token was refused");
    text += v->token_bytes(id);
  }
  if (json && m.complete()) {
    try {
      (void)nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      std::fprintf(stderr, "walk: %s\nnlohmann::json: %s\n", text.c_str(), e.what());
      FUZZ_CHECK(false, "a complete walk over a schema's grammar is not JSON");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)vocabulary();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool schema = data[0] & 1;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string gbnf = text;
  if (schema) {
    nlohmann::ordered_json j;
    try {
      j = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception&) {
      return 0;
    }
    try {
      gbnf = unicorn::grammar::gbnf_from_json_schema(j);
    } catch (const unicorn::Error&) {
      return 0;
    }
  }
  std::shared_ptr<const unicorn::grammar::Grammar> g;
  try {
    g = unicorn::grammar::compile_gbnf(gbnf);
  } catch (const unicorn::Error& e) {
    FUZZ_CHECK(!schema || std::string(e.what()).find("can reach itself") != std::string::npos,
               "a converted schema's GBNF does not compile");
    return 0;
  }
  // The walk's choices: the input's bytes from the end.
  std::vector<uint8_t> choices(data, data + size);
  std::reverse(choices.begin(), choices.end());
  unicorn::fuzz::only_unicorn_errors([&] { walk(g, choices.data(), choices.size(), schema); });
  return 0;
}
