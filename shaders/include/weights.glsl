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

#if defined(FMT_F32)
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { float W[]; };
float weight_at(uint i) { return W[i]; }
#elif defined(FMT_F16)
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { float16_t W[]; };
float weight_at(uint i) { return float(W[i]); }
#elif defined(FMT_BF16)
layout(binding = WEIGHT_BINDING) readonly buffer WeightBuf { uint16_t W[]; };
float weight_at(uint i) { return uintBitsToFloat(uint(W[i]) << 16); }
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
