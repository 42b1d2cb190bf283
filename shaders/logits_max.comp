#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// logits_max — the first step of choosing a token, spread over many
// workgroups: apply the logit biases (OpenAI's: added; -100 or less bans the
// token), then the penalties, then the stream's allowed-token mask (a grammar's:
// structured output) to the tokens in this workgroup's
// slice of the row (repetition as CTRL/llama.cpp: positive logits divided,
// negative multiplied; then OpenAI's frequency penalty per occurrence and
// presence penalty once), then write the slice's largest logit and its lowest
// index. shaders/sample.comp finishes from these partial results, so greedy
// decoding never has one workgroup scan a 262144-entry row.
// Dispatch: (PARTS, logit rows, 1); rows past logit_count exit.
#define STEP_BINDING 3
#include "include/step.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint VOCAB = 1;
layout(constant_id = 1) const uint PARTS = 1;  // workgroups per row
const uint SLICE = (VOCAB + PARTS - 1) / PARTS;

layout(binding = 0) buffer LogitsBuf { float logits[]; };  // [rows, VOCAB]
layout(binding = 1) writeonly buffer Partials { vec2 partials[]; };  // [rows, PARTS]: (max, index bits)
// [streams, MASK_WORDS]: bit i % 32 of word i / 32 set = token i may be chosen
// (read for rows whose SamplerRow.masked is 1; the host writes the row's stream's).
layout(binding = 4) readonly buffer Masks { uint allowed[]; };
const uint MASK_WORDS = (VOCAB + 31) / 32;
#define SAMPLER_BINDING 2
#include "include/sampler.glsl"

shared float best_v[256];
shared uint best_i[256];

void main() {
  const uint part = gl_WorkGroupID.x, row = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  if (row >= logit_count) return;
  const uint base = row * VOCAB, lo = part * SLICE, hi = min(VOCAB, lo + SLICE);
  const float repeat_penalty = sampling[row].repeat_penalty;
  const float presence = sampling[row].presence_penalty, frequency = sampling[row].frequency_penalty;
  const uint bias_len = sampling[row].bias_len;
  if (bias_len > 0) {
    for (uint b = tid; b < bias_len; b += 256) {
      const uint id = sampling[row].bias_id[b];
      if (id >= lo && id < hi) {
        const float v = sampling[row].bias[b];
        logits[base + id] = v <= -100.0 ? -1.0 / 0.0 : logits[base + id] + v;
      }
    }
    memoryBarrierBuffer();
    barrier();  // a biased token may be in the history too: another thread penalises it next
  }
  if (repeat_penalty != 1.0 || presence != 0.0 || frequency != 0.0) {
    for (uint h = tid; h < sampling[row].history_len; h += 256) {
      const uint id = sampling[row].history[h];
      if (id >= lo && id < hi) {
        float l = logits[base + id];
        if (repeat_penalty != 1.0) l = l > 0.0 ? l / repeat_penalty : l * repeat_penalty;
        l -= frequency * float(sampling[row].history_count[h]) + presence;
        logits[base + id] = l;
      }
    }
    memoryBarrierBuffer();
    barrier();
  }
  float bv = -1.0 / 0.0;
  uint bi = 0xffffffffu;
  if (sampling[row].masked != 0) {  // banned tokens become -inf for sample.comp and logprobs.comp too
    const uint mask = step_rows[step_rows[row].logit_source].stream * MASK_WORDS;
    for (uint i = lo + tid; i < hi; i += 256) {
      float l = logits[base + i];
      if ((allowed[mask + i / 32] & (1u << (i % 32))) == 0) {
        l = -1.0 / 0.0;
        logits[base + i] = l;
      }
      if (l > bv) { bv = l; bi = i; }
    }
  } else {
    for (uint i = lo + tid; i < hi; i += 256) {
      const float l = logits[base + i];
      if (l > bv) { bv = l; bi = i; }  // strided scan keeps each thread's first maximum
    }
  }
  best_v[tid] = bv;
  best_i[tid] = bi;
  barrier();
  for (uint s = 128; s > 0; s >>= 1) {
    if (tid < s) {
      const float ov = best_v[tid + s];
      const uint oi = best_i[tid + s];
      if (ov > best_v[tid] || (ov == best_v[tid] && oi < best_i[tid])) { best_v[tid] = ov; best_i[tid] = oi; }
    }
    barrier();
  }
  if (tid == 0) partials[row * PARTS + part] = vec2(best_v[0], uintBitsToFloat(best_i[0]));
}
