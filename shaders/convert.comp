#version 450
// convert — turn F32/F16/BF16 source weights (safetensors) into the scheme's
// device format, on the GPU, at load time. Block formats follow ggml's
// reference quantizers exactly, so a tensor quantized here equals the same
// tensor quantized by llama.cpp:
//   Q8_0: d = max|x| / 127, q = round(x / d) (half away from zero)
//   Q4_0: m = the x of largest |x|, d = m / -8, q = min(15, trunc(x / d + 8.5))
// ADD is added to every source value first (Gemma norm weights: w -> 1 + w).
// Block formats are written in the device's planar layout (weights.glsl).
// SOURCE_TYPE 3 takes ggml blocks of the target format itself (a GGUF file's bytes)
// and only moves them into that layout.
// Dispatch: 2-D grid of 64-wide groups; one invocation per output element
// (float formats) or per 32-element block (block formats).
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint SOURCE_TYPE = 0;  // 0: F32, 1: F16, 2: BF16, 3: ggml blocks
layout(constant_id = 1) const float ADD = 0.0;

layout(binding = 0) readonly buffer SrcBuf { uint src[]; };  // raw source bytes as words
// count: elements (or blocks) in this dispatch; first: where they go in the
// destination part, in elements (or blocks); part_blocks: blocks in the whole
// destination part (where its scales begin). The source starts at element 0.
layout(push_constant) uniform Push { uint count; uint first; uint part_blocks; } pc;

