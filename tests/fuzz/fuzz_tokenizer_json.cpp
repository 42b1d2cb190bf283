// Fuzz target: a tokenizer.json from anywhere (Tokenizer::from_tokenizer_json_text),
// then, when it loads, encode and decode with it. Loading ends in a tokenizer
// or unicorn::Error; a tokenizer that loads encodes any text into ids of its
// own vocabulary and decodes any of its ids.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz.hpp"
#include "unicorn/text/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  unicorn::fuzz::only_unicorn_errors([&] {
    const auto tok = unicorn::text::Tokenizer::from_tokenizer_json_text(text, "fuzz/tokenizer.json");
    const int32_t vocab = int32_t(tok.vocab_size());
    for (const std::string_view sample : {std::string_view("Hello world, <bos>caf\xc3\xa9 \xf0\x9f\xa6\x84!"),
                                          text.substr(0, 256)}) {
      const auto ids = tok.encode(sample);
      for (const int32_t id : ids) FUZZ_CHECK(id >= 0 && id < vocab, "encode gave an id outside the vocabulary");
      (void)tok.decode(ids);
    }
    std::vector<int32_t> every;
    for (int32_t id = 0; id < vocab && id < 4096; ++id) every.push_back(id);
    (void)tok.decode(every);
    (void)tok.decode(every, /*skip_special=*/true);
  });
  return 0;
}
