// Fuzz target: the real Gemma 3 tokenizer (262,144 tokens, from the npm
// package; UNICORN_GEMMA3_TOKENIZER_JSON names its tokenizer.json) on any
// bytes, as prompts, request bodies and stop strings reach it. Properties:
//   - every id encode() gives is in the vocabulary;
//   - decode(encode(s)) == s for valid UTF-8 without a literal U+2581 (which
//     comes back as " ", as from the reference tokenizer);
//   - ids decoded a token at a time (StreamDecoder) give decode()'s text;
//   - the text TextStream lets out is the decoded text up to the first stop string.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz.hpp"
#include "unicorn/text/text_stream.hpp"
#include "unicorn/text/stream_decoder.hpp"
#include "unicorn/text/tokenizer.hpp"
#include "unicorn/text/utf8.hpp"

namespace {

const unicorn::text::Tokenizer& gemma3() {
  static const unicorn::text::Tokenizer tok = [] {
    const char* path = std::getenv("UNICORN_GEMMA3_TOKENIZER_JSON");
    if (!path) {
      std::fprintf(stderr, "fuzz_tokenize: set UNICORN_GEMMA3_TOKENIZER_JSON to Gemma 3's tokenizer.json\n");
      std::exit(2);
    }
    return unicorn::text::Tokenizer::from_tokenizer_json(path);
  }();
  return tok;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)gemma3();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& tok = gemma3();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int32_t vocab = int32_t(tok.vocab_size());

  const auto ids = tok.encode(text, /*add_bos=*/size % 2 == 0);
  for (const int32_t id : ids) FUZZ_CHECK(id >= 0 && id < vocab, "encode gave an id outside the vocabulary");
  if (unicorn::text::is_valid_utf8(text) && text.find(unicorn::text::kSpaceMarker) == std::string::npos) {
    const auto plain = tok.encode(text);
    FUZZ_CHECK(tok.decode(plain) == text, "decode(encode(s)) != s for valid UTF-8");
  }

  // The input's bytes, three at a time, as token ids (any id a model may choose).
  std::vector<int32_t> chosen;
  for (size_t i = 0; i + 2 < size; i += 3)
    chosen.push_back(int32_t(uint32_t(data[i] | data[i + 1] << 8 | data[i + 2] << 16) % uint32_t(vocab)));
  unicorn::text::StreamDecoder stream(tok);
  std::string streamed;
  for (const int32_t id : chosen) streamed += stream.feed(id);
  streamed += stream.flush();
  FUZZ_CHECK(streamed == tok.decode(chosen), "token-at-a-time decoding differs from decode()");

  // A stop string: the input's first few bytes (when they are whole text).
  const std::string stop = text.substr(0, size % 7);
  unicorn::text::TextStream out(tok, {stop});
  std::string shown;
  for (const int32_t id : chosen) {
    shown += out.push(id);
    if (out.stopped()) break;
  }
  shown += out.finish();
  const std::string all = tok.decode(chosen, /*skip_special=*/true);
  const size_t cut = stop.empty() ? std::string::npos : all.find(stop);
  FUZZ_CHECK(shown == all.substr(0, cut), "TextStream's text is not the decoded text up to the stop string");
  return 0;
}
