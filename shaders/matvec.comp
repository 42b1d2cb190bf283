#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#if defined(INT_DOT)
#extension GL_EXT_spirv_intrinsics : require
#endif
// matvec — y[t, r] = dot(W[r, :], x[t, :]) for a few token rows (decode, batched
// decode, and the LM head). Decode reads every weight once per step, so this
// kernel is the decode roofline: it must keep enough bytes in flight, in wide
// loads, and spend few instructions per weight.
//
// Lanes are grouped into row groups of LANES_PER_GROUP lanes: a fraction of a subgroup
// (LANES_PER_GROUP divides the subgroup size) or several whole subgroups (LANES_PER_GROUP a
// multiple of it, at most the 128-lane workgroup: split-K for long rows, more
// loads in flight per row). Each row group owns ROWS_PER_GROUP output rows; its lane l
// takes blocks l, l + LANES_PER_GROUP, ... of all ROWS_PER_GROUP rows, UNROLL blocks per pass: one
// 16-byte load of quants per block and row (the device layout is planar, see
// weights.glsl), and each block's 32 inputs loaded once for all ROWS_PER_GROUP rows.
// Reduction: subgroupAdd, then shared memory across a row group's subgroups
// (none for row groups of one lane, a CPU device's shape).
// PAIR = 1 (block formats, decode FFN): binding 4 holds the up projection of
// the same shape; each row group computes its rows of gate and of up from the
// same inputs and writes gelu_tanh(gate) * up — three dispatches in one.
// Token rows: a workgroup takes TOKENS of them (z-th run of TOKENS), TILE at a
// time: each weight block is loaded once per TILE tokens (its fields made per token), its
// inputs read per token (L1/L2). A batched decode step (N streams) runs with
// TOKENS = N, so the weights leave DRAM once per step. (Measured on the H100:
// staging the inputs in shared memory was slower — every workgroup then reads
// the whole tile of inputs from L2 for its few rows.) A
// row's sums are the same operations in the same order whatever TOKENS, TILE
// and ROWS_PER_GROUP are (only LANES_PER_GROUP and UNROLL change them), so stream i's outputs in a
// batch are bit for bit those of a single-token pass.
// INT_DOT (the matvec_dot_* modules, one per block format): the weights'
// quants as bytes against the inputs rounded to bytes per block of 32, in
// integer dot products (below).
// Dispatch: (min(G, 65535), ceil(G / 65535), ceil(token rows / TOKENS) or SPLITS), where
// G = ceil(rows / (ROWS_PER_GROUP * 128 / LANES_PER_GROUP)).
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint IN_FEATURES = 32;  // row length (input features)
layout(constant_id = 1) const uint OUT_FEATURES = 1;   // output features of the whole tensor
layout(constant_id = 2) const uint ROW_SET = 0;  // 0: token rows; 1: logit rows (LM head)
layout(constant_id = 3) const uint ROWS_PER_GROUP = 1;     // output rows per row group
layout(constant_id = 4) const uint LANES_PER_GROUP = 32;   // lanes per row group
layout(constant_id = 5) const uint UNROLL = 1;   // blocks per lane per pass (1 or 2)
layout(constant_id = 6) const uint PAIR = 0;     // 1: y = gelu(W x) * (W2 x)
layout(constant_id = 7) const uint TOKENS = 1;   // token rows per workgroup
layout(constant_id = 8) const uint TILE = 1;     // token rows per pass over the weights (<= TOKENS)
// Split K (a decode step's one token, or a verify pass's tokens, which split as
// it does): workgroup z takes blocks [z, z + 1) * blocks / SPLITS of every row
// and token and writes its partial sums to slice z of y, SLICE elements after
// slice z - 1, which the consumer adds (rmsnorm's SLICES, as for matmul_coop).
layout(constant_id = 9) const uint SPLITS = 1;
layout(constant_id = 10) const uint SLICE = 0;
// SIGNAL: once its outputs are written, each workgroup counts itself in
// counters[pc.counter]; the rmsnorm dispatched right after, without a barrier
// (rmsnorm.comp's WAIT), starts its row when the count is complete.
layout(constant_id = 11) const uint SIGNAL = 0;
layout(push_constant) uniform Push { uint row_begin; uint rows; uint counter; } pc;

#define WEIGHT_BINDING 0
#define WEIGHT2_BINDING 4
#define WEIGHT_PART_BLOCKS (pc.rows * (IN_FEATURES / 32u))
#include "include/weights.glsl"
#include "include/gelu.glsl"
#define STEP_BINDING 3
#include "include/step.glsl"

