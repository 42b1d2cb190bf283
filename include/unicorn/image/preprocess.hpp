// unicorn/image/preprocess.hpp — a decoded image to the vision encoder's input,
// as transformers' Gemma3ImageProcessor makes it (without pan-and-scan):
// resize to S x S with Pillow's bilinear filter (image/resize.hpp), rescale by
// 1/255 and normalise with mean 0.5 and std 0.5 — fused, as the processor
// fuses them, into (p - 127.5) / 127.5 in float — to a planar [3, S, S] tensor.
// S is VisionDims::image_size (896 for Gemma 3's SigLIP).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "unicorn/config/vision_dims.hpp"
#include "unicorn/image/resize.hpp"
#include "unicorn/image/rgb_image.hpp"

namespace unicorn::image {

// The processor's image_mean and image_std (0.5 each) divided by its
// rescale_factor (1/255).
inline constexpr float kPixelMean = 127.5f;
inline constexpr float kPixelStd = 127.5f;

// [3][size][size]: channel R, G, B planes, rows top to bottom, values in [-1, 1].
inline std::vector<float> pixel_values(const RgbImage& image, uint32_t size) {
  const RgbImage square = resize_bilinear(image, size, size);
  const size_t plane = size_t(size) * size;
  std::vector<float> out(3 * plane);
  for (size_t i = 0; i < plane; ++i)
    for (size_t c = 0; c < 3; ++c) out[c * plane + i] = (float(square.pixels[3 * i + c]) - kPixelMean) / kPixelStd;
  return out;
}

inline std::vector<float> pixel_values(const RgbImage& image, const VisionDims& vision) {
  return pixel_values(image, vision.image_size);
}

}  // namespace unicorn::image
