#version 450
#extension GL_GOOGLE_include_directive : require
// matmul — Y[t, r] = dot(W[r, :], X[t, :]) for a chunk of tokens (prefill):
// 16 weight rows x 16 tokens per workgroup, K walked in steps of 32 through
// shared memory, weights dequantised once per tile and reused by 16 tokens.
// Dispatch: (ceil(part rows / 16), ceil(n / 16), 1).
#define WEIGHT_BINDING 0
#include "include/weights.glsl"
#define STEP_BINDING 3
#include "include/step.glsl"

layout(local_size_x = 16, local_size_y = 16) in;
layout(constant_id = 0) const uint K = 32;
layout(constant_id = 1) const uint M = 1;
layout(constant_id = 2) const uint ROW_SET = 0;  // 0: token rows; 1: logit rows (LM head)

layout(binding = 1) readonly buffer XBuf { float x[]; };   // [n, K]
layout(binding = 2) writeonly buffer YBuf { float y[]; };  // [n, M]
layout(push_constant) uniform Push { uint row_begin; uint rows; } pc;

shared float ws[16][33];
shared float xs[16][33];

void main() {
  const uint lr = gl_LocalInvocationID.x, lt = gl_LocalInvocationID.y;  // row, token in tile
  const uint r = gl_WorkGroupID.x * 16 + lr, t = gl_WorkGroupID.y * 16 + lt;
  const uint n = active_rows(ROW_SET);
  if (gl_WorkGroupID.y * 16 >= n) return;  // whole tile past the chunk: uniform exit
  const uint lin = lt * 16 + lr;  // 0..255: two loads each of a 16x32 tile
  float acc = 0.0;
  for (uint k0 = 0; k0 < K; k0 += 32) {
    for (uint e = lin; e < 512; e += 256) {
      const uint row = e / 32, col = e % 32;
      const uint gr = gl_WorkGroupID.x * 16 + row, gk = k0 + col;
      ws[row][col] = (gr < pc.rows && gk < K) ? weight_at(gr * K + gk) : 0.0;
      const uint gt = gl_WorkGroupID.y * 16 + row;
      xs[row][col] = (gt < n && gk < K) ? x[gt * K + gk] : 0.0;
    }
    barrier();
    for (uint j = 0; j < 32; ++j) acc += ws[lr][j] * xs[lt][j];
    barrier();
  }
  if (r < pc.rows && t < n) y[t * M + pc.row_begin + r] = acc;
}
