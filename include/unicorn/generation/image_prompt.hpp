// unicorn/generation/image_prompt.hpp — a prompt with images as token rows:
// where each image's soft tokens go, laid out as transformers' Gemma 3
// processor lays them out.
//
// The chat template writes an image as text::kImageMarker. The processor
// replaces each marker with "\n\n<start_of_image>", the image's soft tokens,
// and "<end_of_image>\n\n" before tokenizing, so the newlines around an image
// merge with the text's own as BPE merges them. Here the marker becomes the
// same text with no soft tokens in it; after encoding, each <start_of_image>
// is followed by tokens_per_image placeholder rows, which the engine fills
// from the image encoder's output instead of the token embedding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::text {

struct ImagePrompt {
  std::vector<int32_t> ids;           // the prompt, placeholder rows included
  std::vector<uint32_t> image_start;  // per image: the index of its first soft-token row
};

// The number of images a rendered prompt places.
inline size_t count_image_markers(std::string_view rendered) {
  size_t n = 0;
  for (size_t at = rendered.find(kImageMarker); at != std::string_view::npos;
       at = rendered.find(kImageMarker, at + kImageMarker.size()))
    ++n;
  return n;
}

// Encodes a rendered prompt (it starts with <bos>) that holds `images`
// markers; each image's rows carry `placeholder` (an id the engine reads as
// "the next soft token", never embedded).
inline ImagePrompt encode_image_prompt(const Tokenizer& tok, std::string_view rendered, size_t images,
                                       uint32_t tokens_per_image, int32_t placeholder) {
  const size_t markers = count_image_markers(rendered);
  if (markers != images)
    throw Error("the prompt places " + std::to_string(markers) + " image" + (markers == 1 ? "" : "s") + " (" +
                std::string(kImageMarker) + ") but " + std::to_string(images) + " image" +
                (images == 1 ? " was" : "s were") + " given");
  const int32_t boi = tok.find_token("<start_of_image>"), eoi = tok.find_token("<end_of_image>");
  if (images && (boi < 0 || eoi < 0))
    throw Error("this vocabulary has no <start_of_image> / <end_of_image> tokens: not Gemma 3's");
  std::string text;
  text.reserve(rendered.size() + images * 32);
  size_t from = 0;
  for (size_t at = rendered.find(kImageMarker); at != std::string_view::npos;
       at = rendered.find(kImageMarker, from)) {
    text.append(rendered.substr(from, at - from));
    text += "\n\n<start_of_image><end_of_image>\n\n";
    from = at + kImageMarker.size();
  }
  text.append(rendered.substr(from));

  ImagePrompt out;
  const std::vector<int32_t> ids = tok.encode(text, /*add_bos=*/false);
  out.ids.reserve(ids.size() + images * tokens_per_image);
  for (size_t i = 0; i < ids.size(); ++i) {
    out.ids.push_back(ids[i]);
    if (ids[i] != boi) continue;
    if (i + 1 >= ids.size() || ids[i + 1] != eoi)
      throw Error("internal: <start_of_image> is not followed by <end_of_image> after encoding");
    out.image_start.push_back(uint32_t(out.ids.size()));
    out.ids.insert(out.ids.end(), tokens_per_image, placeholder);
  }
  if (out.image_start.size() != images)
    throw Error("internal: " + std::to_string(out.image_start.size()) + " <start_of_image> tokens for " +
                std::to_string(images) + " images");
  return out;
}

}  // namespace unicorn::text
