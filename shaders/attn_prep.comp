#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// attn_prep — everything between the Q/K/V projections and attention, for one
// head per workgroup: RMS-normalise the head (q_norm / k_norm, weights hold
// 1 + w), rotate it (RoPE, NeoX/"rotate_half" pairs i and i + head_dim/2;
// angle = position / SCALE * THETA^(-2i/head_dim)), then write queries back in
// place and keys — with their values — into the layer's cache at slot
// position % SLOTS. One dispatch instead of five.
// Each token row has its own position and stream (step.glsl). The cache's rows
// are (stream, kv head) pairs, stream-major, split into parts; a part holds
// rows [head_begin, +heads). Workgroups y < HEADS are query heads (done by the
// dispatch of the first cache part only); the rest are the token's kv heads,
// and each writes only where its (stream, kv head) row lies in the bound part.
// Dispatch: (n_tokens, (head_begin == 0 ? HEADS : 0) + KVH, 1) per cache part.
#define STEP_BINDING 5
#include "include/step.glsl"

layout(local_size_x = 128) in;  // one thread per rotation pair: head_dim <= 256
layout(constant_id = 0) const uint HEADS = 1;
layout(constant_id = 1) const uint KVH = 1;
layout(constant_id = 2) const uint HD = 2;
layout(constant_id = 3) const uint SLOTS = 1;
layout(constant_id = 4) const float THETA = 10000.0;
layout(constant_id = 5) const float SCALE = 1.0;
layout(constant_id = 6) const float EPS = 1e-6;

#if defined(KV_F16)
#define KV_T float16_t
#else
#define KV_T float
#endif

layout(binding = 0) buffer QBuf { float q[]; };            // [n, HEADS * HD], in place
layout(binding = 1) readonly buffer KBuf { float k[]; };   // [n, KVH * HD]
layout(binding = 2) readonly buffer VBuf { float v[]; };   // [n, KVH * HD]
layout(binding = 3) writeonly buffer KCache { KV_T kc[]; };  // [rows in part][SLOTS][HD]
layout(binding = 4) writeonly buffer VCache { KV_T vc[]; };
layout(binding = 6) readonly buffer QNorm { float qw[]; };  // [HD]
layout(binding = 7) readonly buffer KNorm { float kw[]; };  // [HD]
layout(push_constant) uniform Push { uint head_begin; uint heads; } pc;

shared float partial[128];  // a sum per subgroup

// sin/cos of a large float32 angle: reduce by 2*pi first, since GPU sin/cos lose
// accuracy far from zero. Three-part Cody-Waite: C1 and C2 carry 8 significant
// bits each, so k * C1 and k * C2 are exact for k < 2^16 (angles below ~4e5,
// past Gemma 3's 128k context) and each subtraction is exact or nearly so,
// whether or not the driver fuses them. (A two-part split with fma() relied on
// a fused fma, which Vulkan does not guarantee: lavapipe computes it as a
// multiply and an add, and the angle 1e5 came out 1.4e-3 off; tests/kernel.)
void sincos_reduced(float a, out float s, out float c) {
  const float C1 = 6.28125;                // 2*pi, first 8 bits
  const float C2 = 0.00193023681640625;    // next 8 bits
  const float C3 = 5.0703634e-06;          // 2*pi - C1 - C2, to float32
  const float k = round(a * 0.159154943091895336);
  precise float r = a - k * C1;
  r = r - k * C2;
  r = r - k * C3;
  s = sin(r);
  c = cos(r);
}

void main() {
  const uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, half_hd = HD / 2;
  if (t >= n_tokens) return;
  const uint q_groups = pc.head_begin == 0 ? HEADS : 0;
  const bool is_q = gl_WorkGroupID.y < q_groups;
  const uint h = is_q ? gl_WorkGroupID.y : gl_WorkGroupID.y - q_groups;  // q head, or kv head
  const uint cache_row = step_rows[t].stream * KVH + h;  // for a kv head
  if (!is_q && (cache_row < pc.head_begin || cache_row >= pc.head_begin + pc.heads)) return;
  const uint src = is_q ? t * HEADS * HD + h * HD : t * KVH * HD + h * HD;

  float a = 0.0, b = 0.0;
  if (tid < half_hd) {
    a = is_q ? q[src + tid] : k[src + tid];
    b = is_q ? q[src + tid + half_hd] : k[src + tid + half_hd];
  }
  // The head's sum of squares: per subgroup, then over the subgroups (one
  // barrier, where a tree over the workgroup took seven).
  const float sq = subgroupAdd(a * a + b * b);
  if (subgroupElect()) partial[gl_SubgroupID] = sq;
  barrier();
  if (tid >= half_hd) return;
  float sum = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) sum += partial[i];
  const float inv = inversesqrt(sum / float(HD) + EPS);
  a *= inv * (is_q ? qw[tid] : kw[tid]);
  b *= inv * (is_q ? qw[tid + half_hd] : kw[tid + half_hd]);

  const uint pos = step_rows[t].pos;
  const float inv_freq = 1.0 / pow(THETA, float(2 * tid) / float(HD));
  float sn, cs;
  sincos_reduced(float(pos) / SCALE * inv_freq, sn, cs);
  const float ra = a * cs - b * sn, rb = b * cs + a * sn;
  if (is_q) {
    q[src + tid] = ra;
    q[src + tid + half_hd] = rb;
  } else {
    const uint dst = ((cache_row - pc.head_begin) * SLOTS + pos % SLOTS) * HD;
    kc[dst + tid] = KV_T(ra);
    kc[dst + tid + half_hd] = KV_T(rb);
    vc[dst + tid] = KV_T(v[src + tid]);
    vc[dst + tid + half_hd] = KV_T(v[src + tid + half_hd]);
  }
}
