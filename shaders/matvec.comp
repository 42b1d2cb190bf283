#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// matvec — y[t, r] = dot(W[r, :], x[t, :]) for a few token rows (decode, and the
// LM head). Each subgroup owns ROWS output rows; its lanes walk the row in
// 32-element blocks, load that slice of x once (eight 16-byte loads) and use
// it for all ROWS rows, dequantising inside the dot product so weights are
// read once. Reduction is subgroupAdd: no shared memory, no barriers.
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
  const uint blocks = K / 32;  // K is a multiple of 32, so x rows are 16-byte aligned
  for (uint b = lane; b < blocks; b += gl_SubgroupSize) {
    vec4 xv[8];
    float xsum = 0.0;
    for (uint i = 0; i < 8; ++i) {
      xv[i] = x4[(t * K + b * 32) / 4 + i];
      xsum += xv[i].x + xv[i].y + xv[i].z + xv[i].w;
    }
    for (uint i = 0; i < ROWS; ++i)
      if (r0 + i < pc.rows) acc[i] += block_dot((r0 + i) * blocks + b, xv, xsum);
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
