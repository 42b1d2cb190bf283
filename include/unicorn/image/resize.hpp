// unicorn/image/resize.hpp — bilinear resizing of 8-bit RGB as transformers'
// Gemma3ImageProcessor does it, to the bit: torchvision's uint8 path
// (torch's antialiased bilinear interpolation for uint8 on the CPU), which
// ports Pillow's Image.resize(..., BILINEAR) with Pillow-SIMD's weights.
//
// A separable convolution with the triangle filter, whose support widens by
// the scale factor when shrinking (antialiasing: every source pixel counts).
// Each output pixel's weights are computed in double and normalised to sum 1,
// then rounded to fixed point with as many fraction bits as keep the largest
// weight of the axis inside an int16 (Pillow itself uses 22 bits: its output
// differs from the processor's by 1/255 at a few pixels, more so for strong
// shrinks; tests/vision/image_tests.cpp holds us to the processor's). The
// horizontal pass runs first, over the rows the vertical pass reads, and is
// rounded to 8 bits before the vertical pass; a side that keeps its size is
// not resampled.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/image/rgb_image.hpp"

namespace unicorn::image {

namespace detail {

// One axis's resampling: per output pixel a run of source pixels and their
// fixed-point weights.
struct ResampleTaps {
  int ksize = 0;                // weights per output pixel (the widest run)
  int precision = 0;            // fraction bits of the weights
  std::vector<int> first;       // [out] first source pixel
  std::vector<int> count;       // [out] source pixels used, at most ksize
  std::vector<int32_t> weight;  // [out][ksize]
};

inline double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

inline ResampleTaps bilinear_taps(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;  // the triangle's half-width is 1
  ResampleTaps taps;
  taps.ksize = int(std::ceil(support)) * 2 + 1;
  taps.first.resize(out_size);
  taps.count.resize(out_size);
  std::vector<double> weights(size_t(out_size) * taps.ksize, 0.0);
  double largest = 0.0;
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    // The casts truncate toward zero, as the C code does, before the clamps.
    const int first = std::max(int(center - support + 0.5), 0);
    const int count = std::clamp(std::min(int(center + support + 0.5), in_size) - first, 0, taps.ksize);
    double* w = weights.data() + size_t(o) * taps.ksize;
    double total = 0.0;
    for (int x = 0; x < count; ++x) {
      w[x] = triangle((x + first - center + 0.5) / filter_scale);
      total += w[x];
    }
    if (total != 0.0)
      for (int x = 0; x < count; ++x) {
        w[x] /= total;
        largest = std::max(largest, w[x]);
      }
    taps.first[o] = first;
    taps.count[o] = count;
  }
  // The most fraction bits (up to 22) for which the largest weight, doubled,
  // still rounds under 2^15.
  while (taps.precision < 22 && int(0.5 + largest * double(1 << (taps.precision + 1))) < (1 << 15)) ++taps.precision;
  taps.weight.resize(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    const double v = weights[i] * double(1 << taps.precision);
    taps.weight[i] = int32_t(v < 0 ? v - 0.5 : v + 0.5);
  }
  return taps;
}

// A fixed-point sum (with its rounding half already added) to 8 bits.
inline uint8_t to_u8(int64_t sum, int precision) {
  return uint8_t(std::clamp<int64_t>(sum >> precision, 0, 255));
}

}  // namespace detail

// `in` resized to width x height.
inline RgbImage resize_bilinear(const RgbImage& in, uint32_t width, uint32_t height) {
  if (in.width == 0 || in.height == 0 || width == 0 || height == 0 ||
      in.pixels.size() != size_t(in.width) * in.height * 3)
    throw Error("resize_bilinear: cannot resize an image of " + std::to_string(in.width) + " x " +
                std::to_string(in.height) + " pixels (" + std::to_string(in.pixels.size()) + " bytes) to " +
                std::to_string(width) + " x " + std::to_string(height));
  const bool horizontal = width != in.width, vertical = height != in.height;
  if (!horizontal && !vertical) return in;
  const detail::ResampleTaps vert = detail::bilinear_taps(int(in.height), int(height));
  // The rows the vertical pass reads (all of them when it does not run).
  const int row_first = vertical ? vert.first.front() : 0;
  const int row_end = vertical ? vert.first.back() + vert.count.back() : int(in.height);

  RgbImage wide;  // the horizontal pass: [row_end - row_first][width][3]
  if (horizontal) {
    const detail::ResampleTaps horiz = detail::bilinear_taps(int(in.width), int(width));
    const int64_t half = int64_t(1) << (horiz.precision - 1);
    wide = RgbImage{.width = width, .height = uint32_t(row_end - row_first),
                    .pixels = std::vector<uint8_t>(size_t(width) * uint32_t(row_end - row_first) * 3)};
    for (int y = row_first; y < row_end; ++y) {
      uint8_t* out = wide.pixels.data() + size_t(y - row_first) * width * 3;
      for (uint32_t x = 0; x < width; ++x) {
        const int32_t* k = horiz.weight.data() + size_t(x) * horiz.ksize;
        const uint8_t* p = in.at(uint32_t(horiz.first[x]), uint32_t(y));
        int64_t r = half, g = half, b = half;
        for (int i = 0; i < horiz.count[x]; ++i, p += 3) {
          r += int64_t(p[0]) * k[i];
          g += int64_t(p[1]) * k[i];
          b += int64_t(p[2]) * k[i];
        }
        out[3 * x] = detail::to_u8(r, horiz.precision);
        out[3 * x + 1] = detail::to_u8(g, horiz.precision);
        out[3 * x + 2] = detail::to_u8(b, horiz.precision);
      }
    }
    if (!vertical) return wide;
  }
  const RgbImage& source = horizontal ? wide : in;
  const int source_row0 = horizontal ? row_first : 0;
  const int64_t half = int64_t(1) << (vert.precision - 1);
  RgbImage out{.width = width, .height = height, .pixels = std::vector<uint8_t>(size_t(width) * height * 3)};
  const size_t stride = size_t(width) * 3;
  for (uint32_t y = 0; y < height; ++y) {
    const int32_t* k = vert.weight.data() + size_t(y) * vert.ksize;
    const uint8_t* rows = source.pixels.data() + size_t(vert.first[y] - source_row0) * stride;
    uint8_t* o = out.pixels.data() + y * stride;
    for (size_t c = 0; c < stride; ++c) {
      int64_t s = half;
      for (int i = 0; i < vert.count[y]; ++i) s += int64_t(rows[i * stride + c]) * k[i];
      o[c] = detail::to_u8(s, vert.precision);
    }
  }
  return out;
}

}  // namespace unicorn::image
