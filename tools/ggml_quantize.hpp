// tools/ggml_quantize.hpp — ggml's reference quantizers and their inverses, for
// the tools that write GGUF files (unicorn-convert). Bit-exact with llama.cpp's
// quantize_row_*_ref and dequantize_row_*, so files written here equal
// llama.cpp's (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1). The K-quants (Q2_K to Q6_K)
// and IQ4_NL, IQ4_XS are the exception on the quantizing side: quantize_k(),
// quantize_low_k() and quantize_iq4() below make valid blocks by simple rules of our own, not
// ggml's iterative searches, so their bytes differ from llama-quantize's
// (and are a little less accurate: unicorn-convert's --type files are for
// tests and comparisons; quantize real models with llama-quantize). Their
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

// Q2_K's and Q3_K's qs (64 bytes): the 2 low bits of element
// e = 128 n + 32 j + 16 h + l at bits 2j of qs[32 n + 16 h + l].
inline void put_low_k_bits(std::vector<std::byte>& out, const int (&q)[256]) {
  uint8_t qs[64] = {};
  for (int e = 0; e < 256; ++e) {
    const int n = e / 128, j = (e / 32) % 4, h = (e / 16) % 2, l = e % 16;
    qs[32 * n + 16 * h + l] = uint8_t(qs[32 * n + 16 * h + l] | (q[e] & 3) << 2 * j);
  }
  for (uint8_t c : qs) out.push_back(std::byte(c));
}

// Q5_0's and Q5_1's qh: bit j of the little-endian word is the fifth bit of
// element j of the block.
inline void put_fifth_bits(std::vector<std::byte>& out, const uint8_t (&q)[32]) {
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= uint32_t(q[j] >> 4 & 1) << j;
  for (int i = 0; i < 4; ++i) out.push_back(std::byte(qh >> (8 * i) & 0xff));
}

