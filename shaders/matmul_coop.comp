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
// A workgroup computes a 128-token x 128-row output tile with SUBGROUPS
// subgroups, each a (128 / WARPS_T) x 32 block as TM x TN accumulators.
// K is walked 32 at a time (one quant block): X (fp32) and W (dequantised by
// weights.glsl) are rounded to fp16 into shared memory, double buffered, with
// the next step's global loads in flight while the current step multiplies.
// Accumulation is fp32. Dispatch: (ceil(part rows / 128), ceil(n / 128), 1).
layout(push_constant) uniform Push { uint row_begin; uint rows; } pc;
layout(constant_id = 0) const uint K = 32;
#define WEIGHT_BINDING 0
#define WEIGHT_PART_BLOCKS (pc.rows * (K / 32u))
#include "include/weights.glsl"
#define STEP_BINDING 3
#include "include/step.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 1) const uint M = 1;
layout(constant_id = 2) const uint ROW_SET = 0;  // 0: token rows; 1: logit rows
// Cooperative matrix shape, one the device lists (VkCooperativeMatrixPropertiesKHR).
layout(constant_id = 3) const uint TM = 16;  // tokens per matrix
layout(constant_id = 4) const uint TN = 16;  // weight rows per matrix
layout(constant_id = 5) const uint TK = 16;
layout(constant_id = 6) const uint SUBGROUP_SIZE = 32;  // the device's, queried by the host

layout(binding = 1) readonly buffer XBuf { float x[]; };   // [n, K]
layout(binding = 1) readonly buffer XBuf4 { vec4 x4[]; };  // the same, 4 at a time
layout(binding = 2) writeonly buffer YBuf { float y[]; };  // [n, M]

const uint BT = 128, BR = 128, STEP = 32;  // tile: tokens x rows, k per step
const uint PAD = 8;                         // keeps rows 16-byte aligned, spreads banks
const uint LD = STEP + PAD;                 // shared row stride, in halves
const uint THREADS = 256, SUBGROUPS = THREADS / SUBGROUP_SIZE;  // 8 or 4
const uint WARPS_R = 4, WARPS_T = SUBGROUPS / WARPS_R;  // subgroup grid over the tile
const uint WT = BT / WARPS_T, WR = BR / WARPS_R;        // one subgroup's block
const uint FT = WT / TM, FR = WR / TN;                  // its matrices

// fp16 tiles held as uvec4 (8 halves): one 16-byte shared store per 8 values.
// Matrix loads count offsets and strides in these vectors.
const uint HV = 8, LDV = LD / HV;
shared uvec4 xs[2][BT * LDV];  // [buffer][token * LDV + k / 8], fp16 pairs
shared uvec4 ws[2][BR * LDV];  // [buffer][row * LDV + k / 8]
shared float out_tile[SUBGROUPS][16 * 16];  // one accumulator at a time, per subgroup

// Each thread moves ELEMS consecutive k of one token row and one weight row per
// step. Loads land in registers still in their source precision and are
// rounded to fp16 only when stored, after the step's products, so the global
// loads' latency overlaps the tensor work.
const uint ELEMS = BT * STEP / THREADS;  // 16
vec4 x_raw[ELEMS / 4];
vec4 w_raw[ELEMS / 4];

void load_step(uint k0, uint tok0, uint row0, uint n) {
  const uint lane = gl_LocalInvocationID.x;
  const uint r = lane / (STEP / ELEMS), c = (lane % (STEP / ELEMS)) * ELEMS;
  const uint t = tok0 + r, row = row0 + r;
  // X: vec4 loads when rows are 16-byte aligned.
  if (K % 4 == 0 && k0 + STEP <= K) {
    [[unroll]] for (uint e = 0; e < ELEMS / 4; ++e)
      x_raw[e] = t < n ? x4[(t * K + k0 + c) / 4 + e] : vec4(0);
  } else {
    [[unroll]] for (uint e = 0; e < ELEMS; ++e) {
      const uint k = k0 + c + e;
      x_raw[e / 4][e % 4] = t < n && k < K ? x[t * K + k] : 0.0;
    }
  }
  const bool row_ok = row < pc.rows;
#if WEIGHT_BLOCK > 1
  // A block's scale once, then its quants (K is a multiple of 32 for block formats).
  const uint b = (row * K + k0) / WEIGHT_BLOCK;
  const float d = row_ok ? block_scale(b) : 0.0;
  [[unroll]] for (uint e = 0; e < ELEMS; ++e)
    w_raw[e / 4][e % 4] = row_ok ? d * block_quant(b, c + e) : 0.0;
#else
  if (row_ok && (K % WIDE_ELEMS) == 0 && k0 + STEP <= K) {
    float w[8];
    [[unroll]] for (uint e = 0; e < ELEMS; e += WIDE_ELEMS) {
      weights_wide((row * K + k0 + c + e) / WIDE_ELEMS, w);
      [[unroll]] for (uint q = 0; q < WIDE_ELEMS; ++q) w_raw[(e + q) / 4][(e + q) % 4] = w[q];
    }
  } else {
    [[unroll]] for (uint e = 0; e < ELEMS; ++e) {
      const uint k = k0 + c + e;
      w_raw[e / 4][e % 4] = row_ok && k < K ? weight_at(row * K + k) : 0.0;
    }
  }
#endif
}

