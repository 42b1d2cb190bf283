#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// matmul_coop_splitk — Y[t, r] = dot(W[r, :], X[t, :]) for a few token rows: a
// batched decode step (one token of each of up to a few dozen streams) on the
// tensor units. Same bindings, push constants and row sets as matmul_coop;
// written in the NV form and rewritten to KHR at build time like it.
//
// With few tokens every weight is used by only a few products, so the step is
// bound by reading the weights once, and what matters is bytes in flight
// across the whole GPU and how long each chain of dependent loads is. A
// workgroup owns a TILE_TOKENS-token x TILE_ROWS-row output tile, and its SPLIT subgroups walk
// every SPLIT-th 32-k step (one quant block) of it, two steps' loads in
// flight each: every subgroup stages its own operands in its own shared
// memory, so the loop has no workgroup barrier, and a matrix with few rows and
// a long IN_FEATURES (a down projection) still has short chains. At the end the
// subgroups' partial sums meet in shared memory (over the staging tiles, no
// longer needed) and are added in subgroup order (deterministic). Products
// are fp16 x fp16 -> fp32, inputs saturated to the fp16 range, as in matmul_coop.
// A matrix with few row tiles and a long IN_FEATURES (an output projection: 80 tiles of
// 32 rows on a 4B) also splits IN_FEATURES across workgroups (SPLITS > 1): workgroup z
// walks the z-th of SPLITS consecutive ranges of the steps and writes its
// partial sums to slice z of Y, SLICE elements apart, which the consumer adds
// in order (rmsnorm's SLICES), as matmul_coop's splits do.
// PAIR = 1 (block formats: the FFN's gate and up, the same parts): a tile's
// first TILE_ROWS / 2 weight rows are the gate's and the others the same rows of up
// (binding 4), so both products share each X load and one dispatch, and the
// tile writes gelu_tanh(gate) * up for its TILE_ROWS / 2 rows — with HALF_OUT as the
// fp16 operand of the down projection (include/operand.glsl): gate, up and
// geglu in one dispatch, as matvec's PAIR does for single tokens.
// Dispatch: (ceil(part rows / TILE_ROWS), ceil(n / TILE_TOKENS), SPLITS), or with PAIR
// (ceil(part rows / (TILE_ROWS / 2)), ceil(n / TILE_TOKENS), 1); SPLIT * SUBGROUP_SIZE threads.
layout(push_constant) uniform Push { uint row_begin; uint rows; } pc;
layout(constant_id = 0) const uint IN_FEATURES = 32;
#define WEIGHT_BINDING 0
#define WEIGHT2_BINDING 4
#define WEIGHT_PART_BLOCKS (pc.rows * (IN_FEATURES / 32u))
#include "include/weights.glsl"
#include "include/coop_operands.glsl"
#include "include/gelu.glsl"
#define STEP_BINDING 3
#include "include/step.glsl"

layout(constant_id = 1) const uint OUT_FEATURES = 1;
layout(constant_id = 2) const uint ROW_SET = 0;  // 0: token rows; 1: logit rows
// Cooperative matrix shape, one the device lists (VkCooperativeMatrixPropertiesKHR).
layout(constant_id = 3) const uint TM = 16;             // tokens per matrix
layout(constant_id = 4) const uint TN = 16;             // weight rows per matrix
layout(constant_id = 5) const uint TK = 16;
layout(constant_id = 6) const uint SUBGROUP_SIZE = 32;  // the device's, queried by the host
layout(constant_id = 7) const uint TILE_TOKENS = 32;    // tile: tokens (at most 4 TM)
layout(constant_id = 8) const uint TILE_ROWS = 32;      // tile: weight rows (at most 4 TN)
layout(constant_id = 9) const uint SPLIT = 4;           // subgroups, each a share of IN_FEATURES
layout(local_size_x_id = 10) in;                        // SPLIT * SUBGROUP_SIZE
layout(constant_id = 11) const uint X_HALF = 0;    // 1: X arrives as fp16 (IN_FEATURES % 8 == 0)
layout(constant_id = 12) const uint SPLITS = 1;    // ranges of IN_FEATURES, one per workgroup z
layout(constant_id = 13) const uint SLICE = 0;     // elements of Y between their outputs
layout(constant_id = 14) const uint PAIR = 0;      // 1: gate and up rows, out gelu(gate) * up
layout(constant_id = 15) const uint HALF_OUT = 0;  // with PAIR: out as the fp16 operand
#include "include/operand.glsl"