layout(binding = 1) readonly buffer XBuf { float x[]; };   // [n, IN_FEATURES]
layout(binding = 1) readonly buffer XBuf4 { vec4 x4[]; };  // the same, 16 bytes at a time
layout(binding = 2) writeonly buffer YBuf { float y[]; };  // [n, OUT_FEATURES]
// SIGNAL: the same, coherent, since a WAIT rmsnorm reads the outputs while
// this dispatch may still run (only there: coherent stores everywhere cost
// the float kernels 3 % of the 4B Q8_0's decode on the H100).
layout(binding = 2) coherent writeonly buffer YBufC { float y_c[]; };
void store_y(uint i, float v) {
  if (SIGNAL != 0)
    y_c[i] = v;
  else
    y[i] = v;
}
layout(binding = 5) coherent buffer Counters { uint counters[]; };  // SIGNAL

#if defined(INT_DOT)
// Integer dot products (the matvec_dot_* modules; the device's
// shaderIntegerDotProduct, core in Vulkan 1.3): each token's 32 inputs of a
// block become 32 signed bytes q = round(x * 127 / amax), as llama.cpp's q8_1
// activations, so a quant word meets its inputs in two 4-way byte dot
// products (dp4a on NVIDIA) instead of eight float conversions and FMAs.
// OpSDotKHR on two words of four signed bytes (PackedVectorFormat4x8Bit = 0):
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int dot_bytes(uint a, uint b, spirv_literal int packed_4x8);
// Round to nearest even without a float->int conversion (slow on NVIDIA):
// v + 1.5 * 2^23 holds round(v) in its low mantissa bits for |v| < 2^22, so
// the low byte of its bits is round(v) as a two's complement byte.
const float kRoundMagic = 12582912.0;  // 1.5 * 2^23
uint pack_bytes(vec4 v) {
  const uvec4 b = floatBitsToUint(v + kRoundMagic) & 0xFFu;
  return b.x | (b.y << 8) | (b.z << 16) | (b.w << 24);
}
// An int of magnitude below 2^22 as a float, the same way round.
float int_to_float(int v) { return uintBitsToFloat(uint(0x4B400000 + v)) - kRoundMagic; }
// Block `xb` (in vec4s) of a token's inputs as bytes: lo holds elements 0..15
// (word k: 4k .. 4k+3), hi 16..31; scale = (d, 8 * d * sum(q)) with d = amax / 127,
// so that d * dot(q, w - 8) = scale.x * dot(q, w) - scale.y for Q4_0's nibbles w.
// A min (Q4_K, Q5_K, Q4_1, Q5_1) meets the inputs' sum as the kernel rounded them,
// d * sum(q) = scale.y / 8 (exact), as llama.cpp's q8_1 sum does; Q5_0's zero
// point of 16, 2 * scale.y.
void quantize_inputs(uint xb, out uvec4 lo, out uvec4 hi, out vec2 scale) {
  vec4 v[8];
  for (uint k = 0; k < 8; ++k) v[k] = x4[xb + k];
  vec4 m = max(max(max(abs(v[0]), abs(v[1])), max(abs(v[2]), abs(v[3]))),
               max(max(abs(v[4]), abs(v[5])), max(abs(v[6]), abs(v[7]))));
  const float amax = max(max(m.x, m.y), max(m.z, m.w));
  const float inv = amax > 0.0 ? 127.0 / amax : 0.0;
  uint w[8];
  for (uint k = 0; k < 8; ++k) w[k] = pack_bytes(v[k] * inv);
  lo = uvec4(w[0], w[1], w[2], w[3]);
  hi = uvec4(w[4], w[5], w[6], w[7]);
  int sum = 0;
  for (uint k = 0; k < 8; ++k) sum += dot_bytes(w[k], 0x01010101u, 0);
  const float d = amax * (1.0 / 127.0);
  scale = vec2(d, 8.0 * d * int_to_float(sum));
}
// A decode step (one token a workgroup) quantizes its token's inputs once, into
// shared memory, before any row is read: every row group then takes a block's
// bytes from there (32 + 8 bytes) instead of its 128 bytes of floats from L1 or
// L2, which bound the long-K products (the 27B's down projection read its
// input 4x over, more bytes than its weights). The host keeps 1.25 * K bytes
// within the device's shared memory. Batched workgroups quantize per block.
const uint kStagedBlocks = TOKENS == 1 ? (IN_FEATURES / 32 + SPLITS - 1) / SPLITS : 1;
shared uvec4 staged_lo[kStagedBlocks], staged_hi[kStagedBlocks];
shared vec2 staged_scale[kStagedBlocks];
// Token t's inputs of block b as bytes: a decode step's from shared memory,
// a batched workgroup's quantized here.
void inputs_as_bytes(uint t, uint b, uint kb_begin, out uvec4 lo, out uvec4 hi, out vec2 scale) {
  if (TOKENS == 1)
    lo = staged_lo[b - kb_begin], hi = staged_hi[b - kb_begin], scale = staged_scale[b - kb_begin];
  else
    quantize_inputs((t * IN_FEATURES + b * 32) / 4, lo, hi, scale);
}
// Q4_0's, Q4_K's and Q4_1's 32 nibbles (unsigned, 0..15) against the inputs' bytes.
int block_dot(uvec4 q, uvec4 lo, uvec4 hi) {
  int s = 0;
  for (uint k = 0; k < 4; ++k)
    s += dot_bytes(q[k] & 0x0F0F0F0Fu, lo[k], 0) + dot_bytes((q[k] >> 4) & 0x0F0F0F0Fu, hi[k], 0);
  return s;
}
#endif

