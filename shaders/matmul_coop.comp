#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// matmul_coop — Y[t, r] = dot(W[r, :], X[t, :]) for a chunk of tokens (prefill),
// on the tensor units through cooperative matrices. Same bindings, push
// constants and row sets as matmul.comp; the engine picks it when the device
// offers fp16 x fp16 -> fp32 cooperative matrices (gpu::DeviceInfo::coopmat).
//
// Written in the NV form (GL_NV_cooperative_matrix), which Debian's glslang
// compiles; tools/spirv_coop_khr.cpp rewrites the SPIR-V into the KHR form at
// build time. Every matrix type takes its shape from its own spec constants
// (TM x TK for A, TK x TN for B, TM x TN for C), so each NV type has exactly one
// use (A, B or accumulator), which the KHR form must name.
//
// A workgroup computes a TILE_TOKENS-token x TILE_ROWS-row output tile with WARPS_TOKENS x WARPS_ROWS
// subgroups, each a (TILE_TOKENS / WARPS_TOKENS) x (TILE_ROWS / WARPS_ROWS) block of TM x TN
// accumulators; the host picks the tile per matrix (kernels::coop_tile) so that
// small matrices still fill the GPU. IN_FEATURES is walked 32 at a time (one quant
// block): W (dequantised straight to packed fp16 from one 16-byte quant load)
// goes to shared memory, with the next step's global loads in flight while the
// current step multiplies: double buffered (STAGES = 2, one barrier a step),
// or for the large tiles one buffer (STAGES = 1, two barriers a step: the tile
// no longer fits twice in 48 KiB). X arrives as fp32 or fp16 (X_HALF).
// Accumulation is fp32.
// Split over IN_FEATURES (SPLITS > 1), workgroup z walks the z-th of SPLITS consecutive
// ranges of the steps and writes its partial sums to slice z of Y, SLICE
// elements after slice z - 1: a matrix with too few tiles to fill the GPU
// (an output projection on a large GPU) gets SPLITS times the workgroups, and
// its consumer adds the slices in order (rmsnorm's SLICES: deterministic).
// Dispatch: (ceil(part rows / TILE_ROWS), ceil(n / TILE_TOKENS), SPLITS), (WARPS_TOKENS * WARPS_ROWS +
// PRODUCERS) * SUBGROUP_SIZE threads.
layout(push_constant) uniform Push { uint row_begin; uint rows; } pc;
layout(constant_id = 0) const uint IN_FEATURES = 32;
#define WEIGHT_BINDING 0
#define WEIGHT_PART_BLOCKS (pc.rows * (IN_FEATURES / 32u))
#include "include/weights.glsl"
#include "include/coop_operands.glsl"
#define STEP_BINDING 3
#include "include/step.glsl"

layout(constant_id = 1) const uint OUT_FEATURES = 1;
layout(constant_id = 2) const uint ROW_SET = 0;  // 0: token rows; 1: logit rows
// Cooperative matrix shape, one the device lists (VkCooperativeMatrixPropertiesKHR).
layout(constant_id = 3) const uint TM = 16;             // tokens per matrix
layout(constant_id = 4) const uint TN = 16;             // weight rows per matrix
layout(constant_id = 5) const uint TK = 16;
layout(constant_id = 6) const uint SUBGROUP_SIZE = 32;  // the device's, queried by the host
layout(constant_id = 7) const uint TILE_TOKENS = 128;   // tile: tokens
layout(constant_id = 8) const uint TILE_ROWS = 128;     // tile: weight rows
layout(constant_id = 9) const uint WARPS_TOKENS = 2;    // subgroup grid over the tile
layout(constant_id = 10) const uint WARPS_ROWS = 2;
layout(local_size_x_id = 11) in;                        // (WARPS_TOKENS * WARPS_ROWS + PRODUCERS) * SUBGROUP_SIZE
layout(constant_id = 12) const uint STAGES = 2;  // shared buffers: 2, or 1
// Subgroups that only load and store the tiles, after the WARPS_TOKENS * WARPS_ROWS
// that only multiply; 0: every subgroup does both, one after the other.
// Needs STAGES = 2. Measured on the H100 (notes/coop_gemm.md, steps 8 and
// 11): 8 producers beside 8 multiplying subgroups ran 128 x 128 tiles up to
// 17% faster; kernels::kCoopTiles' 128 x 128 tile has them.
layout(constant_id = 13) const uint PRODUCERS = 0;
// How X arrives: 0, fp32, clamped to the fp16 range and converted by every
// workgroup that stages it; 1, fp16 (IN_FEATURES % 8 == 0), written once by the kernel
// that produced it (include/operand.glsl) and staged as it is: half the bytes
// of every re-read and no conversion (notes/coop_gemm.md, step 10).
layout(constant_id = 14) const uint X_HALF = 0;
layout(constant_id = 15) const uint SPLITS = 1;  // ranges of IN_FEATURES, one per workgroup z
layout(constant_id = 16) const uint SLICE = 0;   // elements of Y between their outputs

