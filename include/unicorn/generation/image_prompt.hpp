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
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/engine/step.hpp"
#include "unicorn/gpu/memory.hpp"
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

// Images' soft tokens on the device, as an image encoder leaves them for the
// text model (AnyEngine's: vision/encoder.hpp).
struct EncodedImages {
  std::shared_ptr<const gpu::BufferSet> soft_tokens;  // float32, image i's rows from i * image_bytes on
  uint32_t rows = 0;         // soft tokens per image
  uint64_t image_bytes = 0;  // bytes per image
};
// Encodes image files (PNG, JPEG, ...) in order; throws Error naming a bad one.
using ImageEncoder = std::function<EncodedImages(std::span<const std::string> files)>;

// A piece of a prompt with its images placed: the ids to feed from stream
// position `base` on, and where each image's soft tokens go.
struct PlacedImages {
  std::vector<int32_t> ids;
  std::vector<PromptImage> images;  // by stream position; their buffer is `encoded`'s
  EncodedImages encoded;
};

// `text` (encoded without <bos>: a rendered prompt carries its own) with one
// kImageMarker per file of `images`, each image encoded by `encode`.
inline PlacedImages place_images(const Tokenizer& tok, std::string_view text, std::span<const std::string> images,
                                 const ImageEncoder& encode, uint32_t base) {
  PlacedImages out;
  if (images.empty()) {
    if (count_image_markers(text) != 0) (void)encode_image_prompt(tok, text, 0, 0, 0);  // names the mismatch
    out.ids = tok.encode(text, /*add_bos=*/false);
    return out;
  }
  if (!encode) throw Error("images: this model has no vision encoder");
  const size_t markers = count_image_markers(text);
  if (markers != images.size()) (void)encode_image_prompt(tok, text, images.size(), 0, 0);  // names it
  out.encoded = encode(images);
  // The rows hold <start_of_image>'s id: transformers' <image_soft_token> lies
  // past the text vocabulary, and the rows are never embedded.
  const ImagePrompt laid =
      encode_image_prompt(tok, text, images.size(), out.encoded.rows, tok.find_token("<start_of_image>"));
  out.ids = laid.ids;
  for (size_t i = 0; i < images.size(); ++i)
    out.images.push_back({base + laid.image_start[i], out.encoded.rows, &(*out.encoded.soft_tokens)[0],
                          i * out.encoded.image_bytes});
  return out;
}

}  // namespace unicorn::text
