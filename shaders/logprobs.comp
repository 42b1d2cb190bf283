#version 450
#extension GL_GOOGLE_include_directive : require
// logprobs — the log-probabilities a client asked for (OpenAI's logprobs and
// top_logprobs), for the rows whose sampler row asks (SamplerRow.logprobs:
// 0 none, else 1 + the alternatives wanted); the others exit at once. Of the
// row as logits_max left it (biases and penalties applied, before the
// temperature): the chosen token's log-probability (or a given token's:
// SamplerRow.target, when a text is scored), then the most likely
// tokens, largest first (ties: the lower id first). Only those few numbers
// go back to the host, never the row. The alternatives' threshold is the
// k-th largest logit, by radix selection over the order-preserving integer
// image of the floats, as sample.comp's top-k.
// Dispatch: (logit rows, 1, 1), after sample; rows past logit_count exit.
#define STEP_BINDING 3
#include "include/step.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint VOCAB = 1;
layout(constant_id = 1) const uint PARTS = 1;  // logits_max workgroups per row
const uint THREADS = 256;
const uint SPAN = (VOCAB + THREADS - 1) / THREADS;  // contiguous logits per thread
const uint MAX_TOP = 20;  // kMaxTopLogprobs (unicorn/config/sampling.hpp)
const uint ROW = 2 + 2 * MAX_TOP;  // kLogprobRowFloats (engine/step.hpp)

layout(binding = 0) readonly buffer LogitsBuf { float logits[]; };  // [rows, VOCAB], penalised
layout(binding = 1) readonly buffer Partials { vec2 partials[]; };  // [rows, PARTS]: (max, index bits)
layout(binding = 4) readonly buffer Chosen { uint chosen[]; };      // [rows]: sample's choice
// [rows, ROW]: the chosen token's log-probability, how many alternatives
// follow, then (id bits, log-probability) per alternative.
layout(binding = 5) writeonly buffer OutBuf { float out_row[]; };
#define SAMPLER_BINDING 2
#include "include/sampler.glsl"

shared float red_f[THREADS];
shared uint red_u[THREADS];
// The logits at or above the alternatives' threshold, in index order (up to
// 64: more are ties at the threshold, and the lowest ids of them are kept).
const uint MAX_CANDIDATES = 64;
shared uint cand_id[MAX_CANDIDATES];
shared float cand_l[MAX_CANDIDATES];
shared uint at_or_above;

uint order_key(float f) {  // monotonic: a larger float, a larger uint
  const uint b = floatBitsToUint(f);
  return (b & 0x80000000u) != 0 ? ~b : b | 0x80000000u;
}

float max_all(float v) {
  red_f[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = THREADS / 2; s > 0; s >>= 1) {
    if (gl_LocalInvocationID.x < s)
      red_f[gl_LocalInvocationID.x] = max(red_f[gl_LocalInvocationID.x], red_f[gl_LocalInvocationID.x + s]);
    barrier();
  }
  const float r = red_f[0];
  barrier();
  return r;
}
float sum_all(float v) {
  red_f[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = THREADS / 2; s > 0; s >>= 1) {
    if (gl_LocalInvocationID.x < s) red_f[gl_LocalInvocationID.x] += red_f[gl_LocalInvocationID.x + s];
    barrier();
  }
  const float r = red_f[0];
  barrier();
  return r;
}

// The k-th largest key of the row: a byte per pass, from a histogram of the
// keys that share the bytes chosen so far.
uint kth_key(uint base, uint lo, uint hi, uint k) {
  uint prefix = 0u, prefix_mask = 0u, want = k;
  const uint tid = gl_LocalInvocationID.x;
  for (int shift = 24; shift >= 0; shift -= 8) {
    red_u[tid] = 0u;
    barrier();
    for (uint i = lo; i < hi; ++i) {
      const uint key = order_key(logits[base + i]);
      if ((key & prefix_mask) == prefix) atomicAdd(red_u[(key >> uint(shift)) & 255u], 1u);
    }
    barrier();
    if (tid == 0) {  // from the top byte value down, until `want` keys are at or above it
      uint above = 0u, b = 255u;
      while (above + red_u[b] < want) above += red_u[b--];
      red_u[0] = b;
      red_u[1] = above;
    }
    barrier();
    prefix |= red_u[0] << uint(shift);
    prefix_mask |= 255u << uint(shift);
    want -= red_u[1];
    barrier();
  }
  return prefix;
}

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  if (row >= logit_count) return;
  const uint asked = sampling[row].logprobs;
  if (asked == 0u) return;
  const uint top = min(asked - 1u, MAX_TOP);
  const uint base = row * VOCAB, lo = min(tid * SPAN, VOCAB), hi = min(VOCAB, lo + SPAN);

  // log Z = m + log(sum exp(l - m)), with m the row's largest logit.
  float m = -1.0 / 0.0;
  for (uint p = tid; p < PARTS; p += THREADS) m = max(m, partials[row * PARTS + p].x);
  m = max_all(m);
  float mass = 0.0;
  for (uint i = lo; i < hi; ++i) mass += exp(logits[base + i] - m);
  const float log_z = m + log(sum_all(mass));

  if (top > 0u) {
    const uint cut = kth_key(base, lo, hi, top);
    // Each thread's count at or above the cut, then its start in index order.
    uint n = 0u;
    for (uint i = lo; i < hi; ++i) n += order_key(logits[base + i]) >= cut ? 1u : 0u;
    red_u[tid] = n;
    barrier();
    if (tid == 0) {
      uint run = 0u;
      for (uint t = 0; t < THREADS; ++t) { const uint c = red_u[t]; red_u[t] = run; run += c; }
      at_or_above = run;
    }
    barrier();
    uint at = red_u[tid];
    for (uint i = lo; i < hi && at < MAX_CANDIDATES; ++i) {
      const float l = logits[base + i];
      if (order_key(l) < cut) continue;
      cand_id[at] = i;
      cand_l[at] = l;
      ++at;
    }
    barrier();
    if (tid == 0) {
      const uint found = min(at_or_above, MAX_CANDIDATES);
      // Largest first, the lower id first among equals: `top` rounds of selection.
      for (uint j = 0; j < top; ++j) {
        uint best = j;
        for (uint c = j + 1; c < found; ++c)
          if (cand_l[c] > cand_l[best] || (cand_l[c] == cand_l[best] && cand_id[c] < cand_id[best])) best = c;
        const uint id = cand_id[best];
        const float l = cand_l[best];
        cand_id[best] = cand_id[j];
        cand_l[best] = cand_l[j];
        cand_id[j] = id;
        cand_l[j] = l;
        out_row[row * ROW + 2 + 2 * j] = uintBitsToFloat(id);
        out_row[row * ROW + 3 + 2 * j] = l - log_z;
      }
    }
  }
  if (tid == 0) {
    // The token scored (teacher forcing), else the one chosen (none, for
    // NaN logits: the engine refuses the step).
    const uint c = sampling[row].target != 0xffffffffu ? sampling[row].target : chosen[row];
    out_row[row * ROW] = c < VOCAB ? logits[base + c] - log_z : 0.0 / 0.0;
    out_row[row * ROW + 1] = uintBitsToFloat(top);
  }
}
