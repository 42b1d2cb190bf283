#version 450
#extension GL_GOOGLE_include_directive : require
// matmul — Y[t, r] = dot(W[r, :], X[t, :]) for a chunk of tokens (prefill).
// A workgroup computes a 64-row x 64-token tile; each of its 256 threads a
// 4 x 4 block of it, so every value read from shared memory feeds 4 products.
// IN_FEATURES is walked 32 at a time (one quant block): the weight tile is dequantised
// once into shared memory and reused by 64 tokens.
// Dispatch: (ceil(part rows / 64), ceil(n / 64), 1).
layout(local_size_x = 16, local_size_y = 16) in;
layout(constant_id = 0) const uint IN_FEATURES = 32;
layout(constant_id = 1) const uint OUT_FEATURES = 1;
layout(constant_id = 2) const uint ROW_SET = 0;  // 0: token rows; 1: logit rows (LM head)
layout(push_constant) uniform Push { uint row_begin; uint rows; } pc;

#define WEIGHT_BINDING 0
#define WEIGHT_PART_BLOCKS (pc.rows * (IN_FEATURES / 32u))
#include "include/weights.glsl"
#define STEP_BINDING 3
#include "include/step.glsl"

layout(binding = 1) readonly buffer XBuf { float x[]; };   // [n, IN_FEATURES]
layout(binding = 2) writeonly buffer YBuf { float y[]; };  // [n, OUT_FEATURES]

const uint TILE = 64, STEP = 32;
shared float ws[TILE][STEP + 1];  // weights [row][k], padded against bank conflicts
shared float xs[TILE][STEP + 1];  // inputs  [token][k]

void main() {
  const uint n = active_rows(ROW_SET);
  const uint row0 = gl_WorkGroupID.x * TILE, tok0 = gl_WorkGroupID.y * TILE;
  if (tok0 >= n) return;  // whole tile past the chunk: uniform exit
  const uint tr = gl_LocalInvocationID.x, tt = gl_LocalInvocationID.y;  // 4x4 block: rows 4tr.., tokens 4tt..
  const uint lin = tt * 16 + tr;
  float acc[4][4];
  for (uint i = 0; i < 4; ++i)
    for (uint j = 0; j < 4; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0; k0 < IN_FEATURES; k0 += STEP) {
    // 64 x 32 of each tile, 8 elements per thread: thread -> (row = lin / 4, 8 columns).
    const uint lr = lin / 4, lc = (lin % 4) * 8;
    const uint gr = row0 + lr, gt = tok0 + lr;
    for (uint e = 0; e < 8; ++e) {
      const uint gk = k0 + lc + e;
      ws[lr][lc + e] = (gr < pc.rows && gk < IN_FEATURES) ? weight_at(gr * IN_FEATURES + gk) : 0.0;
      xs[lr][lc + e] = (gt < n && gk < IN_FEATURES) ? x[gt * IN_FEATURES + gk] : 0.0;
    }
    barrier();
    for (uint j = 0; j < STEP; ++j) {
      float a[4], b[4];
      for (uint i = 0; i < 4; ++i) {
        a[i] = ws[tr * 4 + i][j];
        b[i] = xs[tt * 4 + i][j];
      }
      for (uint i = 0; i < 4; ++i)
        for (uint q = 0; q < 4; ++q) acc[i][q] += a[i] * b[q];
    }
    barrier();
  }
  for (uint i = 0; i < 4; ++i) {
    const uint r = row0 + tr * 4 + i;
    if (r >= pc.rows) continue;
    for (uint q = 0; q < 4; ++q) {
      const uint t = tok0 + tt * 4 + q;
      if (t < n) y[t * OUT_FEATURES + pc.row_begin + r] = acc[i][q];
    }
  }
}