#include "include/matvec_words.glsl"

// Accumulators: ROWS_PER_GROUP rows, and with PAIR the same rows of the second tensor.
const uint NR = WEIGHT_BLOCK == 32 ? ROWS_PER_GROUP * (1 + PAIR) : ROWS_PER_GROUP;
shared float partial[512];  // [subgroup][accumulator]: NR * 128 / subgroup size <= 512 (host-checked)

// The value row i of this row group writes, from its reduced accumulators.
float row_output(float a, float b) { return NR > ROWS_PER_GROUP ? gelu_tanh(a) * b : a; }

void main() {
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint lane = gl_SubgroupInvocationID, S = gl_SubgroupSize;
  // Row group of this lane within the dispatch, and the lane's place in it.
  const uint groups_per_wg = 128 / LANES_PER_GROUP;
  const uint wg_lane = gl_SubgroupID * S + lane;
  const uint rg = group * groups_per_wg + wg_lane / LANES_PER_GROUP, l = wg_lane % LANES_PER_GROUP;
  const uint r0 = rg * ROWS_PER_GROUP;
  // This workgroup's token rows (uniform: the whole workgroup has them).
  const uint split = SPLITS > 1 ? gl_WorkGroupID.z : 0;
  const uint n = active_rows(ROW_SET), t_begin = (SPLITS > 1 ? 0 : gl_WorkGroupID.z) * TOKENS;
  if (t_begin >= n) {  // no rows: counted at once
    if (SIGNAL != 0 && gl_LocalInvocationIndex == 0) atomicAdd(counters[pc.counter], 1u);
    return;
  }
  // One token (decode): an end the compiler sees, so the token loops fold away
  // (a loop bound read from the step buffer cost 1B decode 6 % on the H100).
  const uint t_end = TOKENS == 1 ? t_begin + 1 : min(t_begin + TOKENS, n);
  // Rows past the part compute on its last row and write nothing: every lane
  // stays active for the reductions.
  uint row[ROWS_PER_GROUP];
  for (uint i = 0; i < ROWS_PER_GROUP; ++i) row[i] = min(r0 + i, pc.rows - 1);
  // This workgroup's blocks of each row (all of them unless K is split).
  const uint kb_begin = split * (IN_FEATURES / 32) / SPLITS, kb_end = (split + 1) * (IN_FEATURES / 32) / SPLITS;
#if defined(INT_DOT)
  if (TOKENS == 1) {
    for (uint b = kb_begin + gl_LocalInvocationID.x; b < kb_end; b += 128) {
      uvec4 lo, hi;
      vec2 scale;
      quantize_inputs((t_begin * IN_FEATURES + b * 32) / 4, lo, hi, scale);
      staged_lo[b - kb_begin] = lo, staged_hi[b - kb_begin] = hi, staged_scale[b - kb_begin] = scale;
    }
    barrier();
  }
#endif
  for (uint t0 = t_begin; t0 < t_end; t0 += TILE) {
    const uint tn = TILE == 1 ? 1 : min(TILE, t_end - t0);  // tokens in this pass
    float acc[TILE][NR];
    for (uint j = 0; j < TILE; ++j)
      for (uint i = 0; i < NR; ++i) acc[j][i] = 0.0;
#if WEIGHT_BLOCK == 32
    const uint blocks = IN_FEATURES / 32;  // IN_FEATURES is a multiple of 32, so x rows are 16-byte aligned
    for (uint b0 = kb_begin + l; b0 < kb_end; b0 += UNROLL * LANES_PER_GROUP) {
#if defined(FMT_Q4_0) || defined(FMT_Q4_K) || defined(FMT_Q4_1)
      uvec4 q[UNROLL][NR];
#if defined(SCALE_MIN_BLOCKS)
      vec2 d[UNROLL][NR];  // (d * sc, dmin * m) of the sub-block; Q4_1: (d, -m)
#else
      float d[UNROLL][NR];
#endif
      for (uint u = 0; u < UNROLL; ++u)  // all weight loads first: bytes in flight
        for (uint i = 0; i < NR; ++i) {
          const uint blk = row[i % ROWS_PER_GROUP] * blocks + min(b0 + u * LANES_PER_GROUP, kb_end - 1);
          q[u][i] = i < ROWS_PER_GROUP ? block_quants(blk) : block_quants2(blk);
#if defined(SCALE_MIN_BLOCKS)
          d[u][i] = i < ROWS_PER_GROUP ? block_scale_min(blk) : block_scale_min2(blk);
#else
          d[u][i] = i < ROWS_PER_GROUP ? block_scale(blk) : block_scale2(blk);
#endif
        }
#if defined(INT_DOT)
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        for (uint j = 0; j < TILE; ++j) {
          if (j >= tn) break;
          uvec4 lo, hi;
          vec2 scale;
          inputs_as_bytes(t0 + j, b, kb_begin, lo, hi, scale);
          for (uint i = 0; i < NR; ++i)
#if defined(SCALE_MIN_BLOCKS)  // Q4_K: (d * sc) * dot(q, x) - (dmin * m) * sum(x); Q4_1: d.y = -m
            acc[j][i] += d[u][i].x * (int_to_float(block_dot(q[u][i], lo, hi)) * scale.x) -
                         d[u][i].y * (scale.y * 0.125);
#else
            acc[j][i] += d[u][i] * (int_to_float(block_dot(q[u][i], lo, hi)) * scale.x - scale.y);
#endif
        }
      }
#else
      // One quant word at a time, dequantised once for all rows' tokens, then
      // each token's inputs: few registers, so ROWS_PER_GROUP and TILE can grow.
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        float part[TILE][NR];
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i) part[j][i] = 0.0;
#if defined(SCALE_MIN_BLOCKS)
        float xsum[TILE];  // the sub-block's inputs summed, for its min
        for (uint j = 0; j < TILE; ++j) xsum[j] = 0.0;
#endif
        for (uint k = 0; k < 4; ++k)
          for (uint j = 0; j < TILE; ++j) {
            if (j >= tn) break;
            const uint xb = ((t0 + j) * IN_FEATURES + b * 32) / 4;
#if defined(SCALE_MIN_BLOCKS)
            const vec4 xl = x4[xb + k], xh = x4[xb + 4 + k];
            xsum[j] += (xl.x + xl.y + xl.z + xl.w) + (xh.x + xh.y + xh.z + xh.w);
            const vec4 lo = xl * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            const vec4 hi = xh * vec4(1.0 / 16.0, 1.0 / 4096.0, 1.0 / 16.0, 1.0 / 4096.0);
#else
            const vec4 lo = x4[xb + k] * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            const vec4 hi = x4[xb + 4 + k] * vec4(1.0 / 16.0, 1.0 / 4096.0, 1.0 / 16.0, 1.0 / 4096.0);
#endif
            for (uint i = 0; i < NR; ++i) part[j][i] += word_dot(q[u][i][k], lo, hi);
          }
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i)
#if defined(SCALE_MIN_BLOCKS)
            acc[j][i] += d[u][i].x * part[j][i] - d[u][i].y * xsum[j];