layout(binding = 1) readonly buffer XBuf { float x[]; };   // [n, IN_FEATURES]
layout(binding = 1) readonly buffer XBuf4 { vec4 x4[]; };  // the same, 4 at a time
layout(binding = 1) readonly buffer XBufH { uvec4 xh[]; };  // or fp16 [n, IN_FEATURES], 8 at a time (X_HALF = 1)
layout(binding = 2) writeonly buffer YBuf { float y[]; };  // [n, OUT_FEATURES], or [SPLITS][n, OUT_FEATURES]

const uint STEP = 32;                 // k per stage: one quant block
const uint MMA_WARPS = WARPS_TOKENS * WARPS_ROWS;
const uint THREADS = (PRODUCERS > 0 ? PRODUCERS : MMA_WARPS) * SUBGROUP_SIZE;  // threads that load
const uint WT = TILE_TOKENS / WARPS_TOKENS, WR = TILE_ROWS / WARPS_ROWS;  // one subgroup's block
const uint FT = WT / TM, FR = WR / TN;            // its matrices, at most 4 x 4

// fp16 tiles held as uvec4 (8 halves): one 16-byte shared store per 8 values.
// A row is 32 halves plus 8 of padding: rows 80 bytes apart put the 8 rows of
// a matrix load on distinct banks. Matrix loads count in these vectors.
const uint LDV = 5;
// X tiles [buffer][token][k / 8] from 0, W tiles [buffer][row][k / 8] from WS.
// After the loop, a ragged tile's subgroups use the start as one TM x TN fp32
// scratch matrix each (kernels::CoopTile::shared_bytes counts both uses).
const uint WS = STAGES * TILE_TOKENS * LDV;
shared uvec4 smem[STAGES * (TILE_TOKENS + TILE_ROWS) * LDV];

// Per step a thread moves XU units of 8 consecutive k of one token and WU
// units of 16 consecutive k of one weight row (half a quant block). Loads land
// in registers in their source encoding and become fp16 only when stored,
// after the step's products, so the loads' latency overlaps the tensor work.
const uint XU = (TILE_TOKENS * (STEP / 8) + THREADS - 1) / THREADS;  // 64-lane subgroups: fewer units than threads
const uint WU = (TILE_ROWS * 2 + THREADS - 1) / THREADS;
vec4 x_raw[XU * 2];  // X_HALF = 0
uvec4 x_fp16[XU];    // X_HALF = 1
WUnit w_raw[WU];  // coop_operands.glsl: quants and scale, or 16 values already fp16

