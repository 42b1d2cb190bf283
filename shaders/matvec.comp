#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// matvec — y[t, r] = dot(W[r, :], x[t, :]) for a few token rows (decode, and the
// LM head). Each subgroup owns ROWS output rows; its lanes walk the rows
// together, load each slice of x once and use it for all ROWS rows,
// dequantising inside the dot product so weights are read once. Reduction is
// subgroupAdd: no shared memory, no barriers.
// Dispatch: (min(G, 65535), ceil(G / 65535), n_tokens), where
// G = ceil(rows / (ROWS * subgroups per workgroup)), subgroups = 128 / size.
#define WEIGHT_BINDING 0
#include "include/weights.glsl"
#define STEP_BINDING 3
#include "include/step.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint K = 32;  // row length (input features)
layout(constant_id = 1) const uint M = 1;   // output features of the whole tensor
layout(constant_id = 2) const uint ROW_SET = 0;  // 0: token rows; 1: logit rows (LM head)
layout(constant_id = 3) const uint ROWS = 1;     // output rows per subgroup

layout(binding = 1) readonly buffer XBuf { float x[]; };   // [n, K]
layout(binding = 1) readonly buffer XBuf4 { vec4 x4[]; };  // the same, 16 bytes at a time
layout(binding = 1) readonly buffer XBuf2 { vec2 x2[]; };  // and 8 bytes at a time
layout(binding = 2) writeonly buffer YBuf { float y[]; };  // [n, M]
layout(push_constant) uniform Push { uint row_begin; uint rows; } pc;


void main() {
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint r0 = (group * gl_NumSubgroups + gl_SubgroupID) * ROWS;
  const uint t = gl_WorkGroupID.z, lane = gl_SubgroupInvocationID;
  if (r0 >= pc.rows || t >= active_rows(ROW_SET)) return;  // whole subgroups exit together
  float acc[ROWS];
  for (uint i = 0; i < ROWS; ++i) acc[i] = 0.0;
#if WEIGHT_BLOCK == 32
  // Eight lanes share a block, four elements each, so neighbouring lanes read
  // neighbouring bytes of weights and of x (whole cache lines per load); a
  // subgroup walks gl_SubgroupSize / 8 blocks of each of its rows at a time.
  const uint blocks = K / 32;  // K is a multiple of 32, so x rows are 16-byte aligned
  const uint q = lane % 8, step = gl_SubgroupSize / 8;
  // UNROLL blocks per lane per pass, all loads issued before any use: enough
  // bytes in flight to cover memory latency (one block at a time reached only
  // a quarter of the H100's bandwidth).
  const uint UNROLL = 4;
  for (uint b0 = lane / 8; b0 < blocks; b0 += UNROLL * step) {
#if defined(FMT_Q4_0)
    // Lane q: quant bytes 2q, 2q+1 -> elements 2q, 2q+1 (low nibbles) and
    // 16+2q, 17+2q (high nibbles); sum (q - 8) x = sum q x - 8 sum x.
    vec4 xv[UNROLL];
    uint w[UNROLL][ROWS];
    float d[UNROLL][ROWS];
    for (uint u = 0; u < UNROLL; ++u) {
      const uint b = min(b0 + u * step, blocks - 1);  // clamped: past-the-end slots add 0 below
      xv[u] = vec4(x2[(t * K + b * 32) / 2 + q], x2[(t * K + b * 32 + 16) / 2 + q]);
      for (uint i = 0; i < ROWS; ++i) {
        const uint blk = min(r0 + i, pc.rows - 1) * blocks + b;
        w[u][i] = uint(W[blk * BLOCK_WORDS + 1 + q]);
        d[u][i] = block_scale(blk);
      }
    }
    for (uint u = 0; u < UNROLL; ++u) {
      if (b0 + u * step >= blocks) break;
      const float xs = xv[u].x + xv[u].y + xv[u].z + xv[u].w;
      for (uint i = 0; i < ROWS; ++i) {
        const uint v = w[u][i];
        acc[i] += (dot(vec4(v & 15u, (v >> 8) & 15u, (v >> 4) & 15u, (v >> 12) & 15u), xv[u]) - 8.0 * xs) * d[u][i];
      }
    }
#else  // Q8_0: lane q: quant bytes 4q .. 4q+3 -> elements 4q .. 4q+3
    vec4 xv[UNROLL];
    uint w0[UNROLL][ROWS], w1[UNROLL][ROWS];
    float d[UNROLL][ROWS];
    for (uint u = 0; u < UNROLL; ++u) {
      const uint b = min(b0 + u * step, blocks - 1);
      xv[u] = x4[(t * K + b * 32) / 4 + q];
      for (uint i = 0; i < ROWS; ++i) {
        const uint blk = min(r0 + i, pc.rows - 1) * blocks + b;
        w0[u][i] = uint(W[blk * BLOCK_WORDS + 1 + 2 * q]);
        w1[u][i] = uint(W[blk * BLOCK_WORDS + 2 + 2 * q]);
        d[u][i] = block_scale(blk);
      }
    }
    for (uint u = 0; u < UNROLL; ++u) {
      if (b0 + u * step >= blocks) break;
      for (uint i = 0; i < ROWS; ++i) {
        const ivec4 v = ivec4(int(w0[u][i] << 24) >> 24, int(w0[u][i] << 16) >> 24,
                              int(w1[u][i] << 24) >> 24, int(w1[u][i] << 16) >> 24);
        acc[i] += dot(vec4(v), xv[u]) * d[u][i];
      }
    }
#endif
  }
#else
  if (K % WIDE_ELEMS == 0 && WIDE_ELEMS > 1) {  // whole rows of 16-byte groups
    const uint groups_per_row = K / WIDE_ELEMS;
    for (uint g = lane; g < groups_per_row; g += gl_SubgroupSize) {
      float xs[8];
      for (uint e = 0; e < WIDE_ELEMS; ++e) xs[e] = x[t * K + g * WIDE_ELEMS + e];
      for (uint i = 0; i < ROWS; ++i) {
        if (r0 + i >= pc.rows) break;
        float w[8];
        weights_wide((r0 + i) * groups_per_row + g, w);
        for (uint e = 0; e < WIDE_ELEMS; ++e) acc[i] += w[e] * xs[e];
      }
    }
  } else {
    for (uint k = lane; k < K; k += gl_SubgroupSize) {
      const float xk = x[t * K + k];
      for (uint i = 0; i < ROWS; ++i)
        if (r0 + i < pc.rows) acc[i] += weight_at((r0 + i) * K + k) * xk;
    }
  }
#endif
  for (uint i = 0; i < ROWS; ++i) {
    const float s = subgroupAdd(acc[i]);
    if (subgroupElect() && r0 + i < pc.rows) y[t * M + pc.row_begin + r0 + i] = s;
  }
}