#else
            acc[j][i] += d[u][i] * part[j][i];
#endif
      }
#endif  // INT_DOT
#elif defined(FIFTH_BIT)
      uvec4 q[UNROLL][NR];
      uint h[UNROLL][NR];
#if defined(FMT_Q5_0)
      float d[UNROLL][NR];  // the block's d (its zero point is in the fields)
#else
      vec2 d[UNROLL][NR];  // (d * sc, dmin * m) of the sub-block; Q5_1: (d, -m)
#endif
      for (uint u = 0; u < UNROLL; ++u)
        for (uint i = 0; i < NR; ++i) {
          const uint blk = row[i % ROWS_PER_GROUP] * blocks + min(b0 + u * LANES_PER_GROUP, kb_end - 1);
          q[u][i] = i < ROWS_PER_GROUP ? block_quants(blk) : block_quants2(blk);
          h[u][i] = i < ROWS_PER_GROUP ? block_high(blk) : block_high2(blk);
#if defined(FMT_Q5_0)
          d[u][i] = i < ROWS_PER_GROUP ? block_scale(blk) : block_scale2(blk);
#else
          d[u][i] = i < ROWS_PER_GROUP ? block_scale_min(blk) : block_scale_min2(blk);
#endif
        }
#if defined(INT_DOT)
      // 5-bit bytes (0..31) against the inputs' bytes; Q5_0's zero point of 16,
      // and Q5_K's and Q5_1's min, meet the bytes' sum (d * sum(q) = scale.y / 8).
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        for (uint j = 0; j < TILE; ++j) {
          if (j >= tn) break;
          uvec4 lo, hi;
          vec2 scale;
          inputs_as_bytes(t0 + j, b, kb_begin, lo, hi, scale);
          for (uint i = 0; i < NR; ++i) {
            int s = 0;
            for (uint k = 0; k < 4; ++k) {
              uint c0, c1;
              q5_words(q[u][i][k], h[u][i] >> k, c0, c1);
              s += dot_bytes(c0, lo[k], 0) + dot_bytes(c1, hi[k], 0);
            }
#if defined(FMT_Q5_0)
            acc[j][i] += d[u][i] * (int_to_float(s) * scale.x - 2.0 * scale.y);
#else
            acc[j][i] += d[u][i].x * (int_to_float(s) * scale.x) - d[u][i].y * (scale.y * 0.125);
#endif
          }
        }
      }
