// coop_operands.glsl — operands of the cooperative-matrix kernels, moved from
// their storage encodings to fp16 for shared memory.
//
// Include after weights.glsl (it picks the weight format). A W unit is 16
// consecutive k of one weight row (half a quant block); an X unit is 8
// consecutive k of one token row. Units are loaded into registers in their
// source encoding and become fp16 only when staged, so a kernel can keep a
// step's loads in flight while it multiplies the previous step.

#include "fp16_pack.glsl"

#if defined(UNIT_FP32)
// K-quants, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS: the (sub-)block's 16 quant bytes
// (both halves), and what the unit's half needs: Q4_K, (d * sc, dmin * m);
// Q5_K, those and the fifth bits; Q6_K, the high bits and d * scale; Q4_1,
// (d, -m); Q5_1, those and the fifth bits; Q5_0, the fifth bits and d; IQ4_NL,
// d; IQ4_XS, d * (ls - 32). Q2_K and Q3_K: their 2-bit words in .xy (Q3_K's
// high bits in high.x) and the unit's half's (d * sc, dmin * m) or d * (sc - 32).
struct WUnit {
  uvec4 quants;
  uvec2 high;  // FIFTH_BIT: .x; Q6_K
  vec2 scale;  // SCALE_MIN_BLOCKS: (scale, min); Q6_K: (d * scale of the unit's half, unused); Q5_0, IQ4: (d, unused)
};
#elif WEIGHT_BLOCK > 1
// The 16 quant bytes that hold the unit (Q4_0: both halves of its block) and
// the block's scale.
struct WUnit {
  uvec4 quants;
  float scale;
};

// Two quants (bytes 0 and 1 of `bytes`, already biased to 0..255) as fp16
// 1024 + q: the exponent 0x6400 makes the low mantissa bits the integer.
// Then (1024 + q - bias) * d, exact before the one rounding of the product,
// the value fp32 d * (q - bias) rounded to fp16 would have.
uint dequant2(uint bytes, float16_t bias, float16_t d) {
  const uint pair = (bytes & 0xffu) | ((bytes & 0xff00u) << 8);
  const f16vec2 v = (unpackFloat2x16(pair | 0x64006400u) - f16vec2(bias)) * d;
  return packFloat2x16(v);
}
#else
// The unit already packed as fp16: k 0..7, 8..15.
struct WUnit {
  uvec4 lo, hi;
};
#endif

#if defined(UNIT_FP32)
// Unit (row, k0 + 16 * half_k) of weight 1 or (second) weight 2 (PAIR); zeros when !ok.
#if defined(WEIGHT2_BINDING)
#define K_PICK(f, b) (second ? f##2(b) : f(b))
#else
#define K_PICK(f, b) f(b)
#endif
WUnit load_k_unit(uint row, uint k0, uint half_k, bool ok, bool second) {
  WUnit u;
  const uint b = row * (IN_FEATURES / 32) + k0 / 32;
#if !defined(LOW_BIT_K)
  u.quants = ok ? K_PICK(block_quants, b) : uvec4(0);
#endif
#if defined(SCALE_MIN_BLOCKS) && !defined(FIFTH_BIT)
  u.high = uvec2(0);
  u.scale = ok ? K_PICK(uniform_block_scale_min, b) : vec2(0.0);
#elif defined(LOW_BIT_K)
  u.quants = uvec4(ok ? K_PICK(block_low, b) : uvec2(0), 0u, 0u);
#if defined(FMT_Q2_K)
  u.high = uvec2(0);
  const vec4 s = ok ? K_PICK(block_scale_mins, b) : vec4(0.0);
  u.scale = half_k == 0 ? s.xy : s.zw;
#else
  u.high = uvec2(ok ? K_PICK(block_high, b) : 0u, 0u);
  const vec2 s = ok ? K_PICK(block_scales, b) : vec2(0.0);
  u.scale = vec2(half_k == 0 ? s.x : s.y, 0.0);
#endif
#elif defined(IQ4_TABLE)
  u.high = uvec2(0);
  u.scale = vec2(ok ? K_PICK(block_scale, b) : 0.0, 0.0);
#elif defined(FMT_Q5_0)
  u.high = uvec2(ok ? K_PICK(block_high, b) : 0u, 0u);
  u.scale = vec2(ok ? K_PICK(block_scale, b) : 0.0, 0.0);
#elif defined(FIFTH_BIT)
  u.high = uvec2(ok ? K_PICK(block_high, b) : 0u, 0u);
  u.scale = ok ? K_PICK(uniform_block_scale_min, b) : vec2(0.0);
#else
  u.high = ok ? K_PICK(block_high, b) : uvec2(0);
  const vec2 s = ok ? K_PICK(block_scales, b) : vec2(0.0);
  u.scale = vec2(half_k == 0 ? s.x : s.y, 0.0);
#endif
  return u;
}
#endif