layout(binding = 1) readonly buffer XBuf { float x[]; };   // [n, IN_FEATURES]
layout(binding = 1) readonly buffer XBuf4 { vec4 x4[]; };  // the same, 4 at a time
layout(binding = 1) readonly buffer XBufH { uvec4 xh[]; };  // or fp16 [n, IN_FEATURES], 8 at a time (X_HALF = 1):
                                                            // written once by the kernel that makes X
layout(binding = 2) writeonly buffer YBuf { float y[]; };  // [n, OUT_FEATURES], or [SPLITS][n, OUT_FEATURES]
layout(binding = 2) writeonly buffer YBufH { float16_t yh[]; };  // [n, OUT_FEATURES] in fp16 (PAIR, HALF_OUT)

const uint STEP = 32;  // k per step: one quant block
const uint THREADS = SPLIT * SUBGROUP_SIZE;
const uint FT = TILE_TOKENS / TM, FR = TILE_ROWS / TN;  // a subgroup's matrices, at most 4 x 4

// Each subgroup's fp16 tiles, as uvec4 (8 halves): X [TILE_TOKENS][40], then W [TILE_ROWS][40]
// (rows of 32 k + 8 padding, 80 bytes apart: the 8 rows of a matrix load fall
// on distinct banks); matrix loads count in these vectors. After the loop the
// same memory holds every subgroup's fp32 partial tile [SPLIT][TILE_TOKENS][TILE_ROWS]
// (kernels::SplitKTile checks that it fits).
const uint LDV = 5;
const uint STAGE = (TILE_TOKENS + TILE_ROWS) * LDV;  // one subgroup's tiles
shared uvec4 smem[SPLIT * STAGE];
uint x_tile(uint sg) { return sg * STAGE; }
uint w_tile(uint sg) { return sg * STAGE + TILE_TOKENS * LDV; }

// Unit (row, k0 + 16 * half_k) of the second tensor (PAIR: up), as
// load_w_unit reads the first.
#if defined(UNIT_FP32)
WUnit load_w_unit2(uint row, uint k0, uint half_k, bool ok) { return load_k_unit(row, k0, half_k, ok, true); }
#elif WEIGHT_BLOCK > 1
WUnit load_w_unit2(uint row, uint k0, uint half_k, bool ok) {
  WUnit u;
  const uint b = row * (IN_FEATURES / 32) + k0 / 32;
#if QUANT_BYTES == 16
  u.quants = ok ? block_quants2(b) : uvec4(0);
#else
  u.quants = ok ? block_quants2(b, half_k) : uvec4(0);
#endif
  u.scale = ok ? block_scale2(b) : 0.0;
  return u;
}
#else  // PAIR is for block formats only: binding 4 stays unused
WUnit load_w_unit2(uint row, uint k0, uint half_k, bool ok) { return load_w_unit(row, k0, half_k, ok); }
#endif

// A lane's share of a step: XU X units (8 k of a token), WU W units (16 k of a
// row), in two register sets: the next two steps' loads are in flight while
// the current step multiplies.
const uint XU = (TILE_TOKENS * (STEP / 8) + SUBGROUP_SIZE - 1) / SUBGROUP_SIZE;
const uint WU = (TILE_ROWS * 2 + SUBGROUP_SIZE - 1) / SUBGROUP_SIZE;
vec4 x_raw0[XU * 2], x_raw1[XU * 2];  // X_HALF = 0
uvec4 x_half0[XU], x_half1[XU];       // X_HALF = 1
WUnit w_raw0[WU], w_raw1[WU];

// Step `step` (k from 32 * step) of the tile's X or W into a register set.
// Macros, so that each set stays a named register array.
#define LOAD_X(XR, XH, step)                                                            \
  {                                                                                     \
    const uint k0 = (step) * STEP, lane = gl_SubgroupInvocationID;                      \
    [[unroll]] for (uint u = 0; u < XU; ++u) {                                          \
      const uint unit = lane + u * SUBGROUP_SIZE, t = tok0 + unit / 4, k = k0 + (unit % 4) * 8; \
      const bool ok = unit < TILE_TOKENS * 4 && t < n;                                           \
      if (X_HALF == 1) {                                                                \
        XH[u] = ok && k < IN_FEATURES ? xh[(t * IN_FEATURES + k) / 8] : uvec4(0);                           \
      } else if (IN_FEATURES % 4 == 0 && k0 + STEP <= IN_FEATURES) {                                               \
        XR[2 * u] = ok ? x4[(t * IN_FEATURES + k) / 4] : vec4(0);                                 \
        XR[2 * u + 1] = ok ? x4[(t * IN_FEATURES + k) / 4 + 1] : vec4(0);                         \
      } else {                                                                          \
        [[unroll]] for (uint e = 0; e < 8; ++e)                                         \
          XR[2 * u + e / 4][e % 4] = ok && k + e < IN_FEATURES ? x[t * IN_FEATURES + k + e] : 0.0;          \
      }                                                                                 \
    }                                                                                   \
  }
