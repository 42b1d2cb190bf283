#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// matvec — y[t, r] = dot(W[r, :], x[t, :]) for a few token rows (decode, and the
// LM head). Each subgroup owns one output row at a time and reduces with
// subgroupAdd: no shared memory, no barriers, and a workgroup covers
// gl_NumSubgroups rows, so a 262144-row LM head is a few thousand workgroups.
// Dequantisation happens inside the dot product: weights are read once.
// Dispatch: (min(G, 65535), ceil(G / 65535), n_tokens) where
// G = ceil(rows / rows per workgroup), rows per workgroup = 128 / subgroup size.
#define WEIGHT_BINDING 0
#include "include/weights.glsl"
#define STEP_BINDING 3
#include "include/step.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint K = 32;  // row length (input features)
layout(constant_id = 1) const uint M = 1;   // output features of the whole tensor
layout(constant_id = 2) const uint ROW_SET = 0;  // 0: token rows; 1: logit rows (LM head)

layout(binding = 1) readonly buffer XBuf { float x[]; };   // [n, K]
layout(binding = 2) writeonly buffer YBuf { float y[]; };  // [n, M]
layout(push_constant) uniform Push { uint row_begin; uint rows; } pc;

void main() {
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint r = group * gl_NumSubgroups + gl_SubgroupID;
  const uint t = gl_WorkGroupID.z, lane = gl_SubgroupInvocationID;
  if (r >= pc.rows || t >= active_rows(ROW_SET)) return;  // whole subgroups exit together
  const uint xb = t * K;
  float acc = 0.0;
#if WEIGHT_BLOCK == 32
  const uint blocks = K / 32;
  for (uint b = lane; b < blocks; b += gl_SubgroupSize) {
    const uint blk = r * blocks + b;
    float s = 0.0;
    for (uint j = 0; j < 32; ++j) s += block_quant(blk, j) * x[xb + b * 32 + j];
    acc += s * block_scale(blk);
  }
#else
  for (uint i = lane; i < K; i += gl_SubgroupSize) acc += weight_at(r * K + i) * x[xb + i];
#endif
  acc = subgroupAdd(acc);
  if (subgroupElect()) y[t * M + pc.row_begin + r] = acc;
}