#else
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        float part[TILE][NR], xsum[TILE];
        for (uint j = 0; j < TILE; ++j) {
          xsum[j] = 0.0;
          for (uint i = 0; i < NR; ++i) part[j][i] = 0.0;
        }
        for (uint k = 0; k < 4; ++k)
          for (uint j = 0; j < TILE; ++j) {
            if (j >= tn) break;
            const uint xb = ((t0 + j) * IN_FEATURES + b * 32) / 4;
            const vec4 xl = x4[xb + k], xh = x4[xb + 4 + k];
#if !defined(FMT_Q5_0)
            xsum[j] += (xl.x + xl.y + xl.z + xl.w) + (xh.x + xh.y + xh.z + xh.w);
#endif
            const vec4 x0 = xl * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            const vec4 x1 = xh * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            for (uint i = 0; i < NR; ++i) {
              uint c0, c1;
              q5_words(q[u][i][k], h[u][i] >> k, c0, c1);
              part[j][i] += word_dot_bytes(c0, x0) + word_dot_bytes(c1, x1);
            }
          }
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i)
#if defined(FMT_Q5_0)
            acc[j][i] += d[u][i] * part[j][i];
#else
            acc[j][i] += d[u][i].x * part[j][i] - d[u][i].y * xsum[j];
#endif
      }
#endif  // INT_DOT
#elif defined(FMT_Q6_K)
      uvec4 q[UNROLL][NR];
      uvec2 h[UNROLL][NR];
      vec2 d[UNROLL][NR];  // d * scale of elements 0..15 and 16..31
      for (uint u = 0; u < UNROLL; ++u)
        for (uint i = 0; i < NR; ++i) {
          const uint blk = row[i % ROWS_PER_GROUP] * blocks + min(b0 + u * LANES_PER_GROUP, kb_end - 1);
          q[u][i] = i < ROWS_PER_GROUP ? block_quants(blk) : block_quants2(blk);
          h[u][i] = i < ROWS_PER_GROUP ? block_high(blk) : block_high2(blk);
          d[u][i] = i < ROWS_PER_GROUP ? block_scales(blk) : block_scales2(blk);
        }
#if defined(INT_DOT)
      // Each half's 6-bit bytes (0..63, the same as signed bytes) against the
      // inputs' bytes, less 32 times the half's sum of them: d * (dot(q, x) -
      // 32 * sum(x)) per half, every sum an exact integer.
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        for (uint j = 0; j < TILE; ++j) {
          if (j >= tn) break;
          uvec4 lo, hi;
          vec2 scale;
          inputs_as_bytes(t0 + j, b, kb_begin, lo, hi, scale);
          int sum0 = 0, sum1 = 0;
          for (uint k = 0; k < 4; ++k)
            sum0 += dot_bytes(lo[k], 0x01010101u, 0), sum1 += dot_bytes(hi[k], 0x01010101u, 0);
          for (uint i = 0; i < NR; ++i) {
            int s0 = -32 * sum0, s1 = -32 * sum1;
            for (uint k = 0; k < 4; ++k) {
              uint c0, c1;
              q6_words(q[u][i][k], h[u][i][k >> 1] >> (4 * (k & 1)), c0, c1);
              s0 += dot_bytes(c0, lo[k], 0);
              s1 += dot_bytes(c1, hi[k], 0);
            }
            acc[j][i] += d[u][i].x * (int_to_float(s0) * scale.x) + d[u][i].y * (int_to_float(s1) * scale.x);
          }
        }
      }