// Valid Q2_K / Q3_K blocks for `x` (a multiple of 256 values), by a simple rule
// of ours (as quantize_k's): per group of 16,
//   Q2_K: the step (max - min(min, 0)) / 3 and the min -min(min, 0) on 4-bit
//         grids of d and dmin (their largest / 15);
//   Q3_K: the step max|x| / 4 on a signed 6-bit grid of d (largest / 31, the
//         grid -32 .. 31), q in -4 .. 3;
// then each q the nearest on its grid.
inline void quantize_low_k(Format format, std::span<const float> x, std::vector<std::byte>& out) {
  auto nearest = [](float v) { return int(std::lround(v)); };
  for (size_t b = 0; b < x.size(); b += 256) {
    const float* v = x.data() + b;
    int q[256];  // Q2_K: 0 .. 3; Q3_K: -4 .. 3
    uint8_t scales[16] = {};
    if (format == Format::Q2_K) {
      float step[16], lift[16], max_step = 0, max_lift = 0;
      for (int g = 0; g < 16; ++g) {
        float lo = 0, hi = -INFINITY;
        for (int l = 0; l < 16; ++l) lo = std::min(lo, v[16 * g + l]), hi = std::max(hi, v[16 * g + l]);
        step[g] = (hi - lo) / 3;
        lift[g] = -lo;
        max_step = std::max(max_step, step[g]);
        max_lift = std::max(max_lift, lift[g]);
      }
      const float d = f16_value(to_f16_bits(max_step / 15)), dmin = f16_value(to_f16_bits(max_lift / 15));
      for (int g = 0; g < 16; ++g) {
        const int sc = d > 0 ? std::clamp(nearest(step[g] / d), 0, 15) : 0;
        const int m = dmin > 0 ? std::clamp(nearest(lift[g] / dmin), 0, 15) : 0;
        scales[g] = uint8_t(sc | m << 4);
        const float dg = d * float(sc), mg = dmin * float(m);
        for (int l = 0; l < 16; ++l)
          q[16 * g + l] = dg > 0 ? std::clamp(nearest((v[16 * g + l] + mg) / dg), 0, 3) : 0;
      }
      for (uint8_t s : scales) out.push_back(std::byte(s));
      put_low_k_bits(out, q);
      put_f16(out, d);
      put_f16(out, dmin);
    } else {
      float step[16], largest = 0;
      for (int g = 0; g < 16; ++g) {
        float amax = 0, m = 0;
        for (int l = 0; l < 16; ++l)
          if (std::fabs(v[16 * g + l]) > amax) amax = std::fabs(v[16 * g + l]), m = v[16 * g + l];
        step[g] = m / -4;  // the value of largest magnitude lands on q = -4
        if (std::fabs(step[g]) > std::fabs(largest)) largest = step[g];
      }
      const float d = f16_value(to_f16_bits(largest / -32));
      int sc[16];
      for (int g = 0; g < 16; ++g) {
        sc[g] = d != 0 ? std::clamp(nearest(step[g] / d), -32, 31) : 0;
        const float dg = d * float(sc[g]);
        for (int l = 0; l < 16; ++l) q[16 * g + l] = dg != 0 ? std::clamp(nearest(v[16 * g + l] / dg), -4, 3) : 0;
      }
      uint8_t hmask[32] = {};
      for (int e = 0; e < 256; ++e) {
        const int n = e / 128, j = (e / 32) % 4, h = (e / 16) % 2, l = e % 16;
        if (q[e] >= 0) hmask[16 * h + l] = uint8_t(hmask[16 * h + l] | 1 << (4 * n + j));
        q[e] += 4 * (q[e] < 0);  // the low 2 bits: q + 4 without the high bit
      }
      for (uint8_t c : hmask) out.push_back(std::byte(c));
      put_low_k_bits(out, q);
      uint8_t packed[12] = {};
      for (int g = 0; g < 16; ++g) {
        const int s = sc[g] + 32;
        packed[g % 8] = uint8_t(packed[g % 8] | (s & 15) << 4 * (g / 8));
        packed[8 + g % 4] = uint8_t(packed[8 + g % 4] | (s >> 4) << 2 * (g / 4));
      }
      for (uint8_t c : packed) out.push_back(std::byte(c));
      put_f16(out, d);
    }
  }
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

// IQ4_NL's and IQ4_XS's quant for value t (in units of the scale): the index of
// the nearest of kIq4Values (the first of two as near).
inline uint8_t iq4_nearest(float t) {
  int best = 0;
  for (int i = 1; i < 16; ++i)
    if (std::fabs(t - kIq4Values[i]) < std::fabs(t - kIq4Values[best])) best = i;
  return uint8_t(best);
}
// The scale of 32 values in IQ4's table, by a simple rule: of the scales
// m / -127 * (1 + i / 32) for i in -8 .. 8 (m the value of largest magnitude,
// so i = 0 maps it to the table's -127), the one whose nearest table values
// leave the least squared error. Not ggml's search (the file comment).
inline float iq4_scale(const float* v) {
  float amax = 0, m = 0;
  for (int l = 0; l < 32; ++l)
    if (amax < std::fabs(v[l])) amax = std::fabs(v[l]), m = v[l];
  if (amax == 0) return 0;
  float best = 0, best_error = INFINITY;
  for (int i = -8; i <= 8; ++i) {
    const float d = m / -127.0f * (1.0f + float(i) / 32.0f);
    float error = 0;
    for (int l = 0; l < 32; ++l) {
      const float e = v[l] - d * kIq4Values[iq4_nearest(v[l] / d)];
      error += e * e;
    }
    if (error < best_error) best = d, best_error = error;
  }
  return best;
}
// 32 values' nibbles for scale d, as ggml packs them: byte l holds element l
// (low nibble) and l + 16 (high).
inline void put_iq4_nibbles(std::vector<std::byte>& out, const float* v, float d) {
  uint8_t q[32];
  for (int l = 0; l < 32; ++l) q[l] = d != 0 ? iq4_nearest(v[l] / d) : iq4_nearest(0);
  for (int l = 0; l < 16; ++l) out.push_back(std::byte(q[l] | (q[l + 16] << 4)));
}
// Valid IQ4_NL / IQ4_XS blocks for `x` (IQ4_XS: a multiple of 256 values):
//   IQ4_NL: d = iq4_scale of the block, rounded to f16;
//   IQ4_XS: each sub-block's iq4_scale s_j on a 6-bit grid of d, d = the s_j
//           of largest magnitude over -32 (so ls = round(s_j / d) + 32 in 0 .. 63).
inline void quantize_iq4(Format format, std::span<const float> x, std::vector<std::byte>& out) {
  if (format == Format::IQ4_NL) {
    for (size_t b = 0; b < x.size(); b += 32) {
      const float d = f16_value(put_f16(out, iq4_scale(x.data() + b)));
      put_iq4_nibbles(out, x.data() + b, d);
    }
    return;
  }
  for (size_t b = 0; b < x.size(); b += 256) {
    const float* v = x.data() + b;
    float s[8], largest = 0;
    for (int j = 0; j < 8; ++j) {
      s[j] = iq4_scale(v + 32 * j);
      if (std::fabs(s[j]) > std::fabs(largest)) largest = s[j];
    }
    const float d = f16_value(put_f16(out, largest / -32.0f));
    uint16_t scales_h = 0;
    uint8_t scales_l[4] = {};
    float dl[8];
    for (int j = 0; j < 8; ++j) {
      const int l = d != 0 ? std::clamp(int(std::lround(s[j] / d)), -32, 31) : 0;
      const int ls = l + 32;
      scales_l[j / 2] = uint8_t(scales_l[j / 2] | (ls & 15) << 4 * (j % 2));
      scales_h = uint16_t(scales_h | (ls >> 4) << 2 * j);
      dl[j] = d * float(l);
    }
    out.push_back(std::byte(scales_h & 0xff));
    out.push_back(std::byte(scales_h >> 8));
    for (uint8_t c : scales_l) out.push_back(std::byte(c));
    for (int j = 0; j < 8; ++j) put_iq4_nibbles(out, v + 32 * j, dl[j]);
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
    case Format::IQ4_NL:
    case Format::IQ4_XS:
      quantize_iq4(format, x, out);
      return;
    case Format::Q2_K:
    case Format::Q3_K:
      quantize_low_k(format, x, out);
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
    case Format::Q2_K:
      // ggml's dequantize_row_q2_K: dl = d * (sc & 15), ml = dmin * (sc >> 4),
      // x = dl * q - ml (float), per group of 16.
      for (uint64_t b = 0; b < count / 256; ++b) {
        const uint8_t* blk = p + 84 * b;
        const float d = f16_at(84 * b + 80), dmin = f16_at(84 * b + 82);
        for (int e = 0; e < 256; ++e) {
          const int n = e / 128, j = (e / 32) % 4, h = (e / 16) % 2, l = e % 16;
          const uint8_t sc = blk[e / 16];
          const float dl = d * float(sc & 15), ml = dmin * float(sc >> 4);
          const float prod = dl * float((blk[16 + 32 * n + 16 * h + l] >> 2 * j) & 3);
          x[256 * b + e] = prod - ml;
        }
      }
      break;
    case Format::Q3_K:
      // ggml's dequantize_row_q3_K: dl = d * (sc - 32), x = dl * q (float),
      // q the 2 low bits less 4 where hmask's bit is clear.
      for (uint64_t b = 0; b < count / 256; ++b) {
        const uint8_t* blk = p + 110 * b;
        const float d = f16_at(110 * b + 108);
        for (int e = 0; e < 256; ++e) {
          const int n = e / 128, j = (e / 32) % 4, h = (e / 16) % 2, l = e % 16, g = e / 16;
          const int sc = ((blk[96 + g % 8] >> 4 * (g / 8)) & 15) | ((blk[104 + g % 4] >> 2 * (g / 4)) & 3) << 4;
          const int low = (blk[32 + 32 * n + 16 * h + l] >> 2 * j) & 3;
          const int q = low - ((blk[16 * h + l] >> (4 * n + j)) & 1 ? 0 : 4);
          x[256 * b + e] = d * float(sc - 32) * float(q);
        }
      }
      break;
    case Format::IQ4_NL:
      // ggml's dequantize_row_iq4_nl: x = d * kvalues_iq4nl[q], q as Q4_0's.
      for (uint64_t b = 0; b < count / 32; ++b) {
        const float d = f16_at(18 * b);
        for (int j = 0; j < 16; ++j) {
          const uint8_t q = p[18 * b + 2 + j];
          x[32 * b + j] = d * float(kIq4Values[q & 15]);
          x[32 * b + 16 + j] = d * float(kIq4Values[q >> 4]);
        }
      }
      break;
    case Format::IQ4_XS:
      // ggml's dequantize_row_iq4_xs: dl = d * (ls - 32) for sub-block j's
      // 6-bit ls, x = dl * kvalues_iq4nl[q] (float).
      for (uint64_t b = 0; b < count / 256; ++b) {
        const uint8_t* blk = p + 136 * b;
        const float d = f16_at(136 * b);
        const unsigned scales_h = blk[2] | blk[3] << 8;
        for (int j = 0; j < 8; ++j) {
          const int ls = (blk[4 + j / 2] >> 4 * (j % 2) & 15) | (scales_h >> 2 * j & 3) << 4;
          const float dl = d * float(ls - 32);
          for (int l = 0; l < 16; ++l) {
            const uint8_t q = blk[8 + 16 * j + l];
            x[256 * b + 32 * j + l] = dl * float(kIq4Values[q & 15]);
            x[256 * b + 32 * j + 16 + l] = dl * float(kIq4Values[q >> 4]);
          }
        }
      }
      break;
  }
  return x;
}

}  // namespace unicorn::tools
