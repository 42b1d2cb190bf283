#version 450
// convert — turn F32/F16/BF16 source weights (safetensors) into the scheme's
// device format, on the GPU, at load time. Block formats follow ggml's
// reference quantizers exactly, so a tensor quantized here equals the same
// tensor quantized by llama.cpp:
//   Q8_0: d = max|x| / 127, q = round(x / d) (half away from zero)
//   Q4_0: m = the x of largest |x|, d = m / -8, q = min(15, trunc(x / d + 8.5))
//   Q5_0: Q4_0's over 5 bits: d = m / -16, q = min(31, trunc(x / d + 16.5))
//   Q4_1, Q5_1: d = (max - min) / 15 (31), m = min, q = trunc((x - min) / d + 0.5)
//         (at most 15 for Q4_1)
// ADD is added to every source value first (Gemma norm weights: w -> 1 + w).
// Block formats are written in the device's planar layout (weights.glsl).
// SOURCE_TYPE 3 takes ggml blocks of the target format itself (a GGUF file's bytes)
// and only moves them into that layout; it is the only source of the
// K-quants (Q2_K to Q6_K) and of IQ4_NL and IQ4_XS.
// Dispatch: 2-D grid of 64-wide groups; one invocation per output element
// (float formats) or per 32-element block (block formats).
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint SOURCE_TYPE = 0;      // 0: F32, 1: F16, 2: BF16, 3: ggml blocks
layout(constant_id = 1) const float ADD = 0.0;

layout(binding = 0) readonly buffer SrcBuf { uint src[]; };  // raw source bytes as words
// count: elements (or blocks) in this dispatch; first: where they go in the
// destination part, in elements (or blocks); part_blocks: blocks in the whole
// destination part (where its scales begin). The source starts at element 0.
layout(push_constant) uniform Push { uint count; uint first; uint part_blocks; } pc;