#else
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        float part0[TILE][NR], part1[TILE][NR];  // elements 0..15, 16..31
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i) part0[j][i] = part1[j][i] = 0.0;
        for (uint k = 0; k < 4; ++k)
          for (uint j = 0; j < TILE; ++j) {
            if (j >= tn) break;
            const uint xb = ((t0 + j) * IN_FEATURES + b * 32) / 4;
            const vec4 x0 = x4[xb + k] * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            const vec4 x1 = x4[xb + 4 + k] * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            for (uint i = 0; i < NR; ++i) {
              uint c0, c1;
              q6_words(q[u][i][k], h[u][i][k >> 1] >> (4 * (k & 1)), c0, c1);
              part0[j][i] += word_dot_bytes(c0, x0);
              part1[j][i] += word_dot_bytes(c1, x1);
            }
          }
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i) acc[j][i] += d[u][i].x * part0[j][i] + d[u][i].y * part1[j][i];
      }
#endif  // INT_DOT
#elif defined(LOW_BIT_K)
      uvec2 q[UNROLL][NR];
      uint h[UNROLL][NR];
#if defined(FMT_Q2_K)
      vec4 d[UNROLL][NR];  // (d * sc, dmin * m) of the first half, then of the second
#else
      vec2 d[UNROLL][NR];  // d * (sc - 32) of each half
#endif
      for (uint u = 0; u < UNROLL; ++u)
        for (uint i = 0; i < NR; ++i) {
          const uint blk = row[i % ROWS_PER_GROUP] * blocks + min(b0 + u * LANES_PER_GROUP, kb_end - 1);
          q[u][i] = i < ROWS_PER_GROUP ? block_low(blk) : block_low2(blk);
#if defined(FMT_Q2_K)
          h[u][i] = 0u;
          d[u][i] = i < ROWS_PER_GROUP ? block_scale_mins(blk) : block_scale_mins2(blk);
#else
          h[u][i] = i < ROWS_PER_GROUP ? block_high(blk) : block_high2(blk);
          d[u][i] = i < ROWS_PER_GROUP ? block_scales(blk) : block_scales2(blk);
#endif
        }
#if defined(INT_DOT)
      // Each half's bytes against the inputs' bytes; Q3_K's zero point of 4
      // and Q2_K's min meet the half's sum of input bytes. Every sum exact.
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        for (uint j = 0; j < TILE; ++j) {
          if (j >= tn) break;
          uvec4 lo, hi;
          vec2 scale;
          inputs_as_bytes(t0 + j, b, kb_begin, lo, hi, scale);
          int sum0 = 0, sum1 = 0;
          for (uint k = 0; k < 4; ++k)
            sum0 += dot_bytes(lo[k], 0x01010101u, 0), sum1 += dot_bytes(hi[k], 0x01010101u, 0);
          for (uint i = 0; i < NR; ++i) {
            int s0 = 0, s1 = 0;
            for (uint k = 0; k < 4; ++k) {
              s0 += dot_bytes(low_k_bytes(q[u][i], h[u][i], k, 0u), lo[k], 0);
              s1 += dot_bytes(low_k_bytes(q[u][i], h[u][i], k, 1u), hi[k], 0);
            }
#if defined(FMT_Q2_K)
            acc[j][i] += (d[u][i].x * (int_to_float(s0) * scale.x) - d[u][i].y * (int_to_float(sum0) * scale.x)) +
                         (d[u][i].z * (int_to_float(s1) * scale.x) - d[u][i].w * (int_to_float(sum1) * scale.x));
#else
            acc[j][i] += d[u][i].x * (int_to_float(s0 - 4 * sum0) * scale.x) +
                         d[u][i].y * (int_to_float(s1 - 4 * sum1) * scale.x);
#endif
          }
        }
      }
#else
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        float part0[TILE][NR], part1[TILE][NR];  // elements 0..15, 16..31
        float xsum0[TILE], xsum1[TILE];         // Q2_K: each half's inputs summed, for its min
        for (uint j = 0; j < TILE; ++j) {
          xsum0[j] = xsum1[j] = 0.0;
          for (uint i = 0; i < NR; ++i) part0[j][i] = part1[j][i] = 0.0;
        }
        for (uint k = 0; k < 4; ++k)
          for (uint j = 0; j < TILE; ++j) {
            if (j >= tn) break;
            const uint xb = ((t0 + j) * IN_FEATURES + b * 32) / 4;
            const vec4 xl = x4[xb + k], xh = x4[xb + 4 + k];
#if defined(FMT_Q2_K)
            xsum0[j] += (xl.x + xl.y) + (xl.z + xl.w);
            xsum1[j] += (xh.x + xh.y) + (xh.z + xh.w);
#endif
            const vec4 x0 = xl * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            const vec4 x1 = xh * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            for (uint i = 0; i < NR; ++i) {
              part0[j][i] += word_dot_bytes(low_k_bytes(q[u][i], h[u][i], k, 0u), x0);
              part1[j][i] += word_dot_bytes(low_k_bytes(q[u][i], h[u][i], k, 1u), x1);
            }
          }
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i)
#if defined(FMT_Q2_K)
            acc[j][i] += (d[u][i].x * part0[j][i] - d[u][i].y * xsum0[j]) +
                         (d[u][i].z * part1[j][i] - d[u][i].w * xsum1[j]);
