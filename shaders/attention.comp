#version 450
#extension GL_GOOGLE_include_directive : require
// attention — causal softmax attention of one query head over the cache, with
// grouped-query heads and, on local layers, a sliding window. Token t at
// position p attends to positions (p - WINDOW, p] on local layers, [0, p] on
// global ones — Hugging Face's Gemma 3 masks. Keys are visited in tiles of 64
// with an online softmax, so any context length works in fixed shared memory.
// One workgroup per (token, query head) of the kv heads in the bound part.
// Dispatch: (n_tokens, heads_in_part * HEADS / KVH, 1).
#extension GL_EXT_shader_16bit_storage : require
#define STEP_BINDING 4
#include "include/step.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint HEADS = 1;
layout(constant_id = 1) const uint KVH = 1;
layout(constant_id = 2) const uint HD = 64;      // <= 256
layout(constant_id = 3) const uint SLOTS = 1;
layout(constant_id = 4) const uint WINDOW = 0;   // 0: global layer
layout(constant_id = 5) const float SCALE = 1.0; // query_pre_attn_scalar^-0.5

#if defined(KV_F16)
#define KV_T float16_t
#else
#define KV_T float
#endif

layout(binding = 0) readonly buffer QBuf { float q[]; };     // [n, HEADS * HD]
layout(binding = 1) readonly buffer KCache { KV_T kc[]; };   // [heads in part][SLOTS][HD]
layout(binding = 2) readonly buffer VCache { KV_T vc[]; };
layout(binding = 3) writeonly buffer OBuf { float o[]; };    // [n, HEADS * HD]
layout(push_constant) uniform Push { uint head_begin; uint heads; } pc;

const uint TILE = 64;
const uint PER_THREAD = (HD + 63) / 64;
shared float qs[HD];
shared float score[TILE];

void main() {
  const uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  const uint group = HEADS / KVH;
  const uint kvh_local = gl_WorkGroupID.y / group;           // kv head within the part
  const uint head = (pc.head_begin + kvh_local) * group + gl_WorkGroupID.y % group;
  if (t >= n_tokens) return;
  const uint p = start_pos + t;
  const uint lo = (WINDOW != 0 && p + 1 > WINDOW) ? p + 1 - WINDOW : 0;
  const uint qb = t * HEADS * HD + head * HD;
  for (uint d = tid; d < HD; d += 64) qs[d] = q[qb + d] * SCALE;
  barrier();

  float m = -1.0 / 0.0, l = 0.0;
  float acc[PER_THREAD];
  for (uint i = 0; i < PER_THREAD; ++i) acc[i] = 0.0;
  const uint cache_base = kvh_local * SLOTS * HD;

  for (uint j0 = lo; j0 <= p; j0 += TILE) {
    const uint j = j0 + tid;
    float s = -1.0 / 0.0;
    if (j <= p) {
      const uint kb = cache_base + (j % SLOTS) * HD;
      s = 0.0;
      for (uint d = 0; d < HD; ++d) s += qs[d] * float(kc[kb + d]);
    }
    score[tid] = s;
    barrier();
    float tile_max = -1.0 / 0.0;
    const uint count = min(TILE, p + 1 - j0);
    for (uint i = 0; i < count; ++i) tile_max = max(tile_max, score[i]);
    const float m_new = max(m, tile_max);
    const float correction = exp(m - m_new);  // 0 on the first tile (m = -inf)
    barrier();
    score[tid] = tid < count ? exp(s - m_new) : 0.0;
    barrier();
    float tile_sum = 0.0;
    for (uint i = 0; i < count; ++i) tile_sum += score[i];
    l = l * correction + tile_sum;
    for (uint a = 0; a < PER_THREAD; ++a) {
      const uint d = tid + a * 64;
      if (d >= HD) break;
      float sum = 0.0;
      for (uint i = 0; i < count; ++i)
        sum += score[i] * float(vc[cache_base + ((j0 + i) % SLOTS) * HD + d]);
      acc[a] = acc[a] * correction + sum;
    }
    m = m_new;
    barrier();
  }
  for (uint a = 0; a < PER_THREAD; ++a) {
    const uint d = tid + a * 64;
    if (d < HD) o[qb + d] = acc[a] / l;
  }
}
