// unicorn/text/text_stream.hpp — chosen tokens in, text out as it becomes
// final: UTF-8 completed across byte tokens, special tokens skipped, and text
// that might be the start of a stop string held back until it is known not to
// be. The generator's loop (generate.hpp) and the server's scheduler (one per
// slot, server/scheduler.hpp) both stream text through it.
#pragma once

#include <string>
#include <vector>

#include "unicorn/text/stream_decoder.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::text {

class TextStream {
 public:
  TextStream(const Tokenizer& tok, std::vector<std::string> stop)
      : decoder_(tok, /*skip_special=*/true), stop_(std::move(stop)) {
    std::erase_if(stop_, [](const std::string& s) { return s.empty(); });
  }

  // Adds a token; returns the text that is final now. Once a stop string
  // appears, stopped() is true and what comes before it is the last text.
  std::string push(int32_t token) { return take(decoder_.feed(token), false); }
  // The end of generation: whatever is still held (an unfinished character
  // becomes U+FFFD, as StreamDecoder::flush says).
  std::string finish() { return stopped_ ? std::string() : take(decoder_.flush(), true); }
  bool stopped() const { return stopped_; }

 private:
  std::string take(std::string text, bool final) {
    if (stopped_) return {};
    held_ += text;
    size_t first = std::string::npos;  // the earliest stop string in what is held
    for (const auto& s : stop_) first = std::min(first, held_.find(s));
    if (first != std::string::npos) {
      stopped_ = true;
      std::string out = held_.substr(0, first);
      held_.clear();
      return out;
    }
    size_t keep = 0;  // the longest tail of what is held that starts some stop string
    if (!final)
      for (const auto& s : stop_)
        for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
          if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
            keep = n;
            break;
          }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }

  StreamDecoder decoder_;
  std::vector<std::string> stop_;
  std::string held_;  // decoded text not yet shown (a possible stop-string prefix)
  bool stopped_ = false;
};

}  // namespace unicorn::text