#else
            acc[j][i] += d[u][i].x * part0[j][i] + d[u][i].y * part1[j][i];
#endif
      }
#endif  // INT_DOT
#elif defined(IQ4_TABLE)
      uvec4 q[UNROLL][NR];
      float d[UNROLL][NR];  // the block's d (IQ4_XS: the sub-block's d * (ls - 32))
      for (uint u = 0; u < UNROLL; ++u)
        for (uint i = 0; i < NR; ++i) {
          const uint blk = row[i % ROWS_PER_GROUP] * blocks + min(b0 + u * LANES_PER_GROUP, kb_end - 1);
          q[u][i] = i < ROWS_PER_GROUP ? block_quants(blk) : block_quants2(blk);
          d[u][i] = i < ROWS_PER_GROUP ? block_scale(blk) : block_scale2(blk);
        }
#if defined(INT_DOT)
      // The table's signed bytes against the inputs' bytes: no zero point, no min.
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        for (uint j = 0; j < TILE; ++j) {
          if (j >= tn) break;
          uvec4 lo, hi;
          vec2 scale;
          inputs_as_bytes(t0 + j, b, kb_begin, lo, hi, scale);
          for (uint i = 0; i < NR; ++i) {
            int s = 0;
            for (uint k = 0; k < 4; ++k)
              s += dot_bytes(iq4_bytes(q[u][i][k] & 0x0F0F0F0Fu), lo[k], 0) +
                   dot_bytes(iq4_bytes((q[u][i][k] >> 4) & 0x0F0F0F0Fu), hi[k], 0);
            acc[j][i] += d[u][i] * (int_to_float(s) * scale.x);
          }
        }
      }
#else
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        float part[TILE][NR];
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i) part[j][i] = 0.0;
        for (uint k = 0; k < 4; ++k)
          for (uint j = 0; j < TILE; ++j) {
            if (j >= tn) break;
            const uint xb = ((t0 + j) * IN_FEATURES + b * 32) / 4;
            const vec4 x0 = x4[xb + k], x1 = x4[xb + 4 + k];
            for (uint i = 0; i < NR; ++i)
              part[j][i] += dot(iq4_values(q[u][i][k] & 0x0F0F0F0Fu), x0) +
                            dot(iq4_values((q[u][i][k] >> 4) & 0x0F0F0F0Fu), x1);
          }
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i) acc[j][i] += d[u][i] * part[j][i];
      }
#endif  // INT_DOT
#else  // Q8_0
      uvec4 q0[UNROLL][NR], q1[UNROLL][NR];
      float d[UNROLL][NR];
      for (uint u = 0; u < UNROLL; ++u)
        for (uint i = 0; i < NR; ++i) {
          const uint blk = row[i % ROWS_PER_GROUP] * blocks + min(b0 + u * LANES_PER_GROUP, kb_end - 1);
          q0[u][i] = i < ROWS_PER_GROUP ? block_quants(blk, 0) : block_quants2(blk, 0);
          q1[u][i] = i < ROWS_PER_GROUP ? block_quants(blk, 1) : block_quants2(blk, 1);
          d[u][i] = i < ROWS_PER_GROUP ? block_scale(blk) : block_scale2(blk);
        }
#if defined(INT_DOT)
      // The signed bytes against the inputs' bytes: no zero point, no min.
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        for (uint j = 0; j < TILE; ++j) {
          if (j >= tn) break;
          uvec4 lo, hi;
          vec2 scale;
          inputs_as_bytes(t0 + j, b, kb_begin, lo, hi, scale);
          for (uint i = 0; i < NR; ++i) {
            int s = 0;
            for (uint k = 0; k < 4; ++k) s += dot_bytes(q0[u][i][k], lo[k], 0) + dot_bytes(q1[u][i][k], hi[k], 0);
            acc[j][i] += d[u][i] * (int_to_float(s) * scale.x);
          }
        }
      }
#else
      for (uint u = 0; u < UNROLL; ++u) {
        const uint b = b0 + u * LANES_PER_GROUP;
        if (b >= kb_end) break;
        float part[TILE][NR];
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i) part[j][i] = 0.0;
        for (uint k = 0; k < 4; ++k)
          for (uint j = 0; j < TILE; ++j) {
            if (j >= tn) break;
            const uint xb = ((t0 + j) * IN_FEATURES + b * 32) / 4;
            const vec4 x0 = x4[xb + k] * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            const vec4 x1 = x4[xb + 4 + k] * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            for (uint i = 0; i < NR; ++i) part[j][i] += word_dot(q0[u][i][k], q1[u][i][k], x0, x1);
          }
        for (uint j = 0; j < TILE; ++j)
          for (uint i = 0; i < NR; ++i) acc[j][i] += d[u][i] * part[j][i];
      }
