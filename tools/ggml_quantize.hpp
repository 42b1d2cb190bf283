// tools/ggml_quantize.hpp — ggml's reference quantizers and their inverses, for
// the tools that write GGUF files (unicorn-convert). Bit-exact with llama.cpp's
// quantize_row_*_ref and dequantize_row_*, so files written here equal
// llama.cpp's (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1). The K-quants (Q4_K, Q5_K, Q6_K)
// are the exception on the quantizing side: quantize_k() below makes valid blocks by a simple rule of our own, not
// ggml's iterative search, so its bytes differ from llama-quantize's (tests use
// it for random weights; unicorn-convert does not write K-quants). Their
// dequantization is ggml's definition, bit for bit. This is file
// preparation, not inference: the engine itself quantizes on the GPU
// (shaders/convert.comp) and has no CPU path.
#pragma once

#include <algorithm>
#include <array>
#include <cfloat>
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

inline uint16_t put_f16(std::vector<std::byte>& out, float v) {
  const uint16_t h = to_f16_bits(v);
  out.push_back(std::byte(h & 0xff));
  out.push_back(std::byte(h >> 8));
  return h;
}
inline float f16_value(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return float(v);
}

// Sub-block j's 6-bit scale and min of a Q4_K block's 12 packed bytes
// (quant/formats.hpp: ggml's get_scale_min_k4).
inline void q4_k_scale_min(int j, const uint8_t* scales, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = scales[j] & 63;
    m = scales[j + 4] & 63;
  } else {
    sc = uint8_t((scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4));
    m = uint8_t((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Q5_0's and Q5_1's qh: bit j of the little-endian word is the fifth bit of
// element j of the block.
inline void put_fifth_bits(std::vector<std::byte>& out, const uint8_t (&q)[32]) {
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= uint32_t(q[j] >> 4 & 1) << j;
  for (int i = 0; i < 4; ++i) out.push_back(std::byte(qh >> (8 * i) & 0xff));
}

// Valid K-quant blocks for `x` (a multiple of 256 values), by a simple rule:
//   Q4_K, Q5_K: per sub-block of 32, the step (max - min(min, 0)) / 15 (31)
//         and the min -min(min, 0) on 6-bit grids of d and dmin (their largest / 63);
//   Q6_K: per 16 values, the step max|x| / 31 on an int8 grid of d (largest / 127);
// then each q the nearest on its grid. Not ggml's search (see the file comment).
inline void quantize_k(Format format, std::span<const float> x, std::vector<std::byte>& out) {
  auto nearest = [](float v) { return int(std::lround(v)); };
  for (size_t b = 0; b < x.size(); b += 256) {
    const float* v = x.data() + b;
    if (format == Format::Q4_K || format == Format::Q5_K) {
      const int top = format == Format::Q4_K ? 15 : 31;
      float step[8], lift[8];
      float max_step = 0, max_lift = 0;
      for (int j = 0; j < 8; ++j) {
        float lo = 0, hi = -INFINITY;
        for (int l = 0; l < 32; ++l) lo = std::min(lo, v[32 * j + l]), hi = std::max(hi, v[32 * j + l]);
        step[j] = (hi - lo) / float(top);
        lift[j] = -lo;
        max_step = std::max(max_step, step[j]);
        max_lift = std::max(max_lift, lift[j]);
      }
      const float d = f16_value(to_f16_bits(max_step / 63)), dmin = f16_value(to_f16_bits(max_lift / 63));
      put_f16(out, d);
      put_f16(out, dmin);
      uint8_t sc[8], m[8];
      for (int j = 0; j < 8; ++j) {
        sc[j] = uint8_t(d > 0 ? std::clamp(nearest(step[j] / d), 0, 63) : 0);
        m[j] = uint8_t(dmin > 0 ? std::clamp(nearest(lift[j] / dmin), 0, 63) : 0);
      }
      uint8_t scales[12];
      for (int j = 0; j < 4; ++j) {
        scales[j] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));
        scales[j + 4] = uint8_t(m[j] | ((m[j + 4] >> 4) << 6));
        scales[j + 8] = uint8_t((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
      }
      for (uint8_t s : scales) out.push_back(std::byte(s));
      uint8_t q[256];
      for (int j = 0; j < 8; ++j) {
        const float dj = d * float(sc[j]), mj = dmin * float(m[j]);
        for (int l = 0; l < 32; ++l)
          q[32 * j + l] = uint8_t(dj > 0 ? std::clamp(nearest((v[32 * j + l] + mj) / dj), 0, top) : 0);
      }
      if (format == Format::Q5_K)  // qh[l]: bit j is the fifth bit of element l of sub-block j
        for (int l = 0; l < 32; ++l) {
          uint8_t bits = 0;
          for (int j = 0; j < 8; ++j) bits = uint8_t(bits | ((q[32 * j + l] >> 4) << j));
          out.push_back(std::byte(bits));
        }
      for (int p = 0; p < 4; ++p)  // qs[32 p + l]: sub-block 2p (low nibble), 2p + 1 (high)
        for (int l = 0; l < 32; ++l)
          out.push_back(std::byte((q[64 * p + l] & 15) | ((q[64 * p + 32 + l] & 15) << 4)));
    } else {  // Q6_K
      float step[16], max_step = 0;
      for (int g = 0; g < 16; ++g) {
        float amax = 0;
        for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(v[16 * g + l]));
        step[g] = amax / 31;
        max_step = std::max(max_step, step[g]);
      }
      const float d = f16_value(to_f16_bits(max_step / 127));
      int8_t sc[16];
      uint8_t q[256];
      for (int g = 0; g < 16; ++g) {
        sc[g] = int8_t(d > 0 ? std::clamp(nearest(step[g] / d), -128, 127) : 0);
        const float dg = d * float(sc[g]);
        for (int l = 0; l < 16; ++l)
          q[16 * g + l] = uint8_t(dg != 0 ? std::clamp(nearest(v[16 * g + l] / dg), -32, 31) + 32 : 32);
      }
      uint8_t ql[128] = {}, qh[64] = {};
      for (int e = 0; e < 256; ++e) {
        const int h = e / 128, g = (e / 32) % 4, l = e % 32;
        ql[64 * h + l + 32 * (g & 1)] |= uint8_t((q[e] & 15) << (g < 2 ? 0 : 4));
        qh[32 * h + l] |= uint8_t((q[e] >> 4) << (2 * g));
      }
      for (uint8_t c : ql) out.push_back(std::byte(c));
      for (uint8_t c : qh) out.push_back(std::byte(c));
      for (int8_t c : sc) out.push_back(std::byte(c));
      put_f16(out, d);
    }
  }
}

// Appends `x` (a whole number of rows) in `format` to `out`.
inline void quantize(Format format, std::span<const float> x, std::vector<std::byte>& out) {
  auto put16 = [&](uint16_t v) {
    out.push_back(std::byte(v & 0xff));
    out.push_back(std::byte(v >> 8));
  };
  // The value of largest magnitude in block b (the first of equals), with its
  // sign: Q4_0's and Q5_0's scale is it over -8 or -16, as ggml's.
  auto largest_magnitude = [&](size_t b) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(x[b + j])) {
        amax = std::fabs(x[b + j]);
        max = x[b + j];
      }
    return max;
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
        const float d = largest_magnitude(b) / -8.0f;
        const float id = d ? 1.0f / d : 0.0f;
        put16(to_f16_bits(d));
        for (int j = 0; j < 16; ++j) {
          const uint8_t lo = std::min<uint8_t>(15, uint8_t(int8_t(x[b + j] * id + 8.5f)));
          const uint8_t hi = std::min<uint8_t>(15, uint8_t(int8_t(x[b + 16 + j] * id + 8.5f)));
          out.push_back(std::byte(lo | (hi << 4)));
        }
      }
      return;
    case Format::Q4_1:
    case Format::Q5_1:
      // ggml's quantize_row_q4_1_ref / q5_1_ref: d = (max - min) / 15 (31),
      // m = min, q = (x - min) / d rounded half up (Q4_1: at most 15).
      for (size_t b = 0; b < x.size(); b += 32) {
        const bool five = format == Format::Q5_1;
        float lo = FLT_MAX, hi = -FLT_MAX;
        for (int j = 0; j < 32; ++j) lo = std::min(lo, x[b + j]), hi = std::max(hi, x[b + j]);
        const float d = (hi - lo) / (five ? 31.0f : 15.0f);
        const float id = d ? 1.0f / d : 0.0f;
        put16(to_f16_bits(d));
        put16(to_f16_bits(lo));
        uint8_t q[32];
        for (int j = 0; j < 32; ++j) {
          const float v = (x[b + j] - lo) * id;  // rounded, then the half added: no fused multiply-add
          q[j] = five ? uint8_t(v + 0.5f) : std::min<uint8_t>(15, uint8_t(int8_t(v + 0.5f)));
        }
        if (five) put_fifth_bits(out, q);
        for (int j = 0; j < 16; ++j) out.push_back(std::byte((q[j] & 15) | ((q[j + 16] & 15) << 4)));
      }
      return;
    case Format::Q5_0:
      // ggml's quantize_row_q5_0_ref: Q4_0's rule over 5 bits, d = max / -16.
      for (size_t b = 0; b < x.size(); b += 32) {
        const float d = largest_magnitude(b) / -16.0f;
        const float id = d ? 1.0f / d : 0.0f;
        put16(to_f16_bits(d));
        uint8_t q[32];
        for (int j = 0; j < 32; ++j) {
          const float v = x[b + j] * id;
          q[j] = std::min<uint8_t>(31, uint8_t(int8_t(v + 16.5f)));
        }
        put_fifth_bits(out, q);
        for (int j = 0; j < 16; ++j) out.push_back(std::byte((q[j] & 15) | ((q[j + 16] & 15) << 4)));
      }
      return;
    case Format::Q4_K:
    case Format::Q5_K:
    case Format::Q6_K:
      quantize_k(format, x, out);
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
    case Format::Q4_1:
    case Format::Q5_0:
    case Format::Q5_1:
      // ggml's dequantize_row_q4_1 / q5_0 / q5_1: q = nibble (+ 16 * bit j of
      // qh for element j); x = q * d + m in float (the product rounded, then m
      // added), or (q - 16) * d for Q5_0.
      for (uint64_t b = 0; b < count / 32; ++b) {
        const FormatInfo& f = format_info(format);
        const uint8_t* blk = p + f.block_bytes * b;
        const float d = f16_at(f.block_bytes * b);
        const float m = format == Format::Q5_0 ? 0.0f : f16_at(f.block_bytes * b + 2);
        const size_t qs = format == Format::Q4_1 ? 4 : format == Format::Q5_0 ? 6 : 8;
        uint32_t qh = 0;
        if (format != Format::Q4_1) std::memcpy(&qh, blk + qs - 4, 4);
        for (int j = 0; j < 32; ++j) {
          const uint8_t byte = blk[qs + j % 16];
          const int q = (j < 16 ? byte & 15 : byte >> 4) | int((qh >> j) & 1) << 4;
          if (format == Format::Q5_0) {
            x[32 * b + j] = float(q - 16) * d;
          } else {
            const float prod = float(q) * d;
            x[32 * b + j] = prod + m;
          }
        }
      }
      break;
    case Format::Q4_K:
      // ggml's dequantize_row_q4_K: d1 = d * sc, m1 = dmin * m, x = d1 * q - m1 (float).
      for (uint64_t b = 0; b < count / 256; ++b) {
        const uint8_t* blk = p + 144 * b;
        const float d = f16_at(144 * b), dmin = f16_at(144 * b + 2);
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, m;
          q4_k_scale_min(j, blk + 4, sc, m);
          const float d1 = d * float(sc), m1 = dmin * float(m);
          for (int l = 0; l < 32; ++l) {
            const uint8_t byte = blk[16 + 32 * (j / 2) + l];
            const float prod = d1 * float(j % 2 ? byte >> 4 : byte & 15);
            x[256 * b + 32 * j + l] = prod - m1;
          }
        }
      }
      break;
    case Format::Q5_K:
      // ggml's dequantize_row_q5_K: Q4_K's with q = nibble + 16 * ((qh[l] >> j) & 1).
      for (uint64_t b = 0; b < count / 256; ++b) {
        const uint8_t* blk = p + 176 * b;
        const float d = f16_at(176 * b), dmin = f16_at(176 * b + 2);
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, m;
          q4_k_scale_min(j, blk + 4, sc, m);
          const float d1 = d * float(sc), m1 = dmin * float(m);
          for (int l = 0; l < 32; ++l) {
            const uint8_t byte = blk[48 + 32 * (j / 2) + l];
            const int q = (j % 2 ? byte >> 4 : byte & 15) + (((blk[16 + l] >> j) & 1) ? 16 : 0);
            const float prod = d1 * float(q);
            x[256 * b + 32 * j + l] = prod - m1;
          }
        }
      }
      break;
    case Format::Q6_K:
      // ggml's dequantize_row_q6_K: x = (d * scales[e / 16]) * (q - 32) (float).
      for (uint64_t b = 0; b < count / 256; ++b) {
        const uint8_t* blk = p + 210 * b;
        const float d = f16_at(210 * b + 208);
        for (int e = 0; e < 256; ++e) {
          const int h = e / 128, g = (e / 32) % 4, l = e % 32;
          const uint8_t low = blk[64 * h + l + 32 * (g & 1)];
          const int q = ((g < 2 ? low : low >> 4) & 15) | (((blk[128 + 32 * h + l] >> (2 * g)) & 3) << 4);
          x[256 * b + e] = d * float(int8_t(blk[192 + e / 16])) * float(q - 32);
        }
      }
      break;
  }
  return x;
}

}  // namespace unicorn::tools
