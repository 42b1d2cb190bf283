// weights.glsl — read one weight tensor part in any GGUF block format.
//
// The includer defines WEIGHT_BINDING and exactly one of FMT_F32, FMT_F16,
// FMT_BF16, FMT_Q8_0, FMT_Q4_0 (the build compiles one SPIR-V module per
// format). Elements are indexed from the start of the bound part, row-major,
// so element i of row r is r * K + i. Block formats (ggml's, bit for bit):
//   Q8_0 block = 17 uint16: f16 scale, then 32 int8      x = d * q
//   Q4_0 block =  9 uint16: f16 scale, then 16 bytes     x = d * (q - 8), where
//        q[j] is the low nibble of byte j for j < 16, the high nibble of byte j-16 after.

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
#define BLOCK_WORDS 17
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { uint16_t W[]; };
float block_scale(uint b) { return unpackHalf2x16(uint(W[b * BLOCK_WORDS])).x; }
// Raw quant j of block b, as a float (int8).
float block_quant(uint b, uint j) {
  const uint word = uint(W[b * BLOCK_WORDS + 1 + (j >> 1)]);
  const int q = int((word >> ((j & 1u) * 8u)) & 0xffu);
  return float((q ^ 0x80) - 0x80);
}
float weight_at(uint i) { return block_scale(i >> 5) * block_quant(i >> 5, i & 31u); }
#elif defined(FMT_Q4_0)
#define WEIGHT_BLOCK 32
#define BLOCK_WORDS 9
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { uint16_t W[]; };
float block_scale(uint b) { return unpackHalf2x16(uint(W[b * BLOCK_WORDS])).x; }
float block_quant(uint b, uint j) {
  const uint byte_index = j & 15u;
  const uint word = uint(W[b * BLOCK_WORDS + 1 + (byte_index >> 1)]);
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
