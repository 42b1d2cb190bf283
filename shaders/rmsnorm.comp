#version 450
#extension GL_GOOGLE_include_directive : require
#define STEP_BINDING 3
#include "include/step.glsl"
// rmsnorm — y = x / sqrt(mean(x^2) + eps) * w, row by row. The weight holds
// (1 + w_hf): llama.cpp's GGUF convention, and what the safetensors loader
// writes. With ACCUMULATE the normalised row is added to `out` (Gemma's
// post-norms feed the residual stream: x += norm(f(x))).
// Also used per head for q_norm/k_norm (rows = tokens * heads, D = head_dim).
// With ROW_SET = 1 (the final norm) it normalises only the rows whose logits are
// wanted: input row logit_begin + i goes to output row i.
// Dispatch: (rows, 1, 1). `in` and `out` may be the same buffer.

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint D = 1;
layout(constant_id = 1) const float EPS = 1e-6;
layout(constant_id = 2) const uint ACCUMULATE = 0;
layout(constant_id = 3) const uint ROW_SET = 0;  // 0: every token row; 1: logit rows

layout(binding = 0) readonly buffer InBuf { float x[]; };
layout(binding = 1) readonly buffer WBuf { float w[]; };
layout(binding = 2) buffer OutBuf { float y[]; };
layout(push_constant) uniform Push { uint rows_per_token; } pc;

shared float partial[64];

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  if (row >= active_rows(ROW_SET) * pc.rows_per_token) return;
  const uint base = row * D;
  const uint in_base = (ROW_SET == 0 ? row : logit_begin + row) * D;
  float ss = 0.0;
  for (uint i = tid; i < D; i += 64) ss += x[in_base + i] * x[in_base + i];
  partial[tid] = ss;
  barrier();
  for (uint s = 32; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    barrier();
  }
  const float inv = inversesqrt(partial[0] / float(D) + EPS);
  for (uint i = tid; i < D; i += 64) {
    const float v = x[in_base + i] * inv * w[i];
    if (ACCUMULATE != 0) y[base + i] += v;
    else y[base + i] = v;
  }
}