// Eight floats as fp16 (round to nearest even, as OpFConvert).
uvec4 pack8(vec4 a, vec4 b) {
  return uvec4(packFloat2x16(f16vec2(a.xy)), packFloat2x16(f16vec2(a.zw)),
               packFloat2x16(f16vec2(b.xy)), packFloat2x16(f16vec2(b.zw)));
}

void store_step(uint buf) {
  const uint lane = gl_LocalInvocationID.x;
  const uint r = lane / (STEP / ELEMS), c = (lane % (STEP / ELEMS)) * ELEMS;
  [[unroll]] for (uint e = 0; e < ELEMS / HV; ++e) {
    xs[buf][r * LDV + c / HV + e] = pack8(x_raw[2 * e], x_raw[2 * e + 1]);
    ws[buf][r * LDV + c / HV + e] = pack8(w_raw[2 * e], w_raw[2 * e + 1]);
  }
}

void main() {
  const uint n = active_rows(ROW_SET);
  const uint row0 = gl_WorkGroupID.x * BR, tok0 = gl_WorkGroupID.y * BT;
  if (tok0 >= n) return;  // whole tile past the chunk: uniform exit
  const uint sg = gl_SubgroupID;
  const uint sub_t = (sg / WARPS_R) * WT, sub_r = (sg % WARPS_R) * WR;  // block origin in the tile

  fcoopmatNV<32, gl_ScopeSubgroup, TM, TN> acc[FT * FR];
  [[unroll]] for (uint i = 0; i < FT * FR; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, TM, TN>(0.0);

  load_step(0, tok0, row0, n);
  store_step(0);
  barrier();
  const uint steps = (K + STEP - 1) / STEP;
  for (uint s = 0; s < steps; ++s) {
    const uint buf = s & 1u;
    if (s + 1 < steps) load_step((s + 1) * STEP, tok0, row0, n);  // in flight during the products
    [[unroll]] for (uint kk = 0; kk < STEP; kk += TK) {
      fcoopmatNV<16, gl_ScopeSubgroup, TM, TK> a[FT];
      fcoopmatNV<16, gl_ScopeSubgroup, TK, TN> b[FR];
      [[unroll]] for (uint i = 0; i < FT; ++i)
        coopMatLoadNV(a[i], xs[buf], (sub_t + i * TM) * LDV + kk / HV, LDV, false);
      // B[k][r] = W[r][k]: W rows are stored k-contiguous, i.e. B column-major.
      [[unroll]] for (uint j = 0; j < FR; ++j)
        coopMatLoadNV(b[j], ws[buf], (sub_r + j * TN) * LDV + kk / HV, LDV, true);
      [[unroll]] for (uint i = 0; i < FT; ++i)
        [[unroll]] for (uint j = 0; j < FR; ++j) acc[i * FR + j] = coopMatMulAddNV(a[i], b[j], acc[i * FR + j]);
    }
    if (s + 1 < steps) store_step(buf ^ 1u);  // the other buffer: last read one step ago
    barrier();
  }

  // Out through shared memory, one accumulator at a time: bounds checks on
  // ragged tiles and no alignment demands on Y's row stride M.
  const uint lane = gl_SubgroupInvocationID;
  [[unroll]] for (uint i = 0; i < FT; ++i)
    [[unroll]] for (uint j = 0; j < FR; ++j) {
      coopMatStoreNV(acc[i * FR + j], out_tile[sg], 0, TN, false);
      subgroupBarrier();
      for (uint e = lane; e < TM * TN; e += SUBGROUP_SIZE) {
        const uint t = tok0 + sub_t + i * TM + e / TN, r = row0 + sub_r + j * TN + e % TN;
        if (t < n && r < pc.rows) y[t * M + pc.row_begin + r] = out_tile[sg][e];
      }
      subgroupBarrier();
    }
}
