// weights.glsl — read one weight tensor part in any of the engine's formats.
//
// The includer defines WEIGHT_BINDING and exactly one of FMT_F32, FMT_F16,
// FMT_BF16, FMT_Q8_0, FMT_Q4_0, FMT_Q4_1, FMT_Q5_0, FMT_Q5_1, FMT_Q4_K,
// FMT_Q5_K, FMT_Q6_K, FMT_Q2_K, FMT_Q3_K, FMT_IQ4_NL, FMT_IQ4_XS (the build
// compiles one SPIR-V module per format). Elements are indexed from the start
// of the bound part, row-major, so element i of row r is r * IN_FEATURES + i; block b of a block format is elements
// 32b .. 32b+31 (row r's blocks are r * IN_FEATURES/32 ..).
//
// Block formats hold ggml's values bit for bit, but on the device each part is
// planar: all quants first, then all scales (see quant/formats.hpp), so a
// block's quants are one aligned 16- or 32-byte load. The includer defines
// WEIGHT_PART_BLOCKS, an expression for the blocks in the bound part (e.g.
// pc.rows * (IN_FEATURES / 32)), before including this file; it locates the scales.
//   Q8_0: quants 32 int8 per block, then f16 scales     x = d * q
//   Q4_0: quants 16 bytes per block, then f16 scales    x = d * (q - 8), where
//         q[j] is the low nibble of byte j for j < 16, the high nibble of byte j-16 after.
// The K-quants keep ggml's 256-element superblocks' bytes, planar in 32-element
// sub-blocks (WEIGHT_BLOCK stays 32: "block" b below is sub-block b, and the
// part holds WEIGHT_PART_BLOCKS / 8 superblocks); notes/kquants.md says why.
//   Q4_K: quants 16 bytes per sub-block, nibbles arranged as Q4_0's; then each
//         superblock's 12 packed scale bytes; then each superblock's (d, dmin)
//         as two f16. x = (d * sc) * q - dmin * m (sc, m: quant/formats.hpp).
//   Q5_K: Q4_K's, with each quant's fifth bit in 4 bytes per sub-block after
//         the quants (before the scales): for quant word k, bit k of byte c
//         of the word is element 4k+c's, bit k+4 element 4k+16+c's.
//   Q6_K: the low 4 bits of the quants, 16 bytes per sub-block as Q4_0's; then
//         their high 2 bits, 8 bytes per sub-block: for the elements of quant
//         word k (4k .. 4k+3 in its low nibbles, 4k+16 .. in its high ones),
//         byte c of high word k / 2 holds, from bit 0, element 4k+c, 4k+16+c
//         (k even), then those of k odd; then each superblock's 16 int8 scales;
//         then each superblock's f16 d. x = (d * scale) * (q - 32), scale the
//         sub-block's first (elements 0..15) or second (16..31).
// All keep every byte of the file's superblock (144, 176 and 210 bytes).
// Q4_1, Q5_0 and Q5_1 (32-element blocks of 20, 22, 24 bytes) are read as
// Q4_K's and Q5_K's sub-blocks are (notes/legacy_quants.md):
//   Q4_1: quants 16 bytes per block as Q4_0's; then each block's (d, m) as two
//         f16. x = d * q + m.
//   Q5_0: quants 16 bytes per block; then the fifth bits, 4 bytes per block
//         arranged as Q5_K's; then each block's f16 d. x = d * (q - 16).
//   Q5_1: Q5_0's quants and fifth bits; then each block's (d, m). x = d * q + m.
// Q2_K and Q3_K (2 and 3 bits, 16-element groups with their own scales) keep
// their 84 and 110 bytes, planar in 32-element sub-blocks (notes/low_bit_kquants.md):
//   Q2_K: the 2-bit quants, 8 bytes per sub-block: word h holds elements
//         16h .. 16h+15, byte c of it elements 16h + c, +4, +8, +12 at bits
//         0, 2, 4, 6; then each sub-block's two scale bytes (ggml's, one per
//         16 elements: scale low nibble, min high); then each superblock's
//         (d, dmin). x = (d * sc) * q - dmin * m.
//   Q3_K: the low 2 bits as Q2_K's quants; then the high bits, 4 bytes per
//         sub-block arranged as Q5_K's fifth bits; then each superblock's 12
//         packed scale bytes (ggml's); then each superblock's f16 d.
//         x = (d * (sc - 32)) * q, q = low + 4 * high - 4.
// IQ4_NL and IQ4_XS: nibbles that pick one of 16 values (kIq4Values), held as
// Q4_0's blocks and Q4_K's sub-blocks are (notes/iq4.md):
//   IQ4_NL: quants 16 bytes per block as Q4_0's; then each block's f16 d.
//           x = d * kIq4Values[q].
//   IQ4_XS: quants 16 bytes per sub-block as Q4_0's; then each superblock's
//           4 scales_l bytes (one word); then each superblock's scales_h
//           (uint16); then each superblock's f16 d. x = (d * (ls - 32)) *
//           kIq4Values[q], ls sub-block j's 6-bit scale (quant/formats.hpp).
// Families the kernels share code by: SCALE_MIN_BLOCKS (a block's or sub-block's
// values are sm.x * q - sm.y: Q4_K, Q5_K, Q4_1, Q5_1; the legacy formats'
// min enters as -m), FIFTH_BIT (Q5_K, Q5_0, Q5_1), IQ4_TABLE (IQ4_NL, IQ4_XS:
// a block's or sub-block's values are block_scale(b) * kIq4Values[q]),
// UNIT_FP32 (the tensor-unit kernels make their operands in fp32 and round
// once: all of these and Q6_K).

