#version 450
#extension GL_GOOGLE_include_directive : require
#define STEP_BINDING 2
#include "include/step.glsl"
// argmax — the greedy token of each logits row; ties go to the lowest id
// (as torch.argmax). Only this id comes back to the host per step.
// Dispatch: (logit rows, 1, 1); rows past logit_count exit.
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint V = 1;

layout(binding = 0) readonly buffer LogitsBuf { float logits[]; };  // [rows, V]
layout(binding = 1) writeonly buffer OutBuf { uint best[]; };      // [rows]

shared float top_value[256];
shared uint top_index[256];

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  if (row >= logit_count) return;
  float bv = -1.0 / 0.0;
  uint bi = 0xffffffffu;
  for (uint i = tid; i < V; i += 256) {
    const float v = logits[row * V + i];
    if (v > bv) { bv = v; bi = i; }  // strided scan keeps the first maximum
  }
  top_value[tid] = bv;
  top_index[tid] = bi;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (tid < s) {
      const float ov = top_value[tid + s];
      const uint oi = top_index[tid + s];
      if (ov > top_value[tid] || (ov == top_value[tid] && oi < top_index[tid])) {
        top_value[tid] = ov;
        top_index[tid] = oi;
      }
    }
    barrier();
  }
  if (tid == 0) best[row] = top_index[0];
}
