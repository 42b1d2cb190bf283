#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// attn_prep — everything between the Q/K/V projections and attention, for
// HEADS_PER_GROUP heads of one token per workgroup, 128 / HEADS_PER_GROUP
// threads a head, each thread one or a few rotation pairs: RMS-normalise the head (q_norm / k_norm, weights hold
// 1 + w), rotate it (RoPE, NeoX/"rotate_half" pairs i and i + head_dim/2;
// angle = position / SCALE * THETA^(-2i/head_dim)), then write queries back in
// place and keys — with their values — into the layer's cache at slot
// position % SLOTS. One dispatch instead of five. Prefill chunks run it;
// decode passes do the same work inside attention (attention.comp's PREP,
// with the same rotation from include/rope.glsl), unless
// Tuning::decode_attention_prep says otherwise.
// Each token row has its own position and stream (step.glsl). The cache's rows
// are (stream, kv head) pairs, stream-major, split into parts; a part holds
// rows [head_begin, +heads). Workgroups y < HEADS are query heads (done by the
// dispatch of the first cache part only); the rest are the token's kv heads,
// and each writes only where its (stream, kv head) row lies in the bound part.
// Dispatch: (n_tokens, ceil(((head_begin == 0 ? HEADS : 0) + KV_HEADS) / HEADS_PER_GROUP),
// 1) per cache part (kernels::attn_prep_groups).
#define STEP_BINDING 5
#include "include/step.glsl"

layout(local_size_x = 128) in;  // HEADS_PER_GROUP heads of 32 threads
layout(constant_id = 0) const uint HEADS = 1;
layout(constant_id = 1) const uint KV_HEADS = 1;
layout(constant_id = 2) const uint HEAD_DIM = 2;
layout(constant_id = 3) const uint SLOTS = 1;
layout(constant_id = 4) const float THETA = 10000.0;
layout(constant_id = 5) const float SCALE = 1.0;
layout(constant_id = 6) const float EPS = 1e-6;
// Heads per workgroup of 128 threads (1, 2 or 4), 128 / HEADS_PER_GROUP
// threads a head: 4 for a prefill chunk (many workgroups of a few threads a
// head, each with all its loads in flight), 1 for decode (a few workgroups,
// one pair a thread: the fewest steps from load to store).
layout(constant_id = 7) const uint HEADS_PER_GROUP = 1;

#if defined(KV_F16)
#define KV_T float16_t
#else
#define KV_T float
#endif

layout(binding = 0) buffer QBuf { float q[]; };            // [n, HEADS * HEAD_DIM], in place
layout(binding = 1) readonly buffer KBuf { float k_in[]; };  // [n, KV_HEADS * HEAD_DIM]
layout(binding = 2) readonly buffer VBuf { float v[]; };   // [n, KV_HEADS * HEAD_DIM]
layout(binding = 3) writeonly buffer KCache { KV_T kc[]; };  // [rows in part][SLOTS][HEAD_DIM]
layout(binding = 4) writeonly buffer VCache { KV_T vc[]; };
layout(binding = 6) readonly buffer QNorm { float qw[]; };  // [HEAD_DIM]
layout(binding = 7) readonly buffer KNorm { float kw[]; };  // [HEAD_DIM]
layout(push_constant) uniform Push { uint head_begin; uint heads; } pc;

const uint LANES = 128 / HEADS_PER_GROUP;       // threads a head
const uint PAIRS = (HEAD_DIM / 2 + LANES - 1) / LANES;  // rotation pairs per thread
shared float partial[128];  // the subgroups' sums of squares

#include "include/rope.glsl"
#include "include/kv_round.glsl"

void main() {
  const uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, half_hd = HEAD_DIM / 2;
  if (t >= n_tokens) return;
  // This thread's head: group tid / LANES of the workgroup's HEADS_PER_GROUP.
  const uint q_groups = pc.head_begin == 0 ? HEADS : 0;
  const uint head = gl_WorkGroupID.y * HEADS_PER_GROUP + tid / LANES, lane = tid % LANES;
  const bool is_q = head < q_groups;
  const uint h = is_q ? head : head - q_groups;  // q head, or kv head
  const uint cache_row = step_rows[t].stream * KV_HEADS + h;  // for a kv head
  const bool live = is_q || (h < KV_HEADS && cache_row >= pc.head_begin && cache_row < pc.head_begin + pc.heads);
  const uint src = is_q ? t * HEADS * HEAD_DIM + h * HEAD_DIM : t * KV_HEADS * HEAD_DIM + h * HEAD_DIM;

  // Pairs (i, i + HEAD_DIM / 2) for i = lane, lane + LANES, ...: loaded at once, so
  // a thread has all of them in flight.
  float a[PAIRS], b[PAIRS];
  float sq = 0.0;
  [[unroll]] for (uint k = 0; k < PAIRS; ++k) {
    const uint i = lane + LANES * k;
    a[k] = 0.0;
    b[k] = 0.0;
    if (live && i < half_hd) {
      a[k] = is_q ? q[src + i] : k_in[src + i];
      b[k] = is_q ? q[src + i + half_hd] : k_in[src + i + half_hd];
    }
    sq += a[k] * a[k] + b[k] * b[k];
  }
  // The head's sum of squares: per subgroup, then over the head's subgroups
  // (whole subgroups make up a head: the host keeps LANES a multiple of the
  // subgroup size, kernels::attn_prep_heads_per_group).
  sq = subgroupAdd(sq);
  if (subgroupElect()) partial[gl_SubgroupID] = sq;
  barrier();
  if (!live) return;
  const uint per_head = LANES / gl_SubgroupSize;
  float sum = 0.0;
  for (uint k = 0; k < per_head; ++k) sum += partial[tid / LANES * per_head + k];
  const float inv = inversesqrt(sum / float(HEAD_DIM) + EPS);

  const uint pos = step_rows[t].pos;
  const uint dst = ((cache_row - pc.head_begin) * SLOTS + pos % SLOTS) * HEAD_DIM;
  [[unroll]] for (uint k = 0; k < PAIRS; ++k) {
    const uint i = lane + LANES * k;
    if (i >= half_hd) break;
    const float x = a[k] * inv * (is_q ? qw[i] : kw[i]), y = b[k] * inv * (is_q ? qw[i + half_hd] : kw[i + half_hd]);
    const vec2 r = rope_pair(x, y, i, pos, HEAD_DIM, THETA, SCALE);
    if (is_q) {
      q[src + i] = r.x;
      q[src + i + half_hd] = r.y;
    } else {
      kc[dst + i] = KV_T(kv_round(r.x));
      kc[dst + i + half_hd] = KV_T(kv_round(r.y));
      vc[dst + i] = KV_T(kv_round(v[src + i]));
      vc[dst + i + half_hd] = KV_T(kv_round(v[src + i + half_hd]));
    }
  }
}
