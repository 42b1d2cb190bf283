#version 450
#extension GL_GOOGLE_include_directive : require
// matvec — y[t, r] = dot(W[r, :], x[t, :]) for one token row t (decode). One
// workgroup per output row of the bound weight part; the dequantisation happens
// inside the dot product, so quantized weights are read once, never expanded.
// Dispatch: (min(rows, 65535), ceil(rows / 65535), n_tokens): rows may exceed
// the 65535 workgroups a grid dimension is guaranteed (the LM head has 262144).
#define WEIGHT_BINDING 0
#include "include/weights.glsl"
#define STEP_BINDING 3
#include "include/step.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint K = 32;  // row length (input features)
layout(constant_id = 1) const uint M = 1;
layout(constant_id = 2) const uint ROW_SET = 0;  // 0: token rows; 1: logit rows (LM head)   // output features of the whole tensor

layout(binding = 1) readonly buffer XBuf { float x[]; };   // [n, K]
layout(binding = 2) writeonly buffer YBuf { float y[]; };  // [n, M]
layout(push_constant) uniform Push { uint row_begin; uint rows; } pc;

shared float partial[64];

void main() {
  const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint t = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
  if (r >= pc.rows || t >= active_rows(ROW_SET)) return;
  const uint xb = t * K;
  float acc = 0.0;
#if WEIGHT_BLOCK == 32
  const uint blocks = K / 32;
  for (uint b = tid; b < blocks; b += 64) {
    const uint blk = r * blocks + b;
    float s = 0.0;
    for (uint j = 0; j < 32; ++j) s += block_quant(blk, j) * x[xb + b * 32 + j];
    acc += s * block_scale(blk);
  }
#else
  for (uint i = tid; i < K; i += 64) acc += weight_at(r * K + i) * x[xb + i];
#endif
  partial[tid] = acc;
  barrier();
  for (uint s = 32; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    barrier();
  }
  if (tid == 0) y[t * M + pc.row_begin + r] = partial[0];
}
