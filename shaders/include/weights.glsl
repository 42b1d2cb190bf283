// weights.glsl — read one weight tensor part in any of the engine's formats.
//
// The includer defines WEIGHT_BINDING and exactly one of FMT_F32, FMT_F16,
// FMT_BF16, FMT_Q8_0, FMT_Q4_0 (the build compiles one SPIR-V module per
// format). Elements are indexed from the start of the bound part, row-major,
// so element i of row r is r * IN_FEATURES + i; block b of a block format is
// elements 32b .. 32b+31 (row r's blocks are r * IN_FEATURES/32 ..).
//
// Block formats hold ggml's values bit for bit, but on the device each part is
// planar: all quants first, then all scales (see quant/formats.hpp), so a
// block's quants are one aligned 16- or 32-byte load. The includer defines
// WEIGHT_PART_BLOCKS, an expression for the blocks in the bound part (e.g.
// pc.rows * (IN_FEATURES / 32)), before including this file; it locates the
// scales.
//   Q8_0: quants 32 int8 per block, then f16 scales     x = d * q
//   Q4_0: quants 16 bytes per block, then f16 scales    x = d * (q - 8), where
//         q[j] is the low nibble of byte j for j < 16, the high nibble of byte j-16 after.

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
#else
#error "weights.glsl: define one of FMT_F32, FMT_F16, FMT_BF16, FMT_Q8_0, FMT_Q4_0"
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
#endif
