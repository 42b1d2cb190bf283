// unicorn/text/chat_template.hpp — Gemma 3's chat format.
//
// A hand translation of the Jinja chat_template in Gemma 3's
// tokenizer_config.json, checked against that template rendered by
// @huggingface/jinja (tests/tokenizer):
//   <bos><start_of_turn>user\n{system}\n\n{user}<end_of_turn>\n
//   <start_of_turn>model\n{assistant}<end_of_turn>\n ... [<start_of_turn>model\n]
// A leading system message is folded into the first turn (Gemma has no
// system role); "assistant" is written "model"; turn contents are trimmed,
// the system prompt is not. The result is text: encode it with
// add_bos = false, since it already starts with "<bos>".
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"

namespace unicorn::text {

// Where an image stands in a message's content, as Gemma 3's template writes
// an image part; the prompt's builder (generation/) puts the image's soft
// tokens there.
inline constexpr std::string_view kImageMarker = "<start_of_image>";

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (or "model")
  std::string content;
  // Encoded image files (PNG, JPEG, ...), one for each kImageMarker in
  // content, in the order they appear.
  std::vector<std::string> images = {};
};

namespace detail {

// Jinja's `trim` filter as @huggingface/jinja runs it: JavaScript's
// String.prototype.trim, i.e. Unicode White_Space plus U+FEFF. (Python's
// str.strip differs only on U+FEFF and U+001C..U+001F.)
size_t js_space_length(std::string_view s, size_t i);

std::string_view js_trim(std::string_view s);

}  // namespace detail

// One turn as the template writes it, contents already trimmed:
// "<start_of_turn>{role}\n{content}<end_of_turn>\n".
std::string render_turn(std::string_view role, std::string_view content);
// What opens the model's turn: the template's generation prompt.
inline constexpr std::string_view kModelTurnOpening = "<start_of_turn>model\n";

// Renders a conversation as Gemma 3's template does. Roles must alternate
// user/assistant after an optional leading system message, or this throws
// (the template raises the same error).
std::string render_chat(std::span<const ChatMessage> messages, bool add_generation_prompt);

}  // namespace unicorn::text

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::text::detail {

UNICORN_DECL size_t js_space_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const size_t left = s.size() - i;
  if (b(0) == ' ' || (b(0) >= 0x09 && b(0) <= 0x0D)) return 1;
  if (left >= 2 && b(0) == 0xC2 && b(1) == 0xA0) return 2;  // U+00A0
  if (left >= 3) {
    const uint32_t cp = (uint32_t{b(0)} << 16) | (uint32_t{b(1)} << 8) | b(2);
    if (cp == 0xE19A80) return 3;                         // U+1680
    if (cp >= 0xE28080 && cp <= 0xE2808A) return 3;       // U+2000..U+200A
    if (cp == 0xE280A8 || cp == 0xE280A9) return 3;       // U+2028, U+2029
    if (cp == 0xE280AF || cp == 0xE2819F) return 3;       // U+202F, U+205F
    if (cp == 0xE38080 || cp == 0xEFBBBF) return 3;       // U+3000, U+FEFF
  }
  return 0;
}

UNICORN_DECL std::string_view js_trim(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    const size_t n = js_space_length(s, begin);
    if (n == 0) break;
    begin += n;
  }
  // Scan forward and remember where the last non-space ended: UTF-8 cannot
  // be walked backwards by whole characters without decoding.
  size_t end = begin;
  for (size_t i = begin; i < s.size();) {
    const size_t n = js_space_length(s, i);
    if (n > 0) {
      i += n;
    } else {
      const auto lead = static_cast<unsigned char>(s[i]);
      i += lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      end = std::min(i, s.size());
    }
  }
  return s.substr(begin, end - begin);
}

}  // namespace unicorn::text::detail

namespace unicorn::text {

UNICORN_DECL std::string render_turn(std::string_view role, std::string_view content) {
  std::string out = "<start_of_turn>";
  out += role;
  out += '\n';
  out += content;
  out += "<end_of_turn>\n";
  return out;
}

UNICORN_DECL std::string render_chat(std::span<const ChatMessage> messages, bool add_generation_prompt) {
  std::string out = "<bos>";
  std::string system_prefix;  // folded into the first turn
  if (!messages.empty() && messages.front().role == "system") {
    system_prefix = messages.front().content + "\n\n";
    messages = messages.subspan(1);
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if ((m.role == "user") != (i % 2 == 0))
      throw Error("render_chat: Conversation roles must alternate user/assistant/user/assistant/...");
    const std::string_view role = m.role == "assistant" ? std::string_view("model") : std::string_view(m.role);
    std::string content = i == 0 ? system_prefix : std::string();
    content += detail::js_trim(m.content);
    out += render_turn(role, content);
  }
  if (add_generation_prompt) out += kModelTurnOpening;
  return out;
}

}  // namespace unicorn::text

#endif  // UNICORN_DEFINE_HERE