#endif  // INT_DOT
#endif
    }
#else
    if (IN_FEATURES % WIDE_ELEMS == 0 && WIDE_ELEMS > 1) {  // whole rows of 16-byte groups
      const uint groups_per_row = IN_FEATURES / WIDE_ELEMS;
      for (uint g = l; g < groups_per_row; g += LANES_PER_GROUP) {
        float w[ROWS_PER_GROUP][8];
        for (uint i = 0; i < ROWS_PER_GROUP; ++i) weights_wide(row[i] * groups_per_row + g, w[i]);
        for (uint j = 0; j < TILE; ++j) {
          if (j >= tn) break;
          float xs[8];
          for (uint e = 0; e < WIDE_ELEMS; ++e) xs[e] = x[(t0 + j) * IN_FEATURES + g * WIDE_ELEMS + e];
          for (uint i = 0; i < ROWS_PER_GROUP; ++i)
            for (uint e = 0; e < WIDE_ELEMS; ++e) acc[j][i] += w[i][e] * xs[e];
        }
      }
    } else {
      for (uint k = l; k < IN_FEATURES; k += LANES_PER_GROUP) {
        float w[ROWS_PER_GROUP];
        for (uint i = 0; i < ROWS_PER_GROUP; ++i) w[i] = weight_at(row[i] * IN_FEATURES + k);
        for (uint j = 0; j < TILE; ++j) {
          if (j >= tn) break;
          const float xk = x[(t0 + j) * IN_FEATURES + k];
          for (uint i = 0; i < ROWS_PER_GROUP; ++i) acc[j][i] += w[i] * xk;
        }
      }
    }
#endif
    // Every token of the tile is reduced (uniform control flow, registers
    // indexed by constants); only the tile's live tokens are written.
    [[unroll]] for (uint j = 0; j < TILE; ++j) {
      const uint t = t0 + j;
      const bool live = j < tn;
      if (LANES_PER_GROUP == 1) {
        // Row groups of one lane (a CPU device's shape): its sums are its rows'.
        for (uint i = 0; i < ROWS_PER_GROUP; ++i) {
          const uint r = r0 + i;
          if (live && r < pc.rows)
            store_y(split * SLICE + t * OUT_FEATURES + pc.row_begin + r,
                    row_output(acc[j][i], acc[j][(i + ROWS_PER_GROUP) % NR]));
        }
      } else if (LANES_PER_GROUP <= S) {
        // Row groups within a subgroup: one reduction per row group and
        // accumulator, the lanes of the other row groups adding 0.
        const uint slots = S / LANES_PER_GROUP, slot = lane / LANES_PER_GROUP;
        const uint rg0 = rg - slot;  // the subgroup's first row group
        for (uint s = 0; s < slots; ++s) {
          float total[NR];
          for (uint i = 0; i < NR; ++i) total[i] = subgroupAdd(slot == s ? acc[j][i] : 0.0);
          for (uint i = 0; i < ROWS_PER_GROUP; ++i) {
            const uint r = (rg0 + s) * ROWS_PER_GROUP + i;
            if (live && l == 0 && slot == s && r < pc.rows)
              store_y(split * SLICE + t * OUT_FEATURES + pc.row_begin + r, row_output(total[i], total[(i + ROWS_PER_GROUP) % NR]));
          }
        }
      } else {
        // Row groups of several subgroups: partial sums meet in shared memory.
        for (uint i = 0; i < NR; ++i) {
          const float total = subgroupAdd(acc[j][i]);
          if (subgroupElect()) partial[gl_SubgroupID * NR + i] = total;
        }
        barrier();
        if (live && l < ROWS_PER_GROUP && r0 + l < pc.rows) {
          const uint first = gl_SubgroupID - gl_SubgroupID % (LANES_PER_GROUP / S);
          float a = 0.0, b = 0.0;
          for (uint sg = 0; sg < LANES_PER_GROUP / S; ++sg) {
            a += partial[(first + sg) * NR + l];
            b += partial[(first + sg) * NR + (l + ROWS_PER_GROUP) % NR];
          }
          store_y(split * SLICE + t * OUT_FEATURES + pc.row_begin + r0 + l, row_output(a, b));
        }
        barrier();  // the next token's partial sums reuse `partial`
      }
    }
  }
  if (SIGNAL != 0) {
    memoryBarrierBuffer();  // this invocation's outputs, before the count
    barrier();              // every invocation's
    if (gl_LocalInvocationIndex == 0) atomicAdd(counters[pc.counter], 1u);
  }
}
