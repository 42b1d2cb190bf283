// unicorn/text/stream_decoder.hpp — token ids to text as they are generated,
// never printing half of a character whose bytes are split across tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "unicorn/text/tokenizer.hpp"
#include "unicorn/text/utf8.hpp"

namespace unicorn::text {

// Feeds ids one at a time and returns only text whose UTF-8 is complete, so a
// character split across byte tokens is never printed in halves. The
// concatenation of every feed() and the final flush() equals decode(ids).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(&tokenizer), skip_special_(skip_special) {}

  std::string feed(int32_t id) {
    std::string out;
    const std::string_view bytes = tokenizer_->token_bytes(id);
    if (skip_special_ && tokenizer_->is_special(id)) return out;
    repairer_.push(bytes, out);
    return out;
  }

  // End of the stream: an unfinished character becomes U+FFFD.
  std::string flush() {
    std::string out;
    repairer_.finish(out);
    return out;
  }

  // True while a character is waiting for more bytes.
  bool has_pending() const { return repairer_.has_pending(); }

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  Utf8Repairer repairer_;
};

}  // namespace unicorn::text
