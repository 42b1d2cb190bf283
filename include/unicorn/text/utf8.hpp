// unicorn/text/utf8.hpp — UTF-8 validation and repair for the tokenizer.
//
// The reference tokenizer (Hugging Face's, in Python or JavaScript) only ever
// sees text strings, never raw bytes; bytes become a string through a UTF-8
// decoder that replaces each invalid sequence by U+FFFD. We define our byte
// interface the same way and follow the WHATWG Encoding Standard decoder
// exactly (what JavaScript's TextDecoder does): one U+FFFD per maximal
// subpart of an ill-formed sequence. Tokenizer::encode repairs its input with
// it, Tokenizer::decode repairs byte-fallback runs with it, and StreamDecoder
// runs it incrementally so a stream never shows half a character.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace unicorn::text {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Incremental WHATWG UTF-8 decoder that writes UTF-8 back out: valid
// sequences pass through byte for byte, ill-formed ones become U+FFFD. It
// holds at most three bytes of an incomplete sequence between calls.
class Utf8Repairer {
 public:
  // Appends to `out` everything `bytes` completes; keeps an unfinished tail.
  void push(std::string_view bytes, std::string& out) {
    for (const char c : bytes) push_byte(static_cast<unsigned char>(c), out);
  }

  // End of input: an unfinished sequence is one U+FFFD.
  void finish(std::string& out) {
    if (needed_ != 0) out += kReplacementChar;
    reset();
  }

  bool has_pending() const { return needed_ != 0; }

 private:
  void push_byte(unsigned char b, std::string& out) {
    if (needed_ == 0) {
      if (b <= 0x7F) {
        out.push_back(static_cast<char>(b));
      } else if (b >= 0xC2 && b <= 0xDF) {
        start(b, 1);
      } else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) lower_ = 0xA0;  // overlong
        if (b == 0xED) upper_ = 0x9F;  // surrogates
        start(b, 2);
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) lower_ = 0x90;  // overlong
        if (b == 0xF4) upper_ = 0x8F;  // above U+10FFFF
        start(b, 3);
      } else {
        out += kReplacementChar;
      }
      return;
    }
    if (b < lower_ || b > upper_) {
      // The sequence so far is a maximal subpart: replace it, then look at
      // this byte again as the possible start of a new sequence.
      reset();
      out += kReplacementChar;
      push_byte(b, out);
      return;
    }
    lower_ = 0x80;
    upper_ = 0xBF;
    pending_[seen_++] = static_cast<char>(b);
    if (seen_ == needed_ + 1) {
      out.append(pending_, seen_);
      reset();
    }
  }

  void start(unsigned char lead, int continuation_bytes) {
    needed_ = continuation_bytes;
    pending_[0] = static_cast<char>(lead);
    seen_ = 1;
  }

  void reset() {
    needed_ = 0;
    seen_ = 0;
    lower_ = 0x80;
    upper_ = 0xBF;
  }

  char pending_[4] = {};
  int needed_ = 0;  // continuation bytes the current sequence needs in all
  int seen_ = 0;    // bytes of the current sequence held in pending_
  unsigned char lower_ = 0x80;
  unsigned char upper_ = 0xBF;
};

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or values
// above U+10FFFF). Fast path for ASCII.
inline bool is_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char b = *p;
    if (b < 0x80) {
      ++p;
      continue;
    }
    int n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      n = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      n = 2;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      n = 3;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (end - p <= n) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i <= n; ++i) {
      if (p[i] < 0x80 || p[i] > 0xBF) return false;
    }
    p += n + 1;
  }
  return true;
}

// `s` with every ill-formed sequence replaced by U+FFFD, as TextDecoder does.
inline std::string repair_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  Utf8Repairer r;
  r.push(s, out);
  r.finish(out);
  return out;
}

// Length in bytes of the UTF-8 sequence led by `lead`, for well-formed text.
inline int utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Code point of the well-formed sequence at `p` (length from utf8_length).
inline uint32_t utf8_decode(const char* p, int len) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  switch (len) {
    case 1: return u[0];
    case 2: return (uint32_t{u[0] & 0x1Fu} << 6) | (u[1] & 0x3Fu);
    case 3: return (uint32_t{u[0] & 0x0Fu} << 12) | (uint32_t{u[1] & 0x3Fu} << 6) | (u[2] & 0x3Fu);
    default:
      return (uint32_t{u[0] & 0x07u} << 18) | (uint32_t{u[1] & 0x3Fu} << 12) |
             (uint32_t{u[2] & 0x3Fu} << 6) | (u[3] & 0x3Fu);
  }
}

}  // namespace unicorn::text
