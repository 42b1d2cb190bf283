// Fuzz target: a tokenizer.json from anywhere (Tokenizer::from_tokenizer_json_text),
// then, when it loads, encode and decode with it. Loading ends in a tokenizer
// or unicorn::Error; a tokenizer that loads encodes any text into ids of its
// own vocabulary and decodes any of its ids. The same JSON also goes through
// unicorn-convert's reading of tokenizer files (tools/gguf_metadata.hpp), as
// tokenizer.json, tokenizer_config.json and config.json at once: a vocabulary
// of the model's size with special ids inside it, or unicorn::Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../tools/gguf_metadata.hpp"
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
  const auto json = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  unicorn::fuzz::only_unicorn_errors([&] {
    constexpr uint32_t kRows = 512;  // the tiny seed's size
    const nlohmann::json no_template;
    const auto v = unicorn::tools::vocab_from_hf_json(json, &json, &json, json.is_object() && json.contains("chat_template")
                                                                              ? json["chat_template"] : no_template,
                                                      kRows, "fuzz/tokenizer.json", "fuzz/tokenizer_config.json");
    FUZZ_CHECK(v.tokens.size() == kRows && v.scores.size() == kRows && v.types.size() == kRows,
               "a vocabulary not of the model's size");
    for (const auto& [kind, id] : v.special_ids) FUZZ_CHECK(id < kRows, "a special id outside the vocabulary");
  });
  return 0;
}
