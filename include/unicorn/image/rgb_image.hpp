// unicorn/image/rgb_image.hpp — a decoded image (8-bit RGB, interleaved) and the
// limits a decoder checks against the file's header before it decodes.
//
// Every decoder (image/decode_*.hpp) reads the dimensions first and calls
// check_dimensions before it allocates a pixel, so a small file that claims a
// huge image (a decompression bomb) is refused for the price of its header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "unicorn/base/error.hpp"

namespace unicorn::image {

// The pixel limit: Pillow's own decompression-bomb threshold
// (Image.MAX_IMAGE_PIXELS, a quarter GiB of 24-bit pixels), so that any image
// transformers' processor takes without a warning decodes here too, and the RGB
// buffer stays under 256 MiB.
inline constexpr uint64_t kMaxImagePixels = 89'478'485;
// The longest side: JPEG's and GIF's own maximum (PNG and BMP allow more). The
// resize's horizontal pass holds (output side) x height pixels, so a 1-pixel-wide
// strip of a hundred million rows must be refused even under the pixel limit.
inline constexpr uint32_t kMaxImageSide = 65'535;

struct DecodeLimits {
  uint64_t max_pixels = kMaxImagePixels;
  uint32_t max_side = kMaxImageSide;
};

// rows top to bottom, pixels left to right, 3 bytes each (R, G, B).
struct RgbImage {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint8_t> pixels;  // [height][width][3]

  const uint8_t* at(uint32_t x, uint32_t y) const { return pixels.data() + (size_t(y) * width + x) * 3; }
};

inline bool within_limits(uint64_t width, uint64_t height, const DecodeLimits& limits) {
  return width > 0 && height > 0 && width <= limits.max_side && height <= limits.max_side &&
         width * height <= limits.max_pixels;
}

// Refuses a header's dimensions before any pixel is decoded. `name` and
// `format` make the message: "photo.png: PNG image of 100000 x 100000 pixels
// (10000000000) is over the limit of 89478485 pixels (DecodeLimits::max_pixels)".
inline void check_dimensions(const std::string& name, const char* format, uint64_t width, uint64_t height,
                             const DecodeLimits& limits) {
  const std::string size = std::to_string(width) + " x " + std::to_string(height);
  if (width == 0 || height == 0)
    throw Error(name + ": " + format + " image has zero size (" + size + " pixels)");
  if (width > limits.max_side || height > limits.max_side)
    throw Error(name + ": " + format + " image of " + size + " pixels has a side over the limit of " +
                std::to_string(limits.max_side) + " (DecodeLimits::max_side)");
  if (width * height > limits.max_pixels)
    throw Error(name + ": " + format + " image of " + size + " pixels (" + std::to_string(width * height) +
                ") is over the limit of " + std::to_string(limits.max_pixels) +
                " pixels (DecodeLimits::max_pixels): a decompression bomb, or an image to shrink first");
}

}  // namespace unicorn::image