// Unit (row, k0 + 16 * half_k) of the bound weight part, IN_FEATURES per row; zeros when !ok.
WUnit load_w_unit(uint row, uint k0, uint half_k, bool ok) {
#if defined(UNIT_FP32)
  return load_k_unit(row, k0, half_k, ok, false);
#else
  WUnit u;
#if WEIGHT_BLOCK > 1
  const uint b = row * (IN_FEATURES / 32) + k0 / 32;
#if QUANT_BYTES == 16
  u.quants = ok ? block_quants(b) : uvec4(0);
#else
  u.quants = ok ? block_quants(b, half_k) : uvec4(0);
#endif
  u.scale = ok ? block_scale(b) : 0.0;
#else
  const uint k = k0 + half_k * 16;
  vec4 v[4];
  if (ok && IN_FEATURES % WIDE_ELEMS == 0 && k + 16 <= IN_FEATURES) {
    float w[8];
    [[unroll]] for (uint e = 0; e < 16; e += WIDE_ELEMS) {
      weights_wide((row * IN_FEATURES + k + e) / WIDE_ELEMS, w);
      [[unroll]] for (uint q = 0; q < WIDE_ELEMS; ++q) v[(e + q) / 4][(e + q) % 4] = w[q];
    }
  } else {
    [[unroll]] for (uint e = 0; e < 16; ++e)
      v[e / 4][e % 4] = ok && k + e < IN_FEATURES ? weight_at(row * IN_FEATURES + k + e) : 0.0;
  }
  u.lo = pack8(v[0], v[1]);
  u.hi = pack8(v[2], v[3]);
#endif
  return u;
#endif
}

#if defined(UNIT_FP32)
// A unit's 16 values in fp32, each as ggml's dequantisation gives it
// (tests/kernel checks them bit for bit on devices without tensor units). Word
// k of the half's 4-, 5- or 6-bit quants holds elements 4k .. 4k+3 of the half,
// one a byte.
void k_unit_values(WUnit u, uint half_k, out vec4 v[4]) {
  [[unroll]] for (uint k = 0; k < 4; ++k) {
#if defined(LOW_BIT_K)
    // Q2_K's 2-bit q (Q3_K's with its high bit, q + 4) of elements 4k .. 4k+3 of the half.
    uint c = (u.quants[half_k] >> (2u * k)) & 0x03030303u;
#if defined(FMT_Q3_K)
    c |= ((u.high.x >> (k + 4u * half_k)) & 0x01010101u) << 2;
    const vec4 q = vec4(c & 0xffu, (c >> 8) & 0xffu, (c >> 16) & 0xffu, c >> 24) - 4.0;
    v[k] = u.scale.x * q;  // ggml's d * (sc - 32) * q: one rounding
#else
    const vec4 q = vec4(c & 0xffu, (c >> 8) & 0xffu, (c >> 16) & 0xffu, c >> 24);
    precise const vec4 prod = u.scale.x * q;  // rounded, then the min: as ggml
    precise const vec4 x = prod - u.scale.y;
    v[k] = x;
#endif
#else
    uint c = (u.quants[k] >> (4u * half_k)) & 0x0F0F0F0Fu;
#if defined(FMT_Q6_K)
    c |= ((u.high[k >> 1] >> (4u * (k & 1u) + 2u * half_k)) & 0x03030303u) << 4;
    const vec4 q = vec4(c & 0xffu, (c >> 8) & 0xffu, (c >> 16) & 0xffu, c >> 24) - 32.0;
    v[k] = u.scale.x * q;
#elif defined(IQ4_TABLE)
    // ggml's d * kvalues_iq4nl[q]: one rounding.
    v[k] = u.scale.x * vec4(kIq4Values[c & 0xffu], kIq4Values[(c >> 8) & 0xffu], kIq4Values[(c >> 16) & 0xffu],
                            kIq4Values[c >> 24]);
#else
#if defined(FIFTH_BIT)
    c |= ((u.high.x >> (k + 4u * half_k)) & 0x01010101u) << 4;
#endif
    const vec4 q = vec4(c & 0xffu, (c >> 8) & 0xffu, (c >> 16) & 0xffu, c >> 24);
#if defined(FMT_Q5_0)
    v[k] = u.scale.x * (q - 16.0);  // ggml's (q - 16) * d: exact integers, one rounding
#else
    precise const vec4 prod = u.scale.x * q;  // rounded, then the min: as ggml, no fused multiply-add
    precise const vec4 x = prod - u.scale.y;
    v[k] = x;
#endif
#endif
#endif  // LOW_BIT_K
  }
}
#endif

// The unit as 16 fp16 values: k 0..7 in lo, 8..15 in hi.
void w_unit_fp16(WUnit u, uint half_k, out uvec4 lo, out uvec4 hi) {
#if defined(UNIT_FP32)
  // Rounded once to fp16 from fp32 (pack8): the scale d * sc is no fp16
  // value, so dequant2's fp16 product would round twice.
  vec4 v[4];
  k_unit_values(u, half_k, v);
  lo = pack8(v[0], v[1]);
  hi = pack8(v[2], v[3]);
#elif WEIGHT_BLOCK > 1
  const float16_t d = float16_t(u.scale);
  uvec4 q = u.quants;
#if QUANT_BYTES == 16
  // Q4_0: the first 16 elements are the low nibbles, the next 16 the high ones.
  const float16_t bias = float16_t(1032.0);  // 1024 + 8
  q = (half_k == 0 ? q : q >> 4) & 0x0f0f0f0fu;
#else
  // Q8_0: int8 quants, biased by 128 to be unsigned.
  const float16_t bias = float16_t(1152.0);  // 1024 + 128
  q ^= 0x80808080u;
#endif
  lo = uvec4(dequant2(q.x, bias, d), dequant2(q.x >> 16, bias, d), dequant2(q.y, bias, d),
             dequant2(q.y >> 16, bias, d));
  hi = uvec4(dequant2(q.z, bias, d), dequant2(q.z >> 16, bias, d), dequant2(q.w, bias, d),
             dequant2(q.w >> 16, bias, d));
#else
  lo = u.lo;
  hi = u.hi;
#endif
}
