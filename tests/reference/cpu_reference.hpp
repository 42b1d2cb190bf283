// tests/reference/cpu_reference.hpp — scalar CPU reference of every engine op.
//
// The engine has no CPU inference path; this one lives
// in tests/ only, as the yardstick the shaders are measured against. Each op is
// written from its definition (Hugging Face's Gemma 3, ggml's block layouts in
// quant/formats.hpp), not from the shader: straightforward loops, results in
// double. Callers: tests/kernel (each shader against its op), later the model
// tests. Buffers are row-major; each carries its shape in a comment.
#pragma once

#include <algorithm>
#include <array>
#include <utility>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "ggml_quantize.hpp"  // tools/: ggml's K-quant dequantization
#include "unicorn/quant/formats.hpp"

namespace unicorn::reference {

// IEEE binary16 bits -> float, subnormals and specials included.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  } else {
    const float v = std::ldexp(float(man), -24);  // subnormal (or zero): man * 2^-24
    return sign ? -v : v;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t load16(const std::byte* p) {  // little-endian, as GGUF
  return uint16_t(uint16_t(p[0]) | (uint16_t(p[1]) << 8));
}

// K-quants: the quant of element e (< 256) of a superblock, in ggml's block
// (quant/formats.hpp) and in the device's sub-blocks (shaders/include/weights.glsl),
// read or written. Device: sub-block s = e / 32, element i = e % 32, its low 4
// bits in byte i % 16 of the sub-block's 16 (low nibble for i < 16); Q6_K's 2
// high bits in the sub-block's 8 bytes as two words, element i = 4k + c + 16 h
// (k < 4, c < 4, h < 2) at word k / 2, bit 8c + 2 (2 (k % 2) + h); Q5_K's high
// bit in the sub-block's 4 bytes as one word, at bit 8c + k + 4h.
struct KQuantBits {
  // Q4_K (Q5_K): ggml byte offset of the low 4 bits in the block, and shift.
  static std::pair<size_t, int> ggml_q4(int e, size_t qs = 16) {
    return {qs + 32 * (e / 64) + e % 32, (e / 32) % 2 ? 4 : 0};
  }
  // Q5_K: ggml byte and shift of the fifth bit.
  static std::pair<size_t, int> ggml_q5_high(int e) { return {16 + e % 32, e / 32}; }
  static std::pair<size_t, int> device_q5_high(size_t sb, size_t SB, int e) {
    const size_t s = 8 * sb + e / 32;
    const int i = e % 32, k = (i % 16) / 4, c = i % 4, h = i / 16;
    return {128 * SB + 4 * s + c, k + 4 * h};
  }
  // Q6_K: ggml low-bits byte and shift; high-bits byte and shift.
  static std::array<int, 4> ggml_q6(int e) {
    const int h = e / 128, g = (e / 32) % 4, l = e % 32;
    return {64 * h + l + 32 * (g & 1), g < 2 ? 0 : 4, 128 + 32 * h + l, 2 * g};
  }
  // Device, relative to the part: low-bits byte and shift (both formats), and
  // Q6_K's high-bits byte and shift, for superblock sb of a part of SB.
  static std::array<size_t, 4> device(size_t sb, size_t SB, int e) {
    const size_t s = 8 * sb + e / 32;
    const int i = e % 32, k = (i % 16) / 4, c = i % 4, h = i / 16;
    const int bit = 8 * c + 2 * (2 * (k % 2) + h);
    return {16 * s + i % 16, size_t(h ? 4 : 0), 128 * SB + 8 * s + 4 * (k / 2) + bit / 8, size_t(bit % 8)};
  }
};

// Q4_1, Q5_0, Q5_1 (32-element blocks): ggml's qs as they are, 16 B per block;
// Q5's fifth bits 4 B per block, ggml's qh bit e (element e = 4k + c + 16h)
// at bit 8c + k + 4h; then the f16 halves, d or (d, m), as the block starts.
struct LegacyBits {
  static size_t qs(Format f) { return f == Format::Q4_1 ? 4 : f == Format::Q5_0 ? 6 : 8; }
  static bool fifth(Format f) { return f != Format::Q4_1; }
  static int device_bit(int e) { return 8 * (e % 4) + (e % 16) / 4 + 4 * (e / 16); }
};

// Q2_K and Q3_K: where element e of superblock b (of B in the part) has its
// 2 low bits, in ggml's block (byte, shift) and on the device (byte, shift),
// and its Q3_K high bit likewise (ggml's hmask bit s of byte 16 h + l; the
// device's bit 8c + k + 4h of sub-block s's word), by weights.glsl's layout.
struct LowKBits {
  static std::array<size_t, 8> at(size_t b, size_t B, int e, size_t ggml_qs) {
    const int s = e / 32, i = e % 32, h = i / 16, l = i % 16, c = l % 4, k = l / 4, n = s / 4, j = s % 4;
    const size_t sub = 8 * b + s;
    const int bit = 8 * c + k + 4 * h;
    return {ggml_qs + 32 * n + 16 * h + l, size_t(2 * j), 8 * sub + 4 * h + c, size_t(2 * k),
            size_t(16 * h + l), size_t(s), 64 * B + 4 * sub + bit / 8, size_t(bit % 8)};
  }
};

// The device layout of one tensor part (shaders/include/weights.glsl) from
// ggml's bytes: float formats unchanged; Q8_0, Q4_0 planar, every block's
// quants (16 or 32 bytes) first, then every block's f16 scale; K-quants planar
// in 32-element sub-blocks:
//   Q4_K: quants 16 B per sub-block, then scales 12 B per superblock, then
//         (d, dmin) 4 B per superblock;
//   Q5_K: Q4_K's, with the fifth bits (4 B per sub-block) after the quants;
//   Q6_K: low 4 bits 16 B per sub-block, high 2 bits 8 B per sub-block, then
//         int8 scales 16 B per superblock, then d 2 B per superblock.
// Q2_K: 2-bit words 8 B per sub-block (LowKBits), then ggml's scales 16 B per
// superblock, then (d, dmin) 4 B per superblock; Q3_K: the low bits as Q2_K's,
// the high bits 4 B per sub-block, then ggml's 12 scale bytes and d per superblock.
// IQ4_NL as Q4_0; IQ4_XS: ggml's qs (128 B per superblock) as they are, then
// per superblock scales_l (4 B), then scales_h (2 B), then d (2 B).
inline std::vector<std::byte> to_device_layout(Format format, std::span<const std::byte> ggml) {
  const FormatInfo f = format_info(format);
  if (!is_block_quantized(format)) return {ggml.begin(), ggml.end()};
  const size_t blocks = ggml.size() / f.block_bytes;
  std::vector<std::byte> out(ggml.size());
  if (format == Format::Q4_1 || format == Format::Q5_0 || format == Format::Q5_1) {
    std::fill(out.begin(), out.end(), std::byte{0});
    auto* o = reinterpret_cast<uint8_t*>(out.data());
    const size_t halves = 2 * trailing_halves(format), qs = LegacyBits::qs(format);
    for (size_t b = 0; b < blocks; ++b) {
      const auto* blk = reinterpret_cast<const uint8_t*>(ggml.data()) + b * f.block_bytes;
      std::memcpy(o + 16 * b, blk + qs, 16);
      if (LegacyBits::fifth(format)) {
        uint32_t qh, high = 0;
        std::memcpy(&qh, blk + qs - 4, 4);
        for (int e = 0; e < 32; ++e) high |= ((qh >> e) & 1u) << LegacyBits::device_bit(e);
        std::memcpy(o + 16 * blocks + 4 * b, &high, 4);
      }
      std::memcpy(o + (f.block_bytes - halves) * blocks + halves * b, blk, halves);
    }
    return out;
  }
  if (format == Format::Q2_K || format == Format::Q3_K) {
    std::fill(out.begin(), out.end(), std::byte{0});
    auto* o = reinterpret_cast<uint8_t*>(out.data());
    const bool q3 = format == Format::Q3_K;
    for (size_t b = 0; b < blocks; ++b) {
      const auto* blk = reinterpret_cast<const uint8_t*>(ggml.data()) + b * f.block_bytes;
      for (int e = 0; e < 256; ++e) {
        const auto a = LowKBits::at(b, blocks, e, q3 ? 32 : 16);
        o[a[2]] |= uint8_t(((blk[a[0]] >> a[1]) & 3) << a[3]);
        if (q3) o[a[6]] |= uint8_t(((blk[a[4]] >> a[5]) & 1) << a[7]);
      }
      if (q3) {
        std::memcpy(o + 96 * blocks + 12 * b, blk + 96, 12);
        std::memcpy(o + 108 * blocks + 2 * b, blk + 108, 2);
      } else {
        std::memcpy(o + 64 * blocks + 16 * b, blk, 16);
        std::memcpy(o + 80 * blocks + 4 * b, blk + 80, 4);
      }
    }
    return out;
  }
  if (is_k_quant(format)) {
    std::fill(out.begin(), out.end(), std::byte{0});
    auto* o = reinterpret_cast<uint8_t*>(out.data());
    for (size_t b = 0; b < blocks; ++b) {
      const auto* blk = reinterpret_cast<const uint8_t*>(ggml.data()) + b * f.block_bytes;
      for (int e = 0; e < 256; ++e) {
        const auto dv = KQuantBits::device(b, blocks, e);
        if (format == Format::Q4_K || format == Format::Q5_K) {
          const auto [at, shift] = KQuantBits::ggml_q4(e, format == Format::Q4_K ? 16 : 48);
          o[dv[0]] |= uint8_t(((blk[at] >> shift) & 15) << dv[1]);
          if (format == Format::Q5_K) {
            const auto [hat, hshift] = KQuantBits::ggml_q5_high(e);
            const auto [dat, dshift] = KQuantBits::device_q5_high(b, blocks, e);
            o[dat] |= uint8_t(((blk[hat] >> hshift) & 1) << dshift);
          }
        } else {
          const auto g = KQuantBits::ggml_q6(e);
          o[dv[0]] |= uint8_t(((blk[g[0]] >> g[1]) & 15) << dv[1]);
          o[dv[2]] |= uint8_t(((blk[g[2]] >> g[3]) & 3) << dv[3]);
        }
      }
      if (format == Format::Q4_K || format == Format::Q5_K) {
        const size_t quants = format == Format::Q4_K ? 128 : 160;  // bytes per superblock before the scales
        std::memcpy(o + quants * blocks + 12 * b, blk + 4, 12);
        std::memcpy(o + (quants + 12) * blocks + 4 * b, blk, 4);
      } else {
        std::memcpy(o + 192 * blocks + 16 * b, blk + 192, 16);
        std::memcpy(o + 208 * blocks + 2 * b, blk + 208, 2);
      }
    }
    return out;
  }
  if (format == Format::IQ4_XS) {  // qs whole, then scales_l, scales_h, d: each per superblock
    for (size_t b = 0; b < blocks; ++b) {
      const std::byte* blk = ggml.data() + b * 136;
      std::memcpy(out.data() + 128 * b, blk + 8, 128);
      std::memcpy(out.data() + 128 * blocks + 4 * b, blk + 4, 4);
      std::memcpy(out.data() + 132 * blocks + 2 * b, blk + 2, 2);
      std::memcpy(out.data() + 134 * blocks + 2 * b, blk, 2);
    }
    return out;
  }
  const size_t quant = f.block_bytes - 2;  // Q8_0, Q4_0, IQ4_NL: the scale, then the quants
  for (size_t b = 0; b < blocks; ++b) {
    const std::byte* block = ggml.data() + b * f.block_bytes;
    std::memcpy(out.data() + blocks * quant + 2 * b, block, 2);
    std::memcpy(out.data() + b * quant, block + 2, quant);
  }
  return out;
}

// The inverse: ggml's bytes of a part held in the device layout.
inline std::vector<std::byte> from_device_layout(Format format, std::span<const std::byte> dev) {
  const FormatInfo f = format_info(format);
  if (!is_block_quantized(format)) return {dev.begin(), dev.end()};
  const size_t blocks = dev.size() / f.block_bytes;
  std::vector<std::byte> out(dev.size());
  if (format == Format::Q4_1 || format == Format::Q5_0 || format == Format::Q5_1) {
    const auto* d = reinterpret_cast<const uint8_t*>(dev.data());
    const size_t halves = 2 * trailing_halves(format), qs = LegacyBits::qs(format);
    for (size_t b = 0; b < blocks; ++b) {
      auto* blk = reinterpret_cast<uint8_t*>(out.data()) + b * f.block_bytes;
      std::memcpy(blk, d + (f.block_bytes - halves) * blocks + halves * b, halves);
      std::memcpy(blk + qs, d + 16 * b, 16);
      if (LegacyBits::fifth(format)) {
        uint32_t high, qh = 0;
        std::memcpy(&high, d + 16 * blocks + 4 * b, 4);
        for (int e = 0; e < 32; ++e) qh |= ((high >> LegacyBits::device_bit(e)) & 1u) << e;
        std::memcpy(blk + qs - 4, &qh, 4);
      }
    }
    return out;
  }
  if (format == Format::Q2_K || format == Format::Q3_K) {
    std::fill(out.begin(), out.end(), std::byte{0});
    const auto* d = reinterpret_cast<const uint8_t*>(dev.data());
    const bool q3 = format == Format::Q3_K;
    for (size_t b = 0; b < blocks; ++b) {
      auto* blk = reinterpret_cast<uint8_t*>(out.data()) + b * f.block_bytes;
      for (int e = 0; e < 256; ++e) {
        const auto a = LowKBits::at(b, blocks, e, q3 ? 32 : 16);
        blk[a[0]] |= uint8_t(((d[a[2]] >> a[3]) & 3) << a[1]);
        if (q3) blk[a[4]] |= uint8_t(((d[a[6]] >> a[7]) & 1) << a[5]);
      }
      if (q3) {
        std::memcpy(blk + 96, d + 96 * blocks + 12 * b, 12);
        std::memcpy(blk + 108, d + 108 * blocks + 2 * b, 2);
      } else {
        std::memcpy(blk, d + 64 * blocks + 16 * b, 16);
        std::memcpy(blk + 80, d + 80 * blocks + 4 * b, 4);
      }
    }
    return out;
  }
  if (is_k_quant(format)) {
    std::fill(out.begin(), out.end(), std::byte{0});
    const auto* d = reinterpret_cast<const uint8_t*>(dev.data());
    for (size_t b = 0; b < blocks; ++b) {
      auto* blk = reinterpret_cast<uint8_t*>(out.data()) + b * f.block_bytes;
      for (int e = 0; e < 256; ++e) {
        const auto dv = KQuantBits::device(b, blocks, e);
        if (format == Format::Q4_K || format == Format::Q5_K) {
          const auto [at, shift] = KQuantBits::ggml_q4(e, format == Format::Q4_K ? 16 : 48);
          blk[at] |= uint8_t(((d[dv[0]] >> dv[1]) & 15) << shift);
          if (format == Format::Q5_K) {
            const auto [hat, hshift] = KQuantBits::ggml_q5_high(e);
            const auto [dat, dshift] = KQuantBits::device_q5_high(b, blocks, e);
            blk[hat] |= uint8_t(((d[dat] >> dshift) & 1) << hshift);
          }
        } else {
          const auto g = KQuantBits::ggml_q6(e);
          blk[g[0]] |= uint8_t(((d[dv[0]] >> dv[1]) & 15) << g[1]);
          blk[g[2]] |= uint8_t(((d[dv[2]] >> dv[3]) & 3) << g[3]);
        }
      }
      if (format == Format::Q4_K || format == Format::Q5_K) {
        const size_t quants = format == Format::Q4_K ? 128 : 160;
        std::memcpy(blk + 4, d + quants * blocks + 12 * b, 12);
        std::memcpy(blk, d + (quants + 12) * blocks + 4 * b, 4);
      } else {
        std::memcpy(blk + 192, d + 192 * blocks + 16 * b, 16);
        std::memcpy(blk + 208, d + 208 * blocks + 2 * b, 2);
      }
    }
    return out;
  }
  if (format == Format::IQ4_XS) {
    for (size_t b = 0; b < blocks; ++b) {
      std::byte* blk = out.data() + b * 136;
      std::memcpy(blk + 8, dev.data() + 128 * b, 128);
      std::memcpy(blk + 4, dev.data() + 128 * blocks + 4 * b, 4);
      std::memcpy(blk + 2, dev.data() + 132 * blocks + 2 * b, 2);
      std::memcpy(blk, dev.data() + 134 * blocks + 2 * b, 2);
    }
    return out;
  }
  const size_t quant = f.block_bytes - 2;
  for (size_t b = 0; b < blocks; ++b) {
    std::byte* block = out.data() + b * f.block_bytes;
    std::memcpy(block, dev.data() + blocks * quant + 2 * b, 2);
    std::memcpy(block + 2, dev.data() + b * quant, quant);
  }
  return out;
}

// The first n elements of `bytes` in `format`, as exact floats.
//   Q8_0 block (34 bytes): f16 d, int8 q[32];            x = d * q
//   Q4_0 block (18 bytes): f16 d, uint8 nibbles[16];     x = d * (q - 8),
//        q[j] = low nibble of byte j (j < 16), high nibble of byte j-16 (j >= 16)
inline std::vector<float> dequantize(Format format, std::span<const std::byte> bytes,
                                     size_t n) {
  if (row_bytes(format, n) > bytes.size())
    throw std::invalid_argument("reference::dequantize: fewer bytes than n elements need");
  std::vector<float> x(n);  // [n]
  const std::byte* p = bytes.data();
  switch (format) {
    case Format::F32:
      std::memcpy(x.data(), p, n * 4);
      break;
    case Format::F16:
      for (size_t i = 0; i < n; ++i) x[i] = half_to_float(load16(p + 2 * i));
      break;
    case Format::BF16:
      for (size_t i = 0; i < n; ++i) x[i] = bf16_to_float(load16(p + 2 * i));
      break;
    case Format::Q8_0:
      for (size_t b = 0; b < n / 32; ++b) {
        const std::byte* blk = p + b * 34;
        const float d = half_to_float(load16(blk));
        for (size_t j = 0; j < 32; ++j) x[b * 32 + j] = d * float(int8_t(blk[2 + j]));
      }
      break;
    case Format::Q4_0:
      for (size_t b = 0; b < n / 32; ++b) {
        const std::byte* blk = p + b * 18;
        const float d = half_to_float(load16(blk));
        for (size_t j = 0; j < 32; ++j) {
          const uint8_t byte = uint8_t(blk[2 + (j % 16)]);
          const int q = j < 16 ? (byte & 15) : (byte >> 4);
          x[b * 32 + j] = d * float(q - 8);
        }
      }
      break;
    case Format::Q4_1:
    case Format::Q5_0:
    case Format::Q5_1:
    case Format::Q4_K:
    case Format::Q5_K:
    case Format::Q6_K:
    case Format::Q2_K:
    case Format::Q3_K:
    case Format::IQ4_NL:
    case Format::IQ4_XS:  // ggml's definitions, written once (tools/ggml_quantize.hpp)
      x = tools::dequantize(format, bytes, n);
      break;
  }
  return x;
}

// x[t, :] = table[tokens[t], :] * scale (Gemma scales embeddings by sqrt(hidden),
// in float32). Computed in float, as the model defines it.
inline std::vector<float> embed(std::span<const float> table,  // [vocab, H]
                                size_t H, std::span<const uint32_t> tokens, float scale) {
  std::vector<float> x(tokens.size() * H);  // [n, H]
  for (size_t t = 0; t < tokens.size(); ++t)
    for (size_t i = 0; i < H; ++i) x[t * H + i] = table[tokens[t] * H + i] * scale;
  return x;
}

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, or y += that with
// `accumulate`. `w` multiplies as given: the device stores Gemma's (1 + w_hf).
inline void rmsnorm(std::span<const float> x,  // [rows, D]
                    std::span<const float> w,  // [D]
                    size_t D, double eps, bool accumulate,
                    std::span<double> y) {     // [rows, D]
  const size_t rows = x.size() / D;
  for (size_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (size_t i = 0; i < D; ++i) ss += double(x[r * D + i]) * x[r * D + i];
    const double inv = 1.0 / std::sqrt(ss / double(D) + eps);
    for (size_t i = 0; i < D; ++i) {
      const double v = x[r * D + i] * inv * w[i];
      y[r * D + i] = accumulate ? y[r * D + i] + v : v;
    }
  }
}

// rmsnorm with CHAIN (Gemma's post-norm feeding the residual stream, then the
// next sub-layer's pre-norm, in one step): x[r, :] += norm(y[r, :]) * w, then
// xn[r, :] = norm(x[r, :]) * w2 over the updated row. x holds the residual's
// prior contents on entry and the updated rows on return.
inline void rmsnorm_chain(std::span<const float> y,   // [rows, D]
                          std::span<const float> w,   // [D]
                          std::span<const float> w2,  // [D]
                          size_t D, double eps,
                          std::span<double> x,        // [rows, D], updated in place
                          std::span<double> xn) {     // [rows, D]
  rmsnorm(y, w, D, eps, true, x);
  const size_t rows = y.size() / D;
  for (size_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (size_t i = 0; i < D; ++i) ss += x[r * D + i] * x[r * D + i];
    const double inv = 1.0 / std::sqrt(ss / double(D) + eps);
    for (size_t i = 0; i < D; ++i) xn[r * D + i] = x[r * D + i] * inv * w2[i];
  }
}

// y = x W^T: y[t, r] = sum_k x[t, k] * W[r, k].
inline std::vector<double> linear(std::span<const float> x,  // [n, K]
                                  std::span<const float> W,  // [M, K]
                                  size_t K, size_t M) {
  const size_t n = x.size() / K;
  std::vector<double> y(n * M);  // [n, M]
  for (size_t t = 0; t < n; ++t)
    for (size_t r = 0; r < M; ++r) {
      double acc = 0;
      for (size_t k = 0; k < K; ++k) acc += double(x[t * K + k]) * W[r * K + k];
      y[t * M + r] = acc;
    }
  return y;
}

// The rotary angle of pair i at position p, as Hugging Face's fp32 Gemma 3
// defines it: inv_freq = 1 / theta^(2i / hd) in float32 (linear scaling divides
// it by `scale`), angle = float32(p * inv_freq). The float32 roundings are part
// of the model (they move the angle by up to ~4e-3 at p = 1e5); only the
// rotation itself is then evaluated in double.
inline float rope_angle(uint32_t p, uint32_t i, uint32_t hd, float theta, float scale) {
  const float inv_freq = 1.0f / std::pow(theta, float(2 * i) / float(hd)) / scale;
  return float(p) * inv_freq;
}

// NeoX / "rotate_half" RoPE: element i of a head pairs with i + hd/2; token t
// is at position start_pos + t.
template <class T>
inline std::vector<double> rope_rows(std::span<const T> v,  // [n, heads * hd]
                                     uint32_t heads, uint32_t hd, float theta, float scale,
                                     uint32_t start_pos) {
  const size_t n = v.size() / (size_t(heads) * hd);
  const uint32_t half = hd / 2;
  std::vector<double> out(v.size());  // [n, heads * hd]
  for (size_t t = 0; t < n; ++t)
    for (uint32_t h = 0; h < heads; ++h)
      for (uint32_t i = 0; i < half; ++i) {
        const double a = rope_angle(uint32_t(start_pos + t), i, hd, theta, scale);
        const double c = std::cos(a), s = std::sin(a);
        const size_t base = (t * heads + h) * hd;
        const double x0 = v[base + i], x1 = v[base + i + half];
        out[base + i] = x0 * c - x1 * s;
        out[base + i + half] = x1 * c + x0 * s;
      }
  return out;
}
inline std::vector<double> rope(std::span<const float> v,  // [n, heads * hd]
                                uint32_t heads, uint32_t hd, float theta, float scale,
                                uint32_t start_pos) {
  return rope_rows(v, heads, hd, theta, scale, start_pos);
}

// Gemma 3's query/key preparation: each head RMS-normalised on its own
// (q_norm / k_norm; `w` [hd] holds 1 + w_hf, as rmsnorm), then RoPE. In double
// throughout (the angle itself rounded as rope_angle says).
inline std::vector<double> norm_rope(std::span<const float> v,  // [n, heads * hd]
                                     std::span<const float> w,  // [hd]
                                     uint32_t heads, uint32_t hd, double eps, float theta,
                                     float scale, uint32_t start_pos) {
  std::vector<double> normed(v.size());  // [n * heads, hd]
  rmsnorm(v, w, hd, eps, false, normed);
  return rope_rows(std::span<const double>(normed), heads, hd, theta, scale, start_pos);
}

// Causal softmax attention with grouped-query heads. Token t of the chunk is at
// position p = start_pos + t and attends to positions (p - window, p]
// (window = 0: [0, p]). Query head h reads kv head h / (heads / kv_heads).
// Keys and values are given for every absolute position 0..p, already rounded
// to the cache's precision.
inline std::vector<double> attention(std::span<const float> q,  // [n, heads * hd]
                                     std::span<const float> k,  // [positions, kv_heads * hd]
                                     std::span<const float> v,  // [positions, kv_heads * hd]
                                     uint32_t heads, uint32_t kv_heads, uint32_t hd,
                                     uint32_t window, double scale, uint32_t start_pos) {
  const size_t n = q.size() / (size_t(heads) * hd);
  const uint32_t group = heads / kv_heads;
  std::vector<double> o(q.size());  // [n, heads * hd]
  std::vector<double> w;
  for (size_t t = 0; t < n; ++t) {
    const uint32_t p = start_pos + uint32_t(t);
    const uint32_t lo = window != 0 && p + 1 > window ? p + 1 - window : 0;
    for (uint32_t h = 0; h < heads; ++h) {
      const size_t qb = (t * heads + h) * hd;
      const uint32_t kvh = h / group;
      w.assign(p + 1 - lo, 0.0);
      double m = -std::numeric_limits<double>::infinity();
      for (uint32_t j = lo; j <= p; ++j) {
        const size_t kb = (size_t(j) * kv_heads + kvh) * hd;
        double s = 0;
        for (uint32_t d = 0; d < hd; ++d) s += double(q[qb + d]) * scale * k[kb + d];
        w[j - lo] = s;
        m = std::max(m, s);
      }
      double sum = 0;
      for (double& s : w) sum += (s = std::exp(s - m));
      for (uint32_t d = 0; d < hd; ++d) {
        double acc = 0;
        for (uint32_t j = lo; j <= p; ++j)
          acc += w[j - lo] * v[(size_t(j) * kv_heads + kvh) * hd + d];
        o[qb + d] = acc / sum;
      }
    }
  }
  return o;
}

// Gemma's FFN activation: gelu_pytorch_tanh(gate) * up, elementwise.
inline double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
inline std::vector<double> geglu(std::span<const float> gate,  // [n, F]
                                 std::span<const float> up) {  // [n, F]
  std::vector<double> y(gate.size());  // [n, F]
  for (size_t i = 0; i < gate.size(); ++i) y[i] = gelu_tanh(gate[i]) * up[i];
  return y;
}

// The repetition penalty (CTRL / llama.cpp), in float as the logits are: the
// logit of each distinct history token is divided by `penalty` when positive,
// multiplied by it otherwise.
inline void repetition_penalty(std::span<float> logits,  // [V]
                               std::span<const uint32_t> history, float penalty) {
  std::vector<uint32_t> ids(history.begin(), history.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (uint32_t id : ids) {
    float& l = logits[id];
    l = l > 0.0f ? l / penalty : l * penalty;
  }
}

// The index of the first maximum (torch.argmax's tie rule).
inline uint32_t argmax(std::span<const float> row) {  // [V]
  return uint32_t(std::max_element(row.begin(), row.end()) - row.begin());
}

}  // namespace unicorn::reference
