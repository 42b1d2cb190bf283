// unicorn/server/data_url.hpp — the bytes of an image a client sends inline:
// an OpenAI `image_url` part's `data:` URL (RFC 2397) or an Ollama `images`
// entry (bare base64). The server fetches nothing: an http(s) URL is refused
// with a sentence saying so. Base64 is RFC 4648's standard alphabet, padding
// optional, whitespace refused (no client wraps lines in a JSON string).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "unicorn/base/error.hpp"

namespace unicorn::server {

// The decoded bytes of base64 text; throws Error naming the first bad
// character or a length no encoding has.
inline std::string decode_base64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  size_t end = text.size();
  for (int pad = 0; pad < 2 && end > 0 && text[end - 1] == '='; ++pad) --end;
  if (end % 4 == 1) throw Error("base64: " + std::to_string(end) + " characters cannot be a whole encoding");
  if (end < text.size() && text.size() % 4 != 0)
    throw Error("base64: padding '=' leaves a length that is not a multiple of 4");
  std::string out;
  out.reserve(end / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < end; ++i) {
    const int v = value(text[i]);
    if (v < 0)
      throw Error("base64: character " + std::to_string(i) + " is not of the base64 alphabet" +
                  (text[i] == '=' ? " ('=' pads only the end)" : ""));
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The bytes of a `data:[<media type>][;base64],<data>` URL. Only base64 data
// is taken (images are binary); another scheme gets an error that says the
// server fetches nothing.
inline std::string data_url_bytes(std::string_view url) {
  if (url.starts_with("http://") || url.starts_with("https://"))
    throw Error("this server fetches nothing from the network: send the image inline as a data: URL "
                "(data:image/png;base64,...)");
  if (!url.starts_with("data:"))
    throw Error("an image URL must be a data: URL (data:image/png;base64,...), not '" +
                std::string(url.substr(0, std::min<size_t>(url.size(), 24))) + "...'");
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) throw Error("a data: URL needs a ',' before its data");
  const std::string_view head = url.substr(5, comma - 5);
  if (!head.ends_with(";base64")) throw Error("a data: URL of an image must be base64 (data:image/png;base64,...)");
  return decode_base64(url.substr(comma + 1));
}

}  // namespace unicorn::server
