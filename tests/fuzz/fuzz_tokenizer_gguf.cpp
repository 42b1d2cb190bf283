// Fuzz target: a tokenizer built from a GGUF file's vocabulary arrays
// (tokenizer.ggml.tokens / scores / token_type / merges), as
// text::tokenizer_from_gguf reads them. The arrays are drawn from the input
// (FuzzedDataProvider), so every run builds a vocabulary the reader could be
// handed; an input that is a whole GGUF file also goes the file's way. Loading
// ends in a tokenizer or unicorn::Error; a tokenizer that loads encodes the
// rest of the input into ids of its own vocabulary and decodes them.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz.hpp"
#include "unicorn/text/load_tokenizer.hpp"

namespace {

void exercise(const unicorn::text::Tokenizer& tok, const std::string& text) {
  const int32_t vocab = int32_t(tok.vocab_size());
  const auto ids = tok.encode(text, /*add_bos=*/false);
  for (const int32_t id : ids) FUZZ_CHECK(id >= 0 && id < vocab, "encode gave an id outside the vocabulary");
  (void)tok.decode(ids);
  (void)tok.decode(ids, /*skip_special=*/true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 4 && std::string_view(reinterpret_cast<const char*>(data), 4) == "GGUF") {
    const std::vector<std::byte> bytes = unicorn::fuzz::exact_copy(data, size);
    unicorn::fuzz::only_unicorn_errors([&] {
      exercise(unicorn::text::tokenizer_from_gguf(unicorn::io::GgufFile::parse(bytes, "fuzz.gguf")), "a b c");
    });
    return 0;
  }
  FuzzedDataProvider in(data, size);
  const size_t n = in.ConsumeIntegralInRange<size_t>(0, 96);
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  const bool with_scores = in.ConsumeBool(), with_types = in.ConsumeBool(), with_merges = in.ConsumeBool();
  for (size_t i = 0; i < n; ++i) {
    tokens.push_back(in.ConsumeRandomLengthString(8));
    if (with_scores) scores.push_back(in.ConsumeFloatingPoint<float>());
    if (with_types) types.push_back(in.ConsumeIntegralInRange<int32_t>(-1, 7));
  }
  if (with_merges)
    for (size_t i = in.ConsumeIntegralInRange<size_t>(0, 64); i > 0; --i) merges.push_back(in.ConsumeRandomLengthString(12));
  // Mismatched lengths are part of what a file can hold.
  if (in.ConsumeBool() && !scores.empty()) scores.pop_back();
  if (in.ConsumeBool() && !types.empty()) types.pop_back();
  const std::string text = in.ConsumeRemainingBytesAsString();
  unicorn::fuzz::only_unicorn_errors([&] {
    exercise(unicorn::text::Tokenizer::from_gguf_vocab(tokens, scores, types, merges), text);
  });
  return 0;
}