// Source uint16 i (ggml blocks, SOURCE_TYPE 3).
uint source_half(uint i) { return (src[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu; }

float source(uint i) {
  if (SOURCE_TYPE == 0) return uintBitsToFloat(src[i]) + ADD;
  const uint half_bits = (src[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu;
  if (SOURCE_TYPE == 1) return unpackHalf2x16(half_bits).x + ADD;
  return uintBitsToFloat(half_bits << 16) + ADD;
}

#if defined(FMT_F32)
layout(binding = 1) writeonly buffer DstBuf { float dst[]; };
void convert(uint i) { dst[pc.first + i] = source(i); }
#elif defined(FMT_F16)
layout(binding = 1) writeonly buffer DstBuf { float16_t dst[]; };
void convert(uint i) { dst[pc.first + i] = float16_t(source(i)); }
#elif defined(FMT_BF16)
layout(binding = 1) writeonly buffer DstBuf { uint16_t dst[]; };
void convert(uint i) {
  const uint bits = floatBitsToUint(source(i));
  dst[pc.first + i] = uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);  // round to nearest even
}
#elif defined(FMT_Q8_0) || defined(FMT_Q4_0)
// a / b rounded to nearest, as C's float division in ggml's quantizers. GLSL
// division may be off by ulps (Vulkan allows 2.5; NVIDIA's is, and moved a
// Q4_0 nibble against ggml's in a kernel test), and a division by a constant
// may become a product with its rounded reciprocal. Of the quotient and its two
// neighbours, the rounded one has the smallest remainder |a - b c|. Vulkan
// rounds +, - and * correctly but lets fma round twice, so the remainder comes
// from Dekker's exact product (b c = p + e, by Veltkamp splits) and is exact up
// to a rounding of its own size; `precise` keeps every step as written.
float remainder_size(float a, float b, float c) {
  precise const float p = b * c;
  precise const float tb = 4097.0 * b, bh = tb - (tb - b), bl = b - bh;
  precise const float tc = 4097.0 * c, ch = tc - (tc - c), cl = c - ch;
  precise const float e = ((bh * ch - p) + bh * cl + bl * ch) + bl * cl;
  precise const float r = (a - p) - e;  // a - p is exact: p is within a factor 2 of a
  return abs(r);
}
float divide_rounded(float a, float b) {
  const float q = a / b;
  float best = q, best_r = remainder_size(a, b, q);
  for (int step = -3; step <= 3; ++step) {  // Vulkan's division: within 2.5 ulps of a / b
    const float c = uintBitsToFloat(uint(int(floatBitsToUint(q)) + step));
    const float rc = remainder_size(a, b, c);
    if (rc < best_r) { best = c; best_r = rc; }
  }
  return best;
}
#endif

#if defined(FMT_Q8_0)
layout(binding = 1) writeonly buffer DstBuf { uint16_t dst[]; };
// Planar: quants of block b at uint16 16b .., its scale at 16 * part_blocks + b.
void convert(uint b) {
  const uint quants = (pc.first + b) * 16, scale = pc.part_blocks * 16 + pc.first + b;
  if (SOURCE_TYPE == 3) {  // ggml block: 17 uint16, scale first
    dst[scale] = uint16_t(source_half(b * 17));
    for (uint j = 0; j < 16; ++j) dst[quants + j] = uint16_t(source_half(b * 17 + 1 + j));
    return;
  }
  float x[32];
  float amax = 0.0;
  for (uint j = 0; j < 32; ++j) { x[j] = source(b * 32 + j); amax = max(amax, abs(x[j])); }
  const float d = divide_rounded(amax, 127.0);
  const float id = d != 0.0 ? divide_rounded(1.0, d) : 0.0;
  dst[scale] = uint16_t(packHalf2x16(vec2(d, 0.0)) & 0xffffu);
  for (uint j = 0; j < 32; j += 2) {
    // `precise`: ggml rounds x * id, then adds 0.5; a fused multiply-add (which
    // GLSL otherwise allows, and NVIDIA's compiler emits) rounds once and can
    // land on the other side of a tie.
    precise const float v0 = x[j] * id, v1 = x[j + 1] * id;
    precise const float r0 = abs(v0) + 0.5, r1 = abs(v1) + 0.5;
    const int q0 = int(sign(v0) * floor(r0)), q1 = int(sign(v1) * floor(r1));
    dst[quants + j / 2] = uint16_t((uint(q0) & 0xffu) | ((uint(q1) & 0xffu) << 8));
  }
}
#elif defined(FMT_Q4_0)
layout(binding = 1) writeonly buffer DstBuf { uint16_t dst[]; };
// Planar: quants of block b at uint16 8b .., its scale at 8 * part_blocks + b.
void convert(uint b) {
  const uint quants = (pc.first + b) * 8, scale = pc.part_blocks * 8 + pc.first + b;
  if (SOURCE_TYPE == 3) {  // ggml block: 9 uint16, scale first
    dst[scale] = uint16_t(source_half(b * 9));
    for (uint j = 0; j < 8; ++j) dst[quants + j] = uint16_t(source_half(b * 9 + 1 + j));
    return;
  }
  float x[32];
  float amax = 0.0, m = 0.0;
  for (uint j = 0; j < 32; ++j) {
    x[j] = source(b * 32 + j);
    if (amax < abs(x[j])) { amax = abs(x[j]); m = x[j]; }
  }
  const float d = m / -8.0;  // exact: a power of two
  const float id = d != 0.0 ? divide_rounded(1.0, d) : 0.0;
  dst[scale] = uint16_t(packHalf2x16(vec2(d, 0.0)) & 0xffffu);
  uint bytes[16];
  for (uint j = 0; j < 16; ++j) {
    precise const float lo_scaled = x[j] * id, hi_scaled = x[j + 16] * id;  // no fused add: as ggml
    precise const float lo_shifted = lo_scaled + 8.5, hi_shifted = hi_scaled + 8.5;
    const uint lo = uint(min(15, int(lo_shifted)));
    const uint hi = uint(min(15, int(hi_shifted)));
    bytes[j] = lo | (hi << 4);
  }
  for (uint j = 0; j < 16; j += 2) dst[quants + j / 2] = uint16_t(bytes[j] | (bytes[j + 1] << 8));
}
#elif !defined(FMT_F32) && !defined(FMT_F16) && !defined(FMT_BF16)
#error "convert.comp: define the target format"
#endif

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64;
  if (i < pc.count) convert(i);
}