void load_step(uint k0, uint tok0, uint row0, uint n) {
  const uint tid = gl_LocalInvocationID.x - (PRODUCERS > 0 ? MMA_WARPS * SUBGROUP_SIZE : 0);
  const bool full_k = k0 + STEP <= IN_FEATURES;
  [[unroll]] for (uint u = 0; u < XU; ++u) {
    const uint unit = tid + u * THREADS, t = tok0 + unit / 4, k = k0 + (unit % 4) * 8;
    const bool ok = unit < TILE_TOKENS * 4 && t < n;
    if (X_HALF == 1) {
      x_fp16[u] = ok && k < IN_FEATURES ? xh[(t * IN_FEATURES + k) / 8] : uvec4(0);
    } else if (IN_FEATURES % 4 == 0 && full_k) {
      x_raw[2 * u] = ok ? x4[(t * IN_FEATURES + k) / 4] : vec4(0);
      x_raw[2 * u + 1] = ok ? x4[(t * IN_FEATURES + k) / 4 + 1] : vec4(0);
    } else {
      [[unroll]] for (uint e = 0; e < 8; ++e)
        x_raw[2 * u + e / 4][e % 4] = ok && k + e < IN_FEATURES ? x[t * IN_FEATURES + k + e] : 0.0;
    }
  }
  [[unroll]] for (uint u = 0; u < WU; ++u) {
    const uint unit = tid + u * THREADS, row = row0 + unit / 2;
    w_raw[u] = load_w_unit(row, k0, unit % 2, unit < TILE_ROWS * 2 && row < pc.rows);
  }
}

void store_step(uint buf) {
  const uint tid = gl_LocalInvocationID.x - (PRODUCERS > 0 ? MMA_WARPS * SUBGROUP_SIZE : 0);
  [[unroll]] for (uint u = 0; u < XU; ++u) {
    const uint unit = tid + u * THREADS;
    if (unit < TILE_TOKENS * 4)
      smem[(buf * TILE_TOKENS + unit / 4) * LDV + unit % 4] = X_HALF == 1 ? x_fp16[u] : pack8(x_raw[2 * u], x_raw[2 * u + 1]);
  }
  [[unroll]] for (uint u = 0; u < WU; ++u) {
    const uint unit = tid + u * THREADS;
    if (unit >= TILE_ROWS * 2) break;
    const uint slot = WS + (buf * TILE_ROWS + unit / 2) * LDV + (unit % 2) * 2;
    uvec4 lo, hi;
    w_unit_fp16(w_raw[u], unit % 2, lo, hi);
    smem[slot] = lo;
    smem[slot + 1] = hi;
  }
}