// Source uint16 i and byte i (ggml blocks, SOURCE_TYPE 3).
uint source_half(uint i) { return (src[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu; }
uint source_byte(uint i) { return (src[i >> 2] >> (8u * (i & 3u))) & 0xffu; }

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
#elif defined(FMT_Q8_0) || defined(FMT_Q4_0) || defined(FMT_Q4_1) || defined(FMT_Q5_0) || defined(FMT_Q5_1)
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
#elif defined(FMT_Q4_0) || defined(FMT_IQ4_NL)
layout(binding = 1) writeonly buffer DstBuf { uint16_t dst[]; };
// Planar: quants of block b at uint16 8b .., its scale at 8 * part_blocks + b.
// IQ4_NL's block is Q4_0's in bytes (its nibbles index a table): moved only.
void convert(uint b) {
  const uint quants = (pc.first + b) * 8, scale = pc.part_blocks * 8 + pc.first + b;
  if (SOURCE_TYPE == 3) {  // ggml block: 9 uint16, scale first
    dst[scale] = uint16_t(source_half(b * 9));
    for (uint j = 0; j < 8; ++j) dst[quants + j] = uint16_t(source_half(b * 9 + 1 + j));
    return;
  }
#if defined(FMT_Q4_0)
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
#endif
}
#elif defined(FMT_IQ4_XS)
// ggml superblocks only (SOURCE_TYPE 3), one invocation per superblock: ggml's
// { d, scales_h, scales_l[4], qs[128] } (68 uint16) into the planar layout of
// weights.glsl. qs is already the device's order (16 bytes per sub-block,
// element l's nibble in byte l % 16), so every field moves whole.
layout(binding = 1) writeonly buffer DstBuf { uint16_t dst[]; };
void convert(uint b) {
  if (SOURCE_TYPE != 3) return;
  const uint blk = b * 68u, sb = pc.first + b, SB = pc.part_blocks;
  for (uint i = 0; i < 64u; ++i) dst[64u * sb + i] = uint16_t(source_half(blk + 4u + i));
  dst[64u * SB + 2u * sb] = uint16_t(source_half(blk + 2u));       // scales_l[0..1]
  dst[64u * SB + 2u * sb + 1u] = uint16_t(source_half(blk + 3u));  // scales_l[2..3]
  dst[66u * SB + sb] = uint16_t(source_half(blk + 1u));            // scales_h
  dst[67u * SB + sb] = uint16_t(source_half(blk));                 // d
}
#elif defined(FMT_Q2_K) || defined(FMT_Q3_K)
// ggml superblocks only (SOURCE_TYPE 3), one invocation per superblock, into
// the planar layout of weights.glsl: each sub-block's 2-bit words (element
// 16h + 4k + c of sub-block s at bits 8c + 2k of word h) and Q3_K's high bits
// (its bit 8c + k + 4h), then the scale bytes as ggml packs them, then d (and
// Q2_K's dmin). ggml's element e = 128 n + 32 j + 16 h + l (sub-block s = 4n + j)
// has its 2 bits at bits 2j of qs[32 n + 16 h + l], Q3_K's high bit at bit s
// of hmask[16 h + l].
layout(binding = 1) writeonly buffer DstBuf { uint16_t dst[]; };
void put_word(uint half_index, uint w) {
  dst[half_index] = uint16_t(w & 0xffffu);
  dst[half_index + 1u] = uint16_t(w >> 16);
}
#if defined(FMT_Q2_K)
const uint kBlockBytes = 84u, kQs = 16u;  // ggml's { scales[16], qs[64], d, dmin }
#else
const uint kBlockBytes = 110u, kQs = 32u;  // ggml's { hmask[32], qs[64], scales[12], d }
#endif
void convert(uint b) {
  if (SOURCE_TYPE != 3) return;
  const uint blk = b * kBlockBytes, sb = pc.first + b, SB = pc.part_blocks, P = 8u * SB;
  for (uint s = 0; s < 8u; ++s) {
    const uint n = s >> 2u, j = s & 3u, sub = 8u * sb + s;
    uint low[2] = {0u, 0u}, high = 0u;
    for (uint i = 0; i < 32u; ++i) {
      const uint h = i >> 4u, l = i & 15u, c = l & 3u, k = l >> 2u;
      low[h] |= ((source_byte(blk + kQs + 32u * n + 16u * h + l) >> (2u * j)) & 3u) << (8u * c + 2u * k);
#if defined(FMT_Q3_K)
      high |= ((source_byte(blk + 16u * h + l) >> s) & 1u) << (8u * c + k + 4u * h);
#endif
    }
    put_word(4u * sub, low[0]);
    put_word(4u * sub + 2u, low[1]);
#if defined(FMT_Q3_K)
    put_word(4u * P + 2u * sub, high);
#endif
  }
#if defined(FMT_Q2_K)
  for (uint i = 0; i < 8u; ++i) dst[4u * P + 8u * sb + i] = uint16_t(source_half(blk / 2u + i));  // scales
  dst[40u * SB + 2u * sb] = uint16_t(source_half(blk / 2u + 40u));       // d
  dst[40u * SB + 2u * sb + 1u] = uint16_t(source_half(blk / 2u + 41u));  // dmin
#else
  for (uint i = 0; i < 6u; ++i) dst[48u * SB + 6u * sb + i] = uint16_t(source_half(blk / 2u + 48u + i));  // scales
  dst[54u * SB + sb] = uint16_t(source_half(blk / 2u + 54u));  // d
#endif
}
#elif defined(FMT_Q4_K) || defined(FMT_Q5_K) || defined(FMT_Q6_K)
// K-quants: ggml superblocks only (SOURCE_TYPE 3), moved into the planar device layout
// of weights.glsl, one invocation per superblock; the host refuses to quantize
// floats to a K-quant (ggml's search for scales is not done here). Units are
// superblocks: sub-blocks 8 (first + b) .., part_blocks superblocks in the part.
layout(binding = 1) writeonly buffer DstBuf { uint16_t dst[]; };
void put_word(uint half_index, uint w) {
  dst[half_index] = uint16_t(w & 0xffffu);
  dst[half_index + 1u] = uint16_t(w >> 16);
}
#if defined(FMT_Q4_K) || defined(FMT_Q5_K)
#if defined(FMT_Q4_K)
const uint kBlockBytes = 144u, kQs = 16u, kQuantBytes = 128u;  // ggml's superblock; qs; device bytes before the scales
#else
const uint kBlockBytes = 176u, kQs = 48u, kQuantBytes = 160u;  // qh at byte 16 of ggml's superblock
#endif
void convert(uint b) {
  if (SOURCE_TYPE != 3) return;
  const uint blk = b * kBlockBytes, sb = pc.first + b, SB = pc.part_blocks, P = SB * 8u;  // P: the part's sub-blocks
  // (d, dmin), then the 12 scale bytes, as ggml holds them.
  const uint dm = ((kQuantBytes + 12u) * SB + 4u * sb) / 2u;
  dst[dm] = uint16_t(source_byte(blk) | (source_byte(blk + 1u) << 8));
  dst[dm + 1u] = uint16_t(source_byte(blk + 2u) | (source_byte(blk + 3u) << 8));
  for (uint i = 0; i < 12u; i += 2u)
    dst[(kQuantBytes * SB + 12u * sb + i) / 2u] = uint16_t(source_byte(blk + 4u + i) | (source_byte(blk + 5u + i) << 8));
  // Sub-block j: nibble j % 2 of qs[32 (j / 2) + l] (Q5_K: fifth bit j of
  // qh[l]); on the device byte i holds elements i and i + 16.
  for (uint j = 0; j < 8u; ++j) {
    const uint qs = blk + kQs + 32u * (j / 2u), shift = 4u * (j % 2u), s = 8u * sb + j;
    uint high = 0u;
    for (uint w = 0; w < 4u; ++w) {
      uint word = 0;
      for (uint c = 0; c < 4u; ++c) {
        const uint i = 4u * w + c;
        const uint lo = (source_byte(qs + i) >> shift) & 15u, hi = (source_byte(qs + 16u + i) >> shift) & 15u;
        word |= (lo | (hi << 4)) << (8u * c);
#if defined(FMT_Q5_K)
        high |= ((source_byte(blk + 16u + i) >> j) & 1u) << (8u * c + w);
        high |= ((source_byte(blk + 32u + i) >> j) & 1u) << (8u * c + w + 4u);
#endif
      }
      put_word((16u * s + 4u * w) / 2u, word);
    }
#if defined(FMT_Q5_K)
    put_word((16u * P + 4u * s) / 2u, high);
#endif
  }
}
#else
// Element e of ggml's superblock at byte blk: its 6-bit quant.
uint q6_at(uint blk, uint e) {
  const uint h = e / 128u, g = (e / 32u) % 4u, l = e % 32u;
  const uint low = (source_byte(blk + 64u * h + l + 32u * (g & 1u)) >> (g < 2u ? 0u : 4u)) & 15u;
  const uint high = (source_byte(blk + 128u + 32u * h + l) >> (2u * g)) & 3u;
  return low | (high << 4);
}
void convert(uint b) {
  if (SOURCE_TYPE != 3) return;
  const uint blk = b * 210u, sb = pc.first + b, P = pc.part_blocks * 8u;
  for (uint i = 0; i < 16u; i += 2u)  // int8 scales, as ggml holds them
    dst[(24u * P + 16u * sb + i) / 2u] = uint16_t(source_byte(blk + 192u + i) | (source_byte(blk + 193u + i) << 8));
  dst[104u * pc.part_blocks + sb] = uint16_t(source_byte(blk + 208u) | (source_byte(blk + 209u) << 8));
  for (uint j = 0; j < 8u; ++j) {
    const uint s = 8u * sb + j;
    uint high[2] = {0u, 0u};
    for (uint k = 0; k < 4u; ++k) {
      uint word = 0;
      for (uint c = 0; c < 4u; ++c) {
        const uint q0 = q6_at(blk, 32u * j + 4u * k + c), q1 = q6_at(blk, 32u * j + 16u + 4u * k + c);
        word |= ((q0 & 15u) | ((q1 & 15u) << 4)) << (8u * c);
        high[k / 2u] |= ((q0 >> 4) | ((q1 >> 4) << 2)) << (8u * c + 4u * (k & 1u));
      }
      put_word((16u * s + 4u * k) / 2u, word);
    }
    put_word((16u * P + 8u * s) / 2u, high[0]);
    put_word((16u * P + 8u * s + 4u) / 2u, high[1]);
  }
}
#endif
#elif defined(FMT_Q4_1) || defined(FMT_Q5_0) || defined(FMT_Q5_1)
// One invocation per block, into the planar layout of weights.glsl: quants
// 16 B per block (ggml's qs as they are), the fifth bits 4 B per block (Q5_0,
// Q5_1: ggml's qh bit e, element e's, moves to bit 8c + k + 4h for
// e = 4k + c + 16h), then the f16 halves: d (Q5_0) or (d, m). From ggml
// blocks (SOURCE_TYPE 3), or quantized from floats as ggml's reference
// quantizers do (the file comment).
layout(binding = 1) writeonly buffer DstBuf { uint16_t dst[]; };
// ggml's block: its bytes, f16 halves, offsets of qh (0: none) and qs; the
// device's bytes per block before the halves.
#if defined(FMT_Q4_1)
const uint kBlockBytes = 20u, kHalves = 2u, kQh = 0u, kQs = 4u, kQuantBytes = 16u;
#elif defined(FMT_Q5_0)
const uint kBlockBytes = 22u, kHalves = 1u, kQh = 2u, kQs = 6u, kQuantBytes = 20u;
#else
const uint kBlockBytes = 24u, kHalves = 2u, kQh = 4u, kQs = 8u, kQuantBytes = 20u;
#endif
uint source_pair(uint at) { return source_byte(at) | (source_byte(at + 1u) << 8); }
// The device's fifth-bit word of quants q[32] (their bit 4).
uint fifth_bits(uint q[32]) {
  uint high = 0u;
  for (uint e = 0; e < 32u; ++e) high |= ((q[e] >> 4) & 1u) << (8u * (e & 3u) + ((e & 15u) >> 2u) + 4u * (e >> 4u));
  return high;
}
void put_block(uint s, uint P, uint q[32], uint halves) {
  for (uint j = 0; j < 16u; j += 2u)
    dst[(16u * s + j) / 2u] = uint16_t((q[j] & 15u) | ((q[j + 16u] & 15u) << 4) |
                                       (((q[j + 1u] & 15u) | ((q[j + 17u] & 15u) << 4)) << 8));
#if !defined(FMT_Q4_1)
  const uint high = fifth_bits(q);
  dst[(16u * P + 4u * s) / 2u] = uint16_t(high & 0xffffu);
  dst[(16u * P + 4u * s) / 2u + 1u] = uint16_t(high >> 16);
#endif
  dst[(kQuantBytes * P) / 2u + kHalves * s] = uint16_t(halves & 0xffffu);
  if (kHalves == 2u) dst[(kQuantBytes * P) / 2u + kHalves * s + 1u] = uint16_t(halves >> 16);
}
void quantize(uint b) {
  const uint s = pc.first + b, P = pc.part_blocks;
  float x[32];
  uint q[32];
#if defined(FMT_Q5_0)
  float amax = 0.0, m = 0.0;
  for (uint j = 0; j < 32; ++j) {
    x[j] = source(b * 32 + j);
    if (amax < abs(x[j])) { amax = abs(x[j]); m = x[j]; }
  }
  const float d = m / -16.0;  // exact: a power of two
  const float id = d != 0.0 ? divide_rounded(1.0, d) : 0.0;
  for (uint j = 0; j < 32; ++j) {
    precise const float scaled = x[j] * id;  // no fused add: as ggml
    precise const float shifted = scaled + 16.5;
    q[j] = uint(min(31, int(shifted)));
  }
  put_block(s, P, q, packHalf2x16(vec2(d, 0.0)) & 0xffffu);
#else
  float lo = 3.402823466e38, hi = -3.402823466e38;  // FLT_MAX, as ggml starts
  for (uint j = 0; j < 32; ++j) {
    x[j] = source(b * 32 + j);
    lo = min(lo, x[j]);
    hi = max(hi, x[j]);
  }
#if defined(FMT_Q4_1)
  const float d = divide_rounded(hi - lo, 15.0);
#else
  const float d = divide_rounded(hi - lo, 31.0);
#endif
  const float id = d != 0.0 ? divide_rounded(1.0, d) : 0.0;
  for (uint j = 0; j < 32; ++j) {
    precise const float from_min = x[j] - lo;
    precise const float scaled = from_min * id;
    precise const float shifted = scaled + 0.5;
#if defined(FMT_Q4_1)
    q[j] = uint(min(15, int(shifted)));
#else
    q[j] = uint(int(shifted));
#endif
  }
  put_block(s, P, q, packHalf2x16(vec2(d, lo)));
#endif
}
void convert(uint b) {
  if (SOURCE_TYPE != 3) {
    quantize(b);
    return;
  }
  // The ggml block's quants (nibbles, and bit j of qh as element j's fifth bit)
  // and halves, written as a quantized block is.
  const uint blk = b * kBlockBytes;
  const uint qh = kQh == 0u ? 0u : source_pair(blk + kQh) | (source_pair(blk + kQh + 2u) << 16);
  uint q[32];
  for (uint j = 0; j < 16u; ++j) {
    const uint byte = source_byte(blk + kQs + j);
    q[j] = (byte & 15u) | (((qh >> j) & 1u) << 4);
    q[j + 16u] = (byte >> 4) | (((qh >> (j + 16u)) & 1u) << 4);
  }
  put_block(pc.first + b, pc.part_blocks, q, source_pair(blk) | (kHalves == 2u ? source_pair(blk + 2u) << 16 : 0u));
}
#elif !defined(FMT_F32) && !defined(FMT_F16) && !defined(FMT_BF16)
#error "convert.comp: define the target format"
#endif

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64;
  if (i < pc.count) convert(i);
}
