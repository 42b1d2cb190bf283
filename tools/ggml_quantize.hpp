// tools/ggml_quantize.hpp — ggml's reference quantizers and their inverses, for
// the tools that write GGUF files (unicorn-convert). Bit-exact with llama.cpp's
// quantize_row_*_ref and dequantize_row_*, so files written here equal
// llama.cpp's. This is file
// preparation, not inference: the engine itself quantizes on the GPU
// (shaders/convert.comp) and has no CPU path (DESIGN.md decision 5).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "unicorn/quant/formats.hpp"

namespace unicorn::tools {

inline uint16_t to_f16_bits(float x) {
  const _Float16 h = static_cast<_Float16>(x);  // round to nearest even, as F16C
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

inline uint16_t to_bf16_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 64);  // quiet NaN
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// Appends `x` (a whole number of rows) in `format` to `out`.
inline void quantize(Format format, std::span<const float> x, std::vector<std::byte>& out) {
  auto put16 = [&](uint16_t v) {
    out.push_back(std::byte(v & 0xff));
    out.push_back(std::byte(v >> 8));
  };
  switch (format) {
    case Format::F32: {
      const auto* b = reinterpret_cast<const std::byte*>(x.data());
      out.insert(out.end(), b, b + x.size_bytes());
      return;
    }
    case Format::F16:
      for (float v : x) put16(to_f16_bits(v));
      return;
    case Format::BF16:
      for (float v : x) put16(to_bf16_bits(v));
      return;
    case Format::Q8_0:
      for (size_t b = 0; b < x.size(); b += 32) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b + j]));
        const float d = amax / 127.0f;
        const float id = d ? 1.0f / d : 0.0f;
        put16(to_f16_bits(d));
        for (int j = 0; j < 32; ++j) out.push_back(std::byte(int8_t(std::roundf(x[b + j] * id))));
      }
      return;
    case Format::Q4_0:
      for (size_t b = 0; b < x.size(); b += 32) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; ++j)
          if (amax < std::fabs(x[b + j])) {
            amax = std::fabs(x[b + j]);
            max = x[b + j];
          }
        const float d = max / -8.0f;
        const float id = d ? 1.0f / d : 0.0f;
        put16(to_f16_bits(d));
        for (int j = 0; j < 16; ++j) {
          const uint8_t lo = std::min<uint8_t>(15, uint8_t(int8_t(x[b + j] * id + 8.5f)));
          const uint8_t hi = std::min<uint8_t>(15, uint8_t(int8_t(x[b + 16 + j] * id + 8.5f)));
          out.push_back(std::byte(lo | (hi << 4)));
        }
      }
      return;
  }
}

// `count` values stored in `format` (whole blocks), as float32.
inline std::vector<float> dequantize(Format format, std::span<const std::byte> data, uint64_t count) {
  std::vector<float> x(count);
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  auto f16_at = [&](uint64_t byte) {
    _Float16 h;
    std::memcpy(&h, p + byte, 2);
    return float(h);
  };
  switch (format) {
    case Format::F32:
      std::memcpy(x.data(), p, count * 4);
      break;
    case Format::F16:
      for (uint64_t i = 0; i < count; ++i) x[i] = f16_at(2 * i);
      break;
    case Format::BF16:
      for (uint64_t i = 0; i < count; ++i) {
        const uint32_t bits = uint32_t(p[2 * i] | p[2 * i + 1] << 8) << 16;
        std::memcpy(&x[i], &bits, 4);
      }
      break;
    case Format::Q8_0:
      for (uint64_t b = 0; b < count / 32; ++b) {
        const float d = f16_at(34 * b);
        for (int j = 0; j < 32; ++j) x[32 * b + j] = d * float(int8_t(p[34 * b + 2 + j]));
      }
      break;
    case Format::Q4_0:
      for (uint64_t b = 0; b < count / 32; ++b) {
        const float d = f16_at(18 * b);
        for (int j = 0; j < 16; ++j) {
          const uint8_t q = p[18 * b + 2 + j];
          x[32 * b + j] = d * float(int(q & 15) - 8);
          x[32 * b + 16 + j] = d * float(int(q >> 4) - 8);
        }
      }
      break;
  }
  return x;
}

}  // namespace unicorn::tools
