// coop_operands.glsl — operands of the cooperative-matrix kernels, moved from
// their storage encodings to fp16 for shared memory.
//
// Include after weights.glsl (it picks the weight format). A W unit is 16
// consecutive k of one weight row (half a quant block); an X unit is 8
// consecutive k of one token row. Units are loaded into registers in their
// source encoding and become fp16 only when staged, so a kernel can keep a
// step's loads in flight while it multiplies the previous step.

#include "fp16_pack.glsl"

#if WEIGHT_BLOCK > 1
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

// Unit (row, k0 + 16 * half_k) of the bound weight part, IN_FEATURES per row; zeros when !ok.
WUnit load_w_unit(uint row, uint k0, uint half_k, bool ok) {
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
}

// The unit as 16 fp16 values: k 0..7 in lo, 8..15 in hi.
void w_unit_fp16(WUnit u, uint half_k, out uvec4 lo, out uvec4 hi) {
#if WEIGHT_BLOCK > 1
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