#define LOAD_W(WR, step)                                                                \
  {                                                                                     \
    const uint k0 = (step) * STEP, lane = gl_SubgroupInvocationID;                      \
    [[unroll]] for (uint u = 0; u < WU; ++u) {                                          \
      const uint unit = lane + u * SUBGROUP_SIZE, tile_row = unit / 2;                  \
      if (PAIR == 1 && tile_row >= TILE_ROWS / 2) {                                            \
        const uint row = row0 + tile_row - TILE_ROWS / 2;                                      \
        WR[u] = load_w_unit2(row, k0, unit % 2, unit < TILE_ROWS * 2 && row < pc.rows);        \
      } else {                                                                          \
        const uint row = row0 + tile_row;                                               \
        WR[u] = load_w_unit(row, k0, unit % 2, unit < TILE_ROWS * 2 && row < pc.rows);         \
      }                                                                                 \
    }                                                                                   \
  }

// A register set as fp16 into subgroup sg's tiles.
#define STORE_X(XR, XH)                                                                 \
  {                                                                                     \
    const uint lane = gl_SubgroupInvocationID;                                          \
    [[unroll]] for (uint u = 0; u < XU; ++u) {                                          \
      const uint unit = lane + u * SUBGROUP_SIZE;                                       \
      if (unit < TILE_TOKENS * 4)                                                                \
        smem[x_tile(sg) + (unit / 4) * LDV + unit % 4] = X_HALF == 1 ? XH[u] : pack8(XR[2 * u], XR[2 * u + 1]); \
    }                                                                                   \
  }
#define STORE_W(WR)                                                                     \
  {                                                                                     \
    const uint lane = gl_SubgroupInvocationID;                                          \
    [[unroll]] for (uint u = 0; u < WU; ++u) {                                          \
      const uint unit = lane + u * SUBGROUP_SIZE;                                       \
      if (unit < TILE_ROWS * 2) {                                                              \
        const uint slot = w_tile(sg) + (unit / 2) * LDV + (unit % 2) * 2;               \
        uvec4 lo, hi;                                                                   \
        w_unit_fp16(WR[u], unit % 2, lo, hi);                                           \
        smem[slot] = lo;                                                                \
        smem[slot + 1] = hi;                                                            \
      }                                                                                 \
    }                                                                                   \
  }

// Named matrices, not arrays (NVIDIA's driver keeps arrays of cooperative
// matrices out of registers; see matmul_coop.comp and notes/coop_gemm.md).
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, TM, TN>
#define MAT_A fcoopmatNV<16, gl_ScopeSubgroup, TM, TK>
#define MAT_B fcoopmatNV<16, gl_ScopeSubgroup, TK, TN>
#define FOR_ROW(X, i) X(i, 0) X(i, 1) X(i, 2) X(i, 3)
#define FOR_ALL(X) FOR_ROW(X, 0) FOR_ROW(X, 1) FOR_ROW(X, 2) FOR_ROW(X, 3)
#define DECLARE(i, j) ACC c##i##j = ACC(0.0);
#define LOAD_A(i) if (i < FT) coopMatLoadNV(a##i, smem, x_tile(sg) + i * TM * LDV + kk / 8, LDV, false);
// B[k][r] = W[r][k]: W rows are stored k-contiguous, i.e. B column-major.
#define LOAD_B(j) if (j < FR) coopMatLoadNV(b##j, smem, w_tile(sg) + j * TN * LDV + kk / 8, LDV, true);
#define MUL_ADD(i, j) if (i < FT && j < FR) c##i##j = coopMatMulAddNV(a##i, b##j, c##i##j);
// The products of the staged step.
#define MULTIPLY_STEP                                      \
  [[unroll]] for (uint kk = 0; kk < STEP; kk += TK) {      \
    MAT_A a0, a1, a2, a3;                                  \
    MAT_B b0, b1, b2, b3;                                  \
    LOAD_A(0) LOAD_A(1) LOAD_A(2) LOAD_A(3)                \
    LOAD_B(0) LOAD_B(1) LOAD_B(2) LOAD_B(3)                \
    FOR_ALL(MUL_ADD)                                       \
  }
