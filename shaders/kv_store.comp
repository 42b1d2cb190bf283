#version 450
#extension GL_GOOGLE_include_directive : require
// kv_store — append this chunk's keys and values to the cache of one layer.
// Cache layout per layer: [kv_head][slot][head_dim]; position p lives in slot
// p % SLOTS (global layers: SLOTS = context; local layers: a ring of
// window + prefill chunk). The bound cache part holds heads
// [head_begin, head_begin + heads) of the layer (split when larger than a binding).
// Dispatch: (ceil(heads_in_part * HD / 64), n_tokens, 1).
#extension GL_EXT_shader_16bit_storage : require
#define STEP_BINDING 4
#include "include/step.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint KVH = 1;   // kv heads of the layer
layout(constant_id = 1) const uint HD = 1;
layout(constant_id = 2) const uint SLOTS = 1;

#if defined(KV_F16)
#define KV_T float16_t
#else
#define KV_T float
#endif

layout(binding = 0) readonly buffer KBuf { float k[]; };  // [n, KVH * HD]
layout(binding = 1) readonly buffer VBuf { float v[]; };  // [n, KVH * HD]
layout(binding = 2) writeonly buffer KCache { KV_T kc[]; };
layout(binding = 3) writeonly buffer VCache { KV_T vc[]; };
layout(push_constant) uniform Push { uint head_begin; uint heads; } pc;

void main() {
  const uint e = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (e >= pc.heads * HD || t >= n_tokens) return;
  const uint h = e / HD, d = e % HD;
  const uint slot = (start_pos + t) % SLOTS;
  const uint src = t * KVH * HD + (pc.head_begin + h) * HD + d;
  const uint dst = (h * SLOTS + slot) * HD + d;
  kc[dst] = KV_T(k[src]);
  vc[dst] = KV_T(v[src]);
}