// The subgroup's accumulators, A and B matrices are named variables, not
// arrays: NVIDIA's driver (580) keeps arrays of cooperative matrices indexed
// in loops out of registers, which held the products to ~30 TFLOP/s on the
// H100 where named matrices ran the same loop at over 500 (notes/coop_gemm.md).
// A subgroup owns up to 4 x 4 of them; the spec constants FT and FR fold the
// unused ones away.
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, TM, TN>
#define MAT_A fcoopmatNV<16, gl_ScopeSubgroup, TM, TK>
#define MAT_B fcoopmatNV<16, gl_ScopeSubgroup, TK, TN>
#define FOR_ROW(X, i) X(i, 0) X(i, 1) X(i, 2) X(i, 3)
#define FOR_ALL(X) FOR_ROW(X, 0) FOR_ROW(X, 1) FOR_ROW(X, 2) FOR_ROW(X, 3)
#define DECLARE(i, j) ACC c##i##j = ACC(0.0);
#define LOAD_A(i) if (i < FT) coopMatLoadNV(a##i, smem, (buf * TILE_TOKENS + sub_t + i * TM) * LDV + kk / 8, LDV, false);
// B[k][r] = W[r][k]: W rows are stored k-contiguous, i.e. B column-major.
#define LOAD_B(j) if (j < FR) coopMatLoadNV(b##j, smem, WS + (buf * TILE_ROWS + sub_r + j * TN) * LDV + kk / 8, LDV, true);
#define MUL_ADD(i, j) if (i < FT && j < FR) c##i##j = coopMatMulAddNV(a##i, b##j, c##i##j);
#define STORE_Y(i, j) \
  if (i < FT && j < FR) coopMatStoreNV(c##i##j, y, y0 + (t0 + i * TM) * OUT_FEATURES + pc.row_begin + r0 + j * TN, OUT_FEATURES, false);
// One accumulator of a ragged tile: through the subgroup's shared scratch,
// with bounds checks (a macro: the KHR rewrite keeps matrices out of functions).
#define STORE_RAGGED(i, j)                                                            \
  if (i < FT && j < FR) {                                                             \
    coopMatStoreNV(c##i##j, smem, sg * (TM * TN / 4), TN / 4, false);                \
    subgroupBarrier();                                                                \
    for (uint e = gl_SubgroupInvocationID; e < TM * TN; e += SUBGROUP_SIZE) {         \
      const uint t = t0 + i * TM + e / TN, r = r0 + j * TN + e % TN;                  \
      if (t < n && r < pc.rows)                                                       \
        y[y0 + t * OUT_FEATURES + pc.row_begin + r] = uintBitsToFloat(smem[sg * (TM * TN / 4) + e / 4][e % 4]); \
    }                                                                                 \
    subgroupBarrier();                                                                \
  }

void main() {
  const uint n = active_rows(ROW_SET);
  const uint row0 = gl_WorkGroupID.x * TILE_ROWS, tok0 = gl_WorkGroupID.y * TILE_TOKENS;
  if (tok0 >= n) return;  // whole tile past the chunk: uniform exit
  const uint sg = gl_SubgroupID;
  const bool loader = PRODUCERS == 0 || sg >= MMA_WARPS, mma = PRODUCERS == 0 || sg < MMA_WARPS;
  const uint sub_t = (sg / WARPS_ROWS) * WT, sub_r = (sg % WARPS_ROWS) * WR;  // block origin in the tile

  // This workgroup's steps of IN_FEATURES: [first, end), all of them unless split.
  const uint steps = (IN_FEATURES + STEP - 1) / STEP, split = gl_WorkGroupID.z;
  const uint first = split * steps / SPLITS, end = (split + 1) * steps / SPLITS;

  FOR_ALL(DECLARE)
  if (loader && first < end) {
    load_step(first * STEP, tok0, row0, n);
    store_step(0);
  }
  barrier();
  for (uint s = first; s < end; ++s) {
    const uint buf = STAGES == 2 ? (s - first) & 1u : 0u;
    if (loader && s + 1 < end) load_step((s + 1) * STEP, tok0, row0, n);  // in flight during the products
    if (mma) {
      [[unroll]] for (uint kk = 0; kk < STEP; kk += TK) {
        MAT_A a0, a1, a2, a3;
        MAT_B b0, b1, b2, b3;
        LOAD_A(0) LOAD_A(1) LOAD_A(2) LOAD_A(3)
        LOAD_B(0) LOAD_B(1) LOAD_B(2) LOAD_B(3)
        FOR_ALL(MUL_ADD)
      }
    }
    if (s + 1 < end) {
      if (STAGES == 1) barrier();  // one buffer: every subgroup is done reading it
      // Two buffers: the other one, last read one step ago.
      if (loader) store_step(STAGES == 2 ? buf ^ 1u : 0u);
    }
    barrier();
  }
  if (!mma) return;

  // A tile wholly inside Y goes straight from the accumulators to Y (rows of
  // Y 16-byte aligned); a ragged one through shared memory with bounds checks.
  const uint t0 = tok0 + sub_t, r0 = row0 + sub_r, y0 = split * SLICE;
  if (tok0 + TILE_TOKENS <= n && row0 + TILE_ROWS <= pc.rows && OUT_FEATURES % 4 == 0 && pc.row_begin % 4 == 0) {
    FOR_ALL(STORE_Y)
  } else {
    FOR_ALL(STORE_RAGGED)
  }
}