// fp32 partial tiles over the staging memory, in uvec4 units (TILE_ROWS and TN are multiples of 4).
#define STORE_PARTIAL(i, j) \
  if (i < FT && j < FR)     \
    coopMatStoreNV(c##i##j, smem, ((sg * TILE_TOKENS + i * TM) * TILE_ROWS + j * TN) / 4, TILE_ROWS / 4, false);

void main() {
  const uint n = active_rows(ROW_SET);
  const uint row0 = gl_WorkGroupID.x * (PAIR == 1 ? TILE_ROWS / 2 : TILE_ROWS), tok0 = gl_WorkGroupID.y * TILE_TOKENS;
  if (tok0 >= n) return;  // whole tile past the step's rows: uniform exit
  const uint sg = gl_SubgroupID;

  FOR_ALL(DECLARE)
  // This workgroup's range of steps, and in it this subgroup's: first + sg,
  // first + sg + SPLIT, ...; two register sets take turns.
  const uint steps = (IN_FEATURES + STEP - 1) / STEP, split = gl_WorkGroupID.z;
  const uint first = split * steps / SPLITS, range = (split + 1) * steps / SPLITS - first;
  const uint mine = sg < range ? (range - sg + SPLIT - 1) / SPLIT : 0;  // subgroup-uniform
  const uint s0 = first + sg;
  if (mine > 0) { LOAD_W(w_raw0, s0) LOAD_X(x_raw0, x_half0, s0) }
  if (mine > 1) { LOAD_W(w_raw1, s0 + SPLIT) LOAD_X(x_raw1, x_half1, s0 + SPLIT) }
  for (uint i = 0; i < mine; i += 2) {
    STORE_X(x_raw0, x_half0)
    STORE_W(w_raw0)
    subgroupBarrier();  // the tiles are written before any lane's matrix loads
    if (i + 2 < mine) { LOAD_W(w_raw0, s0 + (i + 2) * SPLIT) LOAD_X(x_raw0, x_half0, s0 + (i + 2) * SPLIT) }
    MULTIPLY_STEP
    subgroupBarrier();  // every lane's matrix loads are done before the next store
    if (i + 1 < mine) {
      STORE_X(x_raw1, x_half1)
      STORE_W(w_raw1)
      subgroupBarrier();
      if (i + 3 < mine) { LOAD_W(w_raw1, s0 + (i + 3) * SPLIT) LOAD_X(x_raw1, x_half1, s0 + (i + 3) * SPLIT) }
      MULTIPLY_STEP
      subgroupBarrier();
    }
  }

  barrier();  // every subgroup is done with its tiles: the partials go over them
  FOR_ALL(STORE_PARTIAL)
  barrier();
  if (PAIR == 1) {  // tile columns c < TILE_ROWS / 2: gate row row0 + c; c + TILE_ROWS / 2: the same row of up
    for (uint e = gl_LocalInvocationID.x; e < TILE_TOKENS * (TILE_ROWS / 2); e += THREADS) {
      const uint tt = e / (TILE_ROWS / 2), c = e % (TILE_ROWS / 2), t = tok0 + tt, r = row0 + c;
      float gate = 0.0, up = 0.0;
      for (uint s = 0; s < SPLIT; ++s) {
        const uint f = (s * TILE_TOKENS + tt) * TILE_ROWS + c, fu = f + TILE_ROWS / 2;
        gate += uintBitsToFloat(smem[f / 4][f % 4]);
        up += uintBitsToFloat(smem[fu / 4][fu % 4]);
      }
      if (t < n && r < pc.rows) {
        const float v = gelu_tanh(gate) * up;
        if (HALF_OUT == 1)
          yh[t * OUT_FEATURES + pc.row_begin + r] = OPERAND_FP16(v);
        else
          y[t * OUT_FEATURES + pc.row_begin + r] = v;
      }
    }
    return;
  }
  for (uint e = gl_LocalInvocationID.x; e < TILE_TOKENS * TILE_ROWS; e += THREADS) {
    const uint t = tok0 + e / TILE_ROWS, r = row0 + e % TILE_ROWS;
    float sum = 0.0;
    for (uint s = 0; s < SPLIT; ++s) {
      const uint f = s * TILE_TOKENS * TILE_ROWS + e;
      sum += uintBitsToFloat(smem[f / 4][f % 4]);
    }
    if (t < n && r < pc.rows) y[split * SLICE + t * OUT_FEATURES + pc.row_begin + r] = sum;
  }
}