#extension GL_EXT_shader_16bit_storage : require

// Float formats also get a 16-byte view of the same binding (W4), for kernels
// that read WIDE_ELEMS consecutive weights with one load when rows allow it.
#if defined(FMT_F32)
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { float W[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf4 { uvec4 W4[]; };
float weight_at(uint i) { return W[i]; }
#define WIDE_ELEMS 4
// Elements 4g .. 4g+3 of the part.
void weights_wide(uint g, out float w[8]) {
  const uvec4 v = W4[g];
  w[0] = uintBitsToFloat(v.x); w[1] = uintBitsToFloat(v.y);
  w[2] = uintBitsToFloat(v.z); w[3] = uintBitsToFloat(v.w);
}
#elif defined(FMT_F16)
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { float16_t W[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf4 { uvec4 W4[]; };
float weight_at(uint i) { return float(W[i]); }
#define WIDE_ELEMS 8
void weights_wide(uint g, out float w[8]) {
  const uvec4 v = W4[g];
  vec2 p = unpackHalf2x16(v.x); w[0] = p.x; w[1] = p.y;
  p = unpackHalf2x16(v.y); w[2] = p.x; w[3] = p.y;
  p = unpackHalf2x16(v.z); w[4] = p.x; w[5] = p.y;
  p = unpackHalf2x16(v.w); w[6] = p.x; w[7] = p.y;
}
#elif defined(FMT_BF16)
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { uint16_t W[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf4 { uvec4 W4[]; };
float weight_at(uint i) { return uintBitsToFloat(uint(W[i]) << 16); }
#define WIDE_ELEMS 8
void weights_wide(uint g, out float w[8]) {
  const uvec4 v = W4[g];
  w[0] = uintBitsToFloat(v.x << 16); w[1] = uintBitsToFloat(v.x & 0xffff0000u);
  w[2] = uintBitsToFloat(v.y << 16); w[3] = uintBitsToFloat(v.y & 0xffff0000u);
  w[4] = uintBitsToFloat(v.z << 16); w[5] = uintBitsToFloat(v.z & 0xffff0000u);
  w[6] = uintBitsToFloat(v.w << 16); w[7] = uintBitsToFloat(v.w & 0xffff0000u);
}
#elif defined(FMT_Q8_0)
#define WEIGHT_BLOCK 32
#define QUANT_BYTES 32
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { uint16_t W[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightQuants { uvec4 Wq[]; };
float block_scale(uint b) { return unpackHalf2x16(uint(W[(WEIGHT_PART_BLOCKS) * 16u + b])).x; }
// Quants of block b: bytes 16h .. 16h+15 (elements 16h ..) for h = 0, 1.
uvec4 block_quants(uint b, uint h) { return Wq[2u * b + h]; }
// Raw quant j of block b, as a float (int8).
float block_quant(uint b, uint j) {
  const uint word = uint(W[b * 16u + (j >> 1)]);
  const int q = int((word >> ((j & 1u) * 8u)) & 0xffu);
  return float((q ^ 0x80) - 0x80);
}
float weight_at(uint i) { return block_scale(i >> 5) * block_quant(i >> 5, i & 31u); }
#elif defined(FMT_Q4_0)
#define WEIGHT_BLOCK 32
#define QUANT_BYTES 16
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { uint16_t W[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightQuants { uvec4 Wq[]; };
float block_scale(uint b) { return unpackHalf2x16(uint(W[(WEIGHT_PART_BLOCKS) * 8u + b])).x; }
// Quants of block b: 16 bytes, byte j holding elements j (low nibble) and j+16.
uvec4 block_quants(uint b) { return Wq[b]; }
float block_quant(uint b, uint j) {
  const uint byte_index = j & 15u;
  const uint word = uint(W[b * 8u + (byte_index >> 1)]);
  const uint byte_value = (word >> ((byte_index & 1u) * 8u)) & 0xffu;
  return float(j < 16u ? (byte_value & 15u) : (byte_value >> 4)) - 8.0;
}
float weight_at(uint i) { return block_scale(i >> 5) * block_quant(i >> 5, i & 31u); }
#elif defined(FMT_Q4_1) || defined(FMT_Q5_0) || defined(FMT_Q5_1)
#define WEIGHT_BLOCK 32
#define QUANT_BYTES 16
#define UNIT_FP32 1
#if defined(FMT_Q4_1)
#define SCALE_MIN_BLOCKS 1
#else
#define FIFTH_BIT 1
#if defined(FMT_Q5_1)
#define SCALE_MIN_BLOCKS 1
#endif
#endif
// The readers of one binding's part, given its views WUB (uint), WQB (uvec4)
// and WHB (uint16). Q5_0's d goes through the 16-bit view: a part of an odd
// number of blocks ends 2 bytes past a word.
#if defined(FMT_Q4_1)
#define LEGACY_READERS(WUB, WQB, WHB, QUANTS, HIGH, SCALE)                                    \
  uvec4 QUANTS(uint b) { return WQB[b]; }                                                    \
  /* (d, -m): the value is d * q - (-m), which is ggml's d * q + m exactly. */               \
  vec2 SCALE(uint b) { const vec2 dm = unpackHalf2x16(WUB[4u * (WEIGHT_PART_BLOCKS) + b]); return vec2(dm.x, -dm.y); } \
  /* The tensor-unit kernels' name for it (the K-quants' differs there). */                  \
  vec2 uniform_##SCALE(uint b) { return SCALE(b); }
#elif defined(FMT_Q5_1)
#define LEGACY_READERS(WUB, WQB, WHB, QUANTS, HIGH, SCALE)                                    \
  uvec4 QUANTS(uint b) { return WQB[b]; }                                                    \
  uint HIGH(uint b) { return WUB[4u * (WEIGHT_PART_BLOCKS) + b]; }                           \
  vec2 SCALE(uint b) { const vec2 dm = unpackHalf2x16(WUB[5u * (WEIGHT_PART_BLOCKS) + b]); return vec2(dm.x, -dm.y); } \
  vec2 uniform_##SCALE(uint b) { return SCALE(b); }
#else
#define LEGACY_READERS(WUB, WQB, WHB, QUANTS, HIGH, SCALE)                                    \
  uvec4 QUANTS(uint b) { return WQB[b]; }                                                    \
  uint HIGH(uint b) { return WUB[4u * (WEIGHT_PART_BLOCKS) + b]; }                           \
  float SCALE(uint b) { return unpackHalf2x16(uint(WHB[10u * (WEIGHT_PART_BLOCKS) + b])).x; }
#endif
layout(binding = WEIGHT_BINDING) readonly buffer WeightWords { uint WKW[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightQuants { uvec4 WKQ[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightHalves { uint16_t WKH[]; };
#if defined(FMT_Q5_0)
LEGACY_READERS(WKW, WKQ, WKH, block_quants, block_high, block_scale)
#else
LEGACY_READERS(WKW, WKQ, WKH, block_quants, block_high, block_scale_min)
#endif
#elif defined(FMT_Q4_K) || defined(FMT_Q5_K) || defined(FMT_Q6_K)
#define WEIGHT_BLOCK 32
#define QUANT_BYTES 16
#define K_QUANT 1
#define UNIT_FP32 1
#if !defined(FMT_Q6_K)
#define SCALE_MIN_BLOCKS 1
#if defined(FMT_Q5_K)
#define FIFTH_BIT 1
#endif
#endif
// The readers of one binding's K-quant part, given its views WUB (uint), WQB
// (uvec4) and WHB (uint16) and the readers' names (weight 1: block_quants ...,
// weight 2: block_quants2 ...).
#define K_BYTE(WUB, word_index, byte) ((WUB[word_index] >> (8u * (byte))) & 0xffu)
#if defined(FMT_Q4_K) || defined(FMT_Q5_K)
// Words of quants (and fifth bits) per sub-block, before the scales.
#if defined(FMT_Q4_K)
#define K_QUANT_WORDS 4u
#else
#define K_QUANT_WORDS 5u
#endif
#define K_READERS(WUB, WQB, QUANTS, SCALE_MIN)                                               \
  uvec4 QUANTS(uint b) { return WQB[b]; }                                                    \
  /* Sub-block b's (d * sc, dmin * m), each one float product as ggml's. All four */       \
  /* words are loaded whatever j is, and the fields selected: neighbouring lanes  */         \
  /* take neighbouring sub-blocks, and a branch on j < 4 made each warp wait for  */         \
  /* one side's loads before issuing the other's. */                                         \
  vec2 SCALE_MIN(uint b) {                                                                   \
    const uint P = WEIGHT_PART_BLOCKS, sb = b >> 3u, j = b & 7u;                             \
    const uint sw = K_QUANT_WORDS * P + 3u * sb; /* the superblock's 12 scale bytes */       \
    const vec2 dm = unpackHalf2x16(WUB[K_QUANT_WORDS * P + 3u * (P >> 3u) + sb]);            \
    const uint at = j & 3u;                                                                  \
    const uint s6 = K_BYTE(WUB, sw, at), m6 = K_BYTE(WUB, sw + 1u, at);                      \
    const uint c = K_BYTE(WUB, sw + 2u, at);                                                 \
    const uint sc = j < 4u ? s6 & 63u : (c & 15u) | ((s6 >> 6u) << 4u);                       \
    const uint m = j < 4u ? m6 & 63u : (c >> 4u) | ((m6 >> 6u) << 4u);                        \
    return vec2(dm.x * float(sc), dm.y * float(m));                                          \
  }                                                                                          \
  /* The same where a warp's lanes read one sub-block (the tensor-unit kernels' */           \
  /* staging): loading only j's side of the scale bytes is then faster (12B Q5_K  */         \
  /* pp512 -6 % with the loads of SCALE_MIN, H100). */                                       \
  vec2 uniform_##SCALE_MIN(uint b) {                                                         \
    const uint P = WEIGHT_PART_BLOCKS, sb = b >> 3u, j = b & 7u;                             \
    const uint sw = K_QUANT_WORDS * P + 3u * sb;                                             \
    const vec2 dm = unpackHalf2x16(WUB[K_QUANT_WORDS * P + 3u * (P >> 3u) + sb]);            \
    uint sc, m;                                                                              \
    if (j < 4u) {                                                                            \
      sc = K_BYTE(WUB, sw, j) & 63u;                                                         \
      m = K_BYTE(WUB, sw + 1u, j) & 63u;                                                     \
    } else {                                                                                 \
      const uint c = K_BYTE(WUB, sw + 2u, j - 4u);                                           \
      sc = (c & 15u) | ((K_BYTE(WUB, sw, j - 4u) >> 6u) << 4u);                              \
      m = (c >> 4u) | ((K_BYTE(WUB, sw + 1u, j - 4u) >> 6u) << 4u);                          \
    }                                                                                        \
    return vec2(dm.x * float(sc), dm.y * float(m));                                          \
  }
#else
#define K_READERS(WUB, WQB, WHB, QUANTS, HIGH, SCALES)                                       \
  uvec4 QUANTS(uint b) { return WQB[b]; }                                                    \
  /* The high 2 bits of sub-block b's quants (weights.glsl's comment above). */              \
  uvec2 HIGH(uint b) {                                                                       \
    const uint w = 4u * (WEIGHT_PART_BLOCKS) + 2u * b;                                       \
    return uvec2(WUB[w], WUB[w + 1u]);                                                       \
  }                                                                                          \
  /* d * scale for sub-block b's elements 0..15 (x) and 16..31 (y); d through the  */        \
  /* 16-bit view WHB: a part of an odd number of superblocks ends 2 bytes past a word. */    \
  vec2 SCALES(uint b) {                                                                      \
    const uint P = WEIGHT_PART_BLOCKS, sb = b >> 3u, j = b & 7u;                             \
    const uint pair = (WUB[6u * P + 4u * sb + (j >> 1u)] >> (16u * (j & 1u))) & 0xffffu;     \
    const float d = unpackHalf2x16(uint(WHB[13u * P + sb])).x;                               \
    return vec2(d * float(bitfieldExtract(int(pair), 0, 8)), d * float(bitfieldExtract(int(pair), 8, 8))); \
  }
#endif
layout(binding = WEIGHT_BINDING) readonly buffer WeightWords { uint WKW[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightQuants { uvec4 WKQ[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightHalves { uint16_t WKH[]; };
#if defined(FMT_Q4_K) || defined(FMT_Q5_K)
K_READERS(WKW, WKQ, block_quants, block_scale_min)
#if defined(FMT_Q5_K)
// The fifth bits of sub-block b's quants (the comment above).
uint block_high(uint b) { return WKW[4u * (WEIGHT_PART_BLOCKS) + b]; }
#endif
#else
K_READERS(WKW, WKQ, WKH, block_quants, block_high, block_scales)
#endif
#if defined(FMT_Q6_K)
uint block_quant(uint b, uint i) {
  const uint low = (WKQ[b][(i & 15u) >> 2u] >> (8u * (i & 3u) + 4u * (i >> 4u))) & 15u;
  const uint k = (i & 15u) >> 2u;
  const uint high = (block_high(b)[k >> 1u] >> (8u * (i & 3u) + 4u * (k & 1u) + 2u * (i >> 4u))) & 3u;
  return low | (high << 4u);
}
float weight_at(uint i) {
  const uint b = i >> 5;
  const vec2 s = block_scales(b);
  return ((i & 16u) == 0u ? s.x : s.y) * float(int(block_quant(b, i & 31u)) - 32);
}
#endif
#elif defined(FMT_Q2_K) || defined(FMT_Q3_K)
#define WEIGHT_BLOCK 32
#define UNIT_FP32 1
#define LOW_BIT_K 1
// The readers of one binding's part, given its views WUB (uint), W2B (uvec2)
// and WHB (uint16): sub-block b's 2-bit quants (words of elements 0..15 and
// 16..31), Q3_K's high bits, and each 16-element half's scale: Q3_K's
// d * (sc - 32) for the halves (x, y); Q2_K's (d * sc, dmin * m) for the
// first half (x, y) and the second (z, w), each one float product as ggml's.
#if defined(FMT_Q2_K)
#define LOW_K_READERS(WUB, W2B, WHB, LOW, HIGH, SCALES)                                      \
  uvec2 LOW(uint b) { return W2B[b]; }                                                       \
  vec4 SCALES(uint b) {                                                                      \
    const uint P = WEIGHT_PART_BLOCKS, SB = P >> 3u;                                          \
    const uint pair = uint(WHB[4u * P + b]);                                                 \
    const vec2 dm = unpackHalf2x16(WUB[20u * SB + (b >> 3u)]);                               \
    return vec4(dm.x * float(pair & 15u), dm.y * float((pair >> 4u) & 15u),                   \
                dm.x * float((pair >> 8u) & 15u), dm.y * float(pair >> 12u));                 \
  }
#else
#define LOW_K_READERS(WUB, W2B, WHB, LOW, HIGH, SCALES)                                      \
  uvec2 LOW(uint b) { return W2B[b]; }                                                       \
  uint HIGH(uint b) { return WUB[2u * (WEIGHT_PART_BLOCKS) + b]; }                           \
  vec2 SCALES(uint b) {                                                                      \
    const uint P = WEIGHT_PART_BLOCKS, SB = P >> 3u, sb = b >> 3u, g = 2u * (b & 7u);         \
    const uint sw = 3u * P + 3u * sb; /* the superblock's 12 packed scale bytes */           \
    const float d = unpackHalf2x16(uint(WHB[54u * SB + sb])).x;                              \
    vec2 s;                                                                                  \
    for (uint h = 0u; h < 2u; ++h) {                                                         \
      const uint i = g + h;                                                                  \
      const uint low = (K_BYTE(WUB, sw + ((i & 7u) >> 2u), i & 3u) >> (4u * (i >> 3u))) & 15u; \
      const uint high = (K_BYTE(WUB, sw + 2u, i & 3u) >> (2u * (i >> 2u))) & 3u;              \
      s[h] = d * float(int(low | (high << 4u)) - 32);                                        \
    }                                                                                        \
    return s;                                                                                \
  }
#endif
#define K_BYTE(WUB, word_index, byte) ((WUB[word_index] >> (8u * (byte))) & 0xffu)
layout(binding = WEIGHT_BINDING) readonly buffer WeightWords { uint WKW[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightPairs { uvec2 WK2[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightHalves { uint16_t WKH[]; };
#if defined(FMT_Q2_K)
LOW_K_READERS(WKW, WK2, WKH, block_low, block_high, block_scale_mins)
#else
LOW_K_READERS(WKW, WK2, WKH, block_low, block_high, block_scales)
#endif
// Quant i (0 .. 31) of sub-block b: Q2_K's 0 .. 3, Q3_K's -4 .. 3.
int block_quant(uint b, uint i) {
  const uint c = i & 3u, k = (i & 15u) >> 2u, h = i >> 4u;
  const uint low = (block_low(b)[h] >> (8u * c + 2u * k)) & 3u;
#if defined(FMT_Q3_K)
  return int(low | (((block_high(b) >> (8u * c + k + 4u * h)) & 1u) << 2u)) - 4;
#else
  return int(low);
#endif
}
float weight_at(uint i) {
  const uint b = i >> 5, h = (i >> 4) & 1u;
#if defined(FMT_Q3_K)
  return block_scales(b)[h] * float(block_quant(b, i & 31u));
#else
  const vec4 s = block_scale_mins(b);
  precise const float prod = (h == 0u ? s.x : s.z) * float(block_quant(b, i & 31u));  // not fused: as ggml
  precise const float v = prod - (h == 0u ? s.y : s.w);
  return v;
#endif
}
#elif defined(FMT_IQ4_NL) || defined(FMT_IQ4_XS)
#define WEIGHT_BLOCK 32
#define QUANT_BYTES 16
#define UNIT_FP32 1
#define IQ4_TABLE 1
// ggml's kvalues_iq4nl (quant/formats.hpp's kIq4Values).
const float kIq4Values[16] = float[](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
                                     1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
// The readers of one binding's part, given its views WUB (uint), WQB (uvec4)
// and WHB (uint16): block b's quants, and its scale (IQ4_XS: sub-block b's
// d * (ls - 32), one float product as ggml's).
#if defined(FMT_IQ4_NL)
#define IQ4_READERS(WUB, WQB, WHB, QUANTS, SCALE)                                            \
  uvec4 QUANTS(uint b) { return WQB[b]; }                                                    \
  float SCALE(uint b) { return unpackHalf2x16(uint(WHB[8u * (WEIGHT_PART_BLOCKS) + b])).x; }
#else
#define IQ4_READERS(WUB, WQB, WHB, QUANTS, SCALE)                                            \
  uvec4 QUANTS(uint b) { return WQB[b]; }                                                    \
  float SCALE(uint b) {                                                                      \
    const uint P = WEIGHT_PART_BLOCKS, SB = P >> 3u, sb = b >> 3u, j = b & 7u;               \
    const uint low = (WUB[4u * P + sb] >> (4u * j)) & 15u;                                   \
    const uint high = (uint(WHB[66u * SB + sb]) >> (2u * j)) & 3u;                           \
    const float d = unpackHalf2x16(uint(WHB[67u * SB + sb])).x;                              \
    return d * float(int(low | (high << 4u)) - 32);                                          \
  }
#endif
layout(binding = WEIGHT_BINDING) readonly buffer WeightWords { uint WKW[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightQuants { uvec4 WKQ[]; };
layout(binding = WEIGHT_BINDING) readonly buffer WeightHalves { uint16_t WKH[]; };
IQ4_READERS(WKW, WKQ, WKH, block_quants, block_scale)
#else
#error "weights.glsl: define one of FMT_F32, FMT_F16, FMT_BF16, FMT_Q8_0, FMT_Q4_0, FMT_Q4_1, FMT_Q5_0, FMT_Q5_1, FMT_Q2_K, FMT_Q3_K, FMT_Q4_K, FMT_Q5_K, FMT_Q6_K, FMT_IQ4_NL, FMT_IQ4_XS"
#endif

#if defined(SCALE_MIN_BLOCKS) || defined(FMT_Q5_0) || defined(IQ4_TABLE)
// Quant i of (sub-)block b: byte i % 16 of its 16, low nibble for i < 16; the
// fifth bit from its word (FIFTH_BIT).
uint block_quant(uint b, uint i) {
  const uint low = (WKQ[b][(i & 15u) >> 2u] >> (8u * (i & 3u) + 4u * (i >> 4u))) & 15u;
#if defined(FIFTH_BIT)
  return low | (((block_high(b) >> (8u * (i & 3u) + ((i & 15u) >> 2u) + 4u * (i >> 4u))) & 1u) << 4u);
#else
  return low;
#endif
}
#if defined(FMT_Q5_0)
// ggml's (q - 16) * d: an exact integer times d.
float weight_at(uint i) { return float(int(block_quant(i >> 5, i & 31u)) - 16) * block_scale(i >> 5); }
#elif defined(IQ4_TABLE)
float weight_at(uint i) { return block_scale(i >> 5) * kIq4Values[block_quant(i >> 5, i & 31u)]; }
#else
float weight_at(uint i) {
  const uint b = i >> 5;
  const vec2 sm = block_scale_min(b);
  precise const float prod = sm.x * float(block_quant(b, i & 31u));  // not fused: ggml rounds the product
  precise const float v = prod - sm.y;
  return v;
}
#endif
#endif

#ifndef WEIGHT_BLOCK
#define WEIGHT_BLOCK 1
#endif
#ifndef WIDE_ELEMS
#define WIDE_ELEMS 1
#endif

// A second tensor of the same format and shape (matvec's fused gate and up),
// when the includer defines WEIGHT2_BINDING.
#if defined(WEIGHT2_BINDING) && defined(FMT_Q8_0)
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Buf { uint16_t W2[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Quants { uvec4 Wq2[]; };
float block_scale2(uint b) { return unpackHalf2x16(uint(W2[(WEIGHT_PART_BLOCKS) * 16u + b])).x; }
uvec4 block_quants2(uint b, uint h) { return Wq2[2u * b + h]; }
#elif defined(WEIGHT2_BINDING) && defined(FMT_Q4_0)
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Buf { uint16_t W2[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Quants { uvec4 Wq2[]; };
float block_scale2(uint b) { return unpackHalf2x16(uint(W2[(WEIGHT_PART_BLOCKS) * 8u + b])).x; }
uvec4 block_quants2(uint b) { return Wq2[b]; }
#elif defined(WEIGHT2_BINDING) && (defined(FMT_Q4_1) || defined(FMT_Q5_0) || defined(FMT_Q5_1))
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Words { uint WKW2[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Quants { uvec4 WKQ2[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Halves { uint16_t WKH2[]; };
#if defined(FMT_Q5_0)
LEGACY_READERS(WKW2, WKQ2, WKH2, block_quants2, block_high2, block_scale2)
#else
LEGACY_READERS(WKW2, WKQ2, WKH2, block_quants2, block_high2, block_scale_min2)
#endif
#elif defined(WEIGHT2_BINDING) && defined(LOW_BIT_K)
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Words { uint WKW2[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Pairs { uvec2 WK22[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Halves { uint16_t WKH2[]; };
#if defined(FMT_Q2_K)
LOW_K_READERS(WKW2, WK22, WKH2, block_low2, block_high2, block_scale_mins2)
#else
LOW_K_READERS(WKW2, WK22, WKH2, block_low2, block_high2, block_scales2)
#endif
#elif defined(WEIGHT2_BINDING) && defined(IQ4_TABLE)
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Words { uint WKW2[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Quants { uvec4 WKQ2[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Halves { uint16_t WKH2[]; };
IQ4_READERS(WKW2, WKQ2, WKH2, block_quants2, block_scale2)
#elif defined(WEIGHT2_BINDING) && defined(K_QUANT)
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Words { uint WKW2[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Quants { uvec4 WKQ2[]; };
layout(binding = WEIGHT2_BINDING) readonly buffer Weight2Halves { uint16_t WKH2[]; };
#if defined(FMT_Q4_K) || defined(FMT_Q5_K)
K_READERS(WKW2, WKQ2, block_quants2, block_scale_min2)
#if defined(FMT_Q5_K)
uint block_high2(uint b) { return WKW2[4u * (WEIGHT_PART_BLOCKS) + b]; }
#endif
#else
K_READERS(WKW2, WKQ2, WKH2, block_quants2, block_high2, block_scales2)
#endif
#endif
