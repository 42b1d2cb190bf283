#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// rmsnorm — y = x / sqrt(mean(x^2) + eps) * w, one workgroup per row. The
// weight holds (1 + w_hf): llama.cpp's GGUF convention, and what the
// safetensors loader writes.
//   ACCUMULATE: the normalised row is added to `out` (Gemma's post-norms feed
//     the residual stream: x += norm(f(x))).
//   CHAIN: then the updated residual row is normalised again with w2 into out2
//     — the next sub-layer's pre-norm — so "x += norm(y); xn = norm(x)" is one
//     dispatch instead of two.
//   ROW_SET = 1 (the final norm): only the rows whose logits are wanted; input
//     row step_rows[i].logit_source goes to output row i.
//   HALF_OUT: the normalised output (y, or y2 with CHAIN) is written as the
//     fp16 operand of the prefill products (include/operand.glsl); a residual
//     y (ACCUMULATE without CHAIN) stays fp32.
//   WAIT (one row, a decode step's post-norm): dispatched right after the
//     product that writes `in`, with no barrier between them, it waits until
//     that product's workgroups have all counted themselves in
//     counters[pc.counter] (matvec.comp's SIGNAL: pc.count of them), then
//     sets the counter back to 0. The GPU then neither drains nor refills
//     between the product and its norm: on the H100 a barrier between
//     dependent dispatches costs about as much as this whole kernel.
// Each thread keeps its elements in registers between the passes.
// Dispatch: (rows, 1, 1). `in` and `out` may be the same buffer.
#define STEP_BINDING 3
#include "include/step.glsl"

layout(local_size_x_id = 9) in;  // THREADS: kernels::rmsnorm_threads
layout(constant_id = 0) const uint DIM = 1;
layout(constant_id = 1) const float EPS = 1e-6;
layout(constant_id = 2) const uint ACCUMULATE = 0;
layout(constant_id = 3) const uint ROW_SET = 0;  // 0: every token row; 1: logit rows
layout(constant_id = 4) const uint CHAIN = 0;
layout(constant_id = 5) const uint HALF_OUT = 0;
layout(constant_id = 6) const uint SLICES = 1;
layout(constant_id = 7) const uint SLICE = 0;
layout(constant_id = 8) const uint WAIT = 0;
layout(constant_id = 9) const uint THREADS = 256;  // at most 64 subgroups (`partial`)
#include "include/operand.glsl"

layout(binding = 0) readonly buffer InBuf { float x[]; };
layout(binding = 0) coherent readonly buffer InBufC { float xc[]; };  // WAIT: written as this runs
layout(binding = 6) coherent buffer Counters { uint counters[]; };     // WAIT
layout(binding = 1) readonly buffer WBuf { float w[]; };
layout(binding = 2) buffer OutBuf { float y[]; };
layout(binding = 4) readonly buffer W2Buf { float w2[]; };
layout(binding = 5) writeonly buffer Out2Buf { float y2[]; };
layout(binding = 2) writeonly buffer OutBufH { float16_t yh[]; };    // HALF_OUT, CHAIN = 0
layout(binding = 5) writeonly buffer Out2BufH { float16_t y2h[]; };  // HALF_OUT, CHAIN = 1
layout(push_constant) uniform Push { uint rows_per_token; uint counter; uint count; } pc;

const uint PER = (DIM + THREADS - 1) / THREADS;  // elements per thread
shared float partial[64];

float row_sum(float v) {
  v = subgroupAdd(v);
  if (subgroupElect()) partial[gl_SubgroupID] = v;
  barrier();
  float s = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) s += partial[i];
  barrier();
  return s;
}

float input_at(uint i) { return WAIT != 0 ? xc[i] : x[i]; }

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  if (WAIT != 0) {  // the one row's workgroup (the host dispatches one)
    if (tid == 0) {
      while (atomicAdd(counters[pc.counter], 0u) < pc.count) {
      }
      atomicExchange(counters[pc.counter], 0u);
      memoryBarrierBuffer();  // the product's outputs, after its count
    }
    barrier();
  }
  if (row >= active_rows(ROW_SET) * pc.rows_per_token) return;
  const uint base = row * DIM;
  const uint in_base = (ROW_SET == 0 ? row : step_rows[row].logit_source) * DIM;
  // Every load is issued before the first reduction, so the dispatch waits on
  // memory once rather than once per pass (a dependent DRAM round trip costs
  // more than this whole row's arithmetic).
  float v[PER], wv[PER], yv[PER], w2v[PER];
  float ss = 0.0;
  for (uint e = 0; e < PER; ++e) {
    const uint i = tid + e * THREADS;
    const bool in_row = i < DIM;
    v[e] = in_row ? input_at(in_base + i) : 0.0;
    for (uint s = 1; s < SLICES; ++s) v[e] += in_row ? input_at(s * SLICE + in_base + i) : 0.0;
    wv[e] = in_row ? w[i] : 0.0;
    yv[e] = ACCUMULATE != 0 && in_row ? y[base + i] : 0.0;
    w2v[e] = CHAIN != 0 && in_row ? w2[i] : 0.0;
  }
  for (uint e = 0; e < PER; ++e) ss += v[e] * v[e];
  const float inv = inversesqrt(row_sum(ss) / float(DIM) + EPS);
  float ss2 = 0.0;
  for (uint e = 0; e < PER; ++e) {
    const uint i = tid + e * THREADS;
    if (i >= DIM) break;
    const float r = v[e] * inv * wv[e] + yv[e];
    if (HALF_OUT != 0 && CHAIN == 0)
      yh[base + i] = OPERAND_FP16(r);
    else
      y[base + i] = r;
    v[e] = r;
    ss2 += r * r;
  }
  if (CHAIN == 0) return;
  const float inv2 = inversesqrt(row_sum(ss2) / float(DIM) + EPS);
  for (uint e = 0; e < PER; ++e) {
    const uint i = tid + e * THREADS;
    if (i >= DIM) break;
    if (HALF_OUT != 0)
      y2h[base + i] = OPERAND_FP16(v[e] * inv2 * w2v[e]);
    else
      y2[base + i] = v[e] * inv2 * w2v[e];
  }
}
