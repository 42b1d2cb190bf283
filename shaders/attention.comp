#version 450
#extension GL_GOOGLE_include_directive : require
// attention — causal softmax attention of one query head over the cache, with
// grouped-query heads and, on local layers, a sliding window. Token t at
// position p attends to positions (p - WINDOW, p] on local layers, [0, p] on
// global ones — Hugging Face's Gemma 3 masks; in prefill an image's rows also
// see its rows after their own (step.glsl's sees_ahead).
// One workgroup per token and QUERY_HEADS query heads of one kv group, which
// share each key and value load; each token row has its own position
// and stream (step.glsl). The cache's rows are (stream, kv head) pairs,
// stream-major, split into parts of rows [head_begin, +heads): a workgroup
// whose row lies outside the bound part exits.
// Each subgroup walks its own share of the keys, BATCH consecutive keys at a
// time, its lanes splitting the head dimension so key and value rows are read
// in whole cache lines. A decode step is bound by memory latency, not
// bandwidth: a batch's key and value rows are all loaded before its scores are
// reduced (one round trip a batch, not two), and a workgroup has THREADS / SUBGROUP_SIZE
// subgroups (16 on the H100), so a walk over a few hundred keys is a few
// batches long. Each subgroup keeps its own online softmax; their (max, sum,
// output) meet in shared memory at the end — no barrier inside the loop, and
// any context length in fixed shared memory.
// PREP (decode passes): the workgroup first does attn_prep's work for its own
// heads — RMS-normalises and rotates its query heads and their kv head's key
// from the projections, writes that key and value into the cache slot of the
// token's position (the first query head of each kv group writes; the
// others hold the same values) — and takes the current key from shared
// memory, the earlier ones from the cache: one dispatch and one barrier a
// layer fewer.
// WAIT (with PREP; one token, one cache part): dispatched right after the q,
// k and v products with no barrier between them, each workgroup waits until
// their workgroups have all counted themselves in counters[pc.counter]
// (matvec.comp's SIGNAL: pc.count of them) and reads the projections past the
// caches; each then counts itself too, and the last of them sets the counter
// back to 0. Only HEADS workgroups wait: they cannot keep the products'
// workgroups, all launched before them, from running.
// Dispatch: (n_tokens, HEADS / QUERY_HEADS, 1) per cache part.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define STEP_BINDING 4
#include "include/step.glsl"

layout(local_size_x_id = 8) in;  // THREADS: kernels::attention_threads
layout(constant_id = 0) const uint HEADS = 1;
layout(constant_id = 1) const uint KV_HEADS = 1;
layout(constant_id = 2) const uint HEAD_DIM = 64;       // <= 256
layout(constant_id = 3) const uint SLOTS = 1;
layout(constant_id = 4) const uint WINDOW = 0;          // 0: global layer
layout(constant_id = 5) const float SCALE = 1.0;        // query_pre_attn_scalar^-0.5
layout(constant_id = 6) const uint SUBGROUP_SIZE = 32;  // the device's subgroup size (>= 8)
layout(constant_id = 7) const uint HALF_OUT = 0;        // o as the fp16 operand of the output projection
#include "include/operand.glsl"

#if defined(KV_F16)
#define KV_T float16_t
#else
#define KV_T float
#endif

layout(binding = 0) readonly buffer QBuf { float q[]; };     // [n, HEADS * HEAD_DIM]
layout(binding = 1) readonly buffer KCache { KV_T kc[]; };   // [rows in part][SLOTS][HEAD_DIM]
layout(binding = 2) readonly buffer VCache { KV_T vc[]; };
layout(binding = 1) writeonly buffer KCacheOut { KV_T kc_out[]; };  // PREP: the token's key and value
layout(binding = 2) writeonly buffer VCacheOut { KV_T vc_out[]; };
layout(binding = 3) writeonly buffer OBuf { float o[]; };    // [n, HEADS * HEAD_DIM]
layout(binding = 3) writeonly buffer OBufH { float16_t oh[]; };  // the same in fp16 (HALF_OUT)
// PREP: q above is the query projection as it comes, k and v the key and
// value projections, and the q_norm / k_norm weights (1 + w).
layout(binding = 5) readonly buffer KIn { float k_in[]; };  // [n, KV_HEADS * HEAD_DIM]
layout(binding = 6) readonly buffer VIn { float v_in[]; };  // [n, KV_HEADS * HEAD_DIM]
layout(binding = 7) readonly buffer QNorm { float qw[]; };  // [HEAD_DIM]
layout(binding = 8) readonly buffer KNorm { float kw[]; };  // [HEAD_DIM]
// WAIT: the same projections, written while this dispatch starts, and the counters.
layout(binding = 0) coherent readonly buffer QBufC { float q_c[]; };
layout(binding = 5) coherent readonly buffer KInC { float k_in_c[]; };
layout(binding = 6) coherent readonly buffer VInC { float v_in_c[]; };
layout(binding = 9) coherent buffer Counters { uint counters[]; };
layout(push_constant) uniform Push { uint head_begin; uint heads; uint counter; uint count; } pc;

layout(constant_id = 8) const uint THREADS = 128;  // a multiple of SUBGROUP_SIZE, at least HEAD_DIM / 2
layout(constant_id = 9) const uint PREP = 0;
layout(constant_id = 10) const float THETA = 10000.0;    // PREP: RoPE's base,
layout(constant_id = 11) const float ROPE_SCALE = 1.0;   // its position scale,
layout(constant_id = 12) const float EPS = 1e-6;         // and q/k norm's epsilon
layout(constant_id = 13) const uint WAIT = 0;
// Query heads a workgroup, of one kv group (a divisor of HEADS / KV_HEADS, at
// most MAX_QUERY_HEADS): each key and value row is read once for all of them.
// Every head's arithmetic is the same in any grouping (the same bits).
layout(constant_id = 14) const uint QUERY_HEADS = 1;
const uint MAX_QUERY_HEADS = 2;  // kernels::kAttentionMaxQueryHeads
// PREP, not WAIT: the q, k and v projections as QKV_SLICES partial sums (a
// batched step's products split over K), Q_SLICE and KV_SLICE elements apart,
// added here in order; 0 or 1: the projections as they are.
layout(constant_id = 15) const uint QKV_SLICES = 1;
layout(constant_id = 16) const uint Q_SLICE = 0;
layout(constant_id = 17) const uint KV_SLICE = 0;
// OWN_LAST (a verify pass, whose attn_prep wrote every row's key and value
// into the cache before this dispatch): the token's own key and value come
// from the cache but are attended last, by subgroup 0, as PREP attends them,
// so that each row's sums are a decode step's, bit for bit (a verify pass's
// rows choose what decode steps choose: generation/speculative.hpp).
layout(constant_id = 18) const uint OWN_LAST = 0;
const bool kOwnKeyLast = PREP != 0 || OWN_LAST != 0;
#include "include/rope.glsl"
const uint BATCH = 4;
const uint NS = THREADS / SUBGROUP_SIZE;  // subgroups
const uint LANE_DIMS = (HEAD_DIM + SUBGROUP_SIZE - 1) / SUBGROUP_SIZE;  // head dims per lane
shared float sg_max[NS], sg_sum[NS];
shared float sg_out[NS * HEAD_DIM];
shared float head_q[MAX_QUERY_HEADS * HEAD_DIM], head_k[HEAD_DIM], head_v[HEAD_DIM];  // PREP: this token's
#include "include/kv_round.glsl"
shared float head_sums[(MAX_QUERY_HEADS + 1) * NS];  // per subgroup: each query head's, then the key's

// A projection's element i: as WAIT reads it, or its QKV_SLICES partial sums added in order.
#define PROJECTION_AT(NAME, BUF, BUF_C, SLICE)                            \
  float NAME(uint i) {                                                    \
    if (WAIT != 0) return BUF_C[i];                                       \
    float sum = BUF[i];                                                   \
    for (uint z = 1; z < QKV_SLICES; ++z) sum += BUF[z * SLICE + i];      \
    return sum;                                                           \
  }
PROJECTION_AT(q_at, q, q_c, Q_SLICE)
PROJECTION_AT(k_in_at, k_in, k_in_c, KV_SLICE)
PROJECTION_AT(v_in_at, v_in, v_in_c, KV_SLICE)

// PREP: attn_prep's work for the workgroup's query heads (QUERY_HEADS from qb)
// and their kv head (one pair of each a thread: THREADS >= HEAD_DIM / 2), into
// head_q, head_k and head_v; the key and value also into the cache when
// `writer`. The key and value keep the cache's precision, as if read back from it.
void prep_heads(uint qb, uint kb, uint p, uint dst, bool writer) {
  const uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID, half_hd = HEAD_DIM / 2;
  const bool mine = tid < half_hd;
  float a[MAX_QUERY_HEADS], b[MAX_QUERY_HEADS], c = 0.0, d = 0.0;
  for (uint h = 0; h < QUERY_HEADS; ++h) {
    a[h] = mine ? q_at(qb + h * HEAD_DIM + tid) : 0.0;
    b[h] = mine ? q_at(qb + h * HEAD_DIM + tid + half_hd) : 0.0;
  }
  if (mine) c = k_in_at(kb + tid), d = k_in_at(kb + tid + half_hd);
  for (uint h = 0; h < QUERY_HEADS; ++h) {
    const float sq = subgroupAdd(a[h] * a[h] + b[h] * b[h]);
    if (subgroupElect()) head_sums[h * NS + sg] = sq;
  }
  const float sk = subgroupAdd(c * c + d * d);
  if (subgroupElect()) head_sums[QUERY_HEADS * NS + sg] = sk;
  barrier();
  float tk = 0.0;
  for (uint g = 0; g < NS; ++g) tk += head_sums[QUERY_HEADS * NS + g];
  if (mine) {
    for (uint h = 0; h < QUERY_HEADS; ++h) {
      float tq = 0.0;
      for (uint g = 0; g < NS; ++g) tq += head_sums[h * NS + g];
      const float iq = inversesqrt(tq / float(HEAD_DIM) + EPS);
      const vec2 rq = rope_pair(a[h] * iq * qw[tid], b[h] * iq * qw[tid + half_hd], tid, p, HEAD_DIM, THETA, ROPE_SCALE);
      head_q[h * HEAD_DIM + tid] = rq.x, head_q[h * HEAD_DIM + tid + half_hd] = rq.y;
    }
    const float ik = inversesqrt(tk / float(HEAD_DIM) + EPS);
    const vec2 rk = rope_pair(c * ik * kw[tid], d * ik * kw[tid + half_hd], tid, p, HEAD_DIM, THETA, ROPE_SCALE);
    const float v0 = v_in_at(kb + tid), v1 = v_in_at(kb + tid + half_hd);
    const vec4 kv = vec4(kv_round(rk.x), kv_round(rk.y), kv_round(v0), kv_round(v1));
    head_k[tid] = kv.x, head_k[tid + half_hd] = kv.y;
    head_v[tid] = kv.z, head_v[tid + half_hd] = kv.w;
    if (writer) {
      kc_out[dst + tid] = KV_T(kv.x), kc_out[dst + tid + half_hd] = KV_T(kv.y);
      vc_out[dst + tid] = KV_T(kv.z), vc_out[dst + tid + half_hd] = KV_T(kv.w);
    }
  }
  barrier();
}

void main() {
  if (WAIT != 0) {  // before any workgroup leaves: every one of them counts itself
    if (gl_LocalInvocationIndex == 0) {
      while (atomicAdd(counters[pc.counter], 0u) < pc.count) {
      }
      memoryBarrierBuffer();  // the products' outputs, after their count
      const uint consumers = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
      if (atomicAdd(counters[pc.counter], 1u) == pc.count + consumers - 1u) atomicExchange(counters[pc.counter], 0u);
    }
    barrier();
  }
  const uint t = gl_WorkGroupID.x;
  const uint head = gl_WorkGroupID.y * QUERY_HEADS;  // the first of the workgroup's query heads
  if (t >= n_tokens) return;
  const uint cache_row = step_rows[t].stream * KV_HEADS + head / (HEADS / KV_HEADS);
  if (cache_row < pc.head_begin || cache_row >= pc.head_begin + pc.heads) return;
  const uint p = step_rows[t].pos;
  const uint lo = (WINDOW != 0 && p + 1 > WINDOW) ? p + 1 - WINDOW : 0;
  const uint qb = t * HEADS * HEAD_DIM + head * HEAD_DIM;
  const uint lane = gl_SubgroupInvocationID, sg = gl_SubgroupID, tid = gl_LocalInvocationID.x;
  const uint cache_base = (cache_row - pc.head_begin) * SLOTS * HEAD_DIM;
  const uint group = HEADS / KV_HEADS;
  if (PREP != 0)
    prep_heads(qb, t * KV_HEADS * HEAD_DIM + (head / group) * HEAD_DIM, p, cache_base + (p % SLOTS) * HEAD_DIM,
               head % group == 0);
  if (OWN_LAST != 0) {  // the token's own key and value, where PREP would hold them
    for (uint d = tid; d < HEAD_DIM; d += THREADS) {
      head_k[d] = float(kc[cache_base + (p % SLOTS) * HEAD_DIM + d]);
      head_v[d] = float(vc[cache_base + (p % SLOTS) * HEAD_DIM + d]);
    }
    barrier();
  }
  // Per query head (0, and 1 when QUERY_HEADS is 2): this lane's query dims
  // lane, lane + SUBGROUP_SIZE, ..., scaled; the online softmax's running max
  // m, sum l and output dims acc. Named, not arrays of heads: NVIDIA's driver
  // keeps arrays indexed in a loop over heads out of registers (3x slower).
  float qr0[LANE_DIMS], qr1[LANE_DIMS], acc0[LANE_DIMS], acc1[LANE_DIMS];
  float m0 = -1.0 / 0.0, l0 = 0.0, m1 = -1.0 / 0.0, l1 = 0.0;
#define INIT_HEAD(h, QR, ACC)                                                      \
  for (uint e = 0; e < LANE_DIMS; ++e) {                                          \
    const uint d = lane + e * SUBGROUP_SIZE, i = h * HEAD_DIM + d;                \
    QR[e] = d < HEAD_DIM ? (PREP != 0 ? head_q[i] : q[qb + i]) * SCALE : 0.0;     \
    ACC[e] = 0.0;                                                                 \
  }
  INIT_HEAD(0, qr0, acc0)
  if (QUERY_HEADS > 1) { INIT_HEAD(1, qr1, acc1) }
  // Keys [lo, end) come from the cache; with PREP the token's own (position
  // p) from head_k, since another workgroup may be writing it (and with
  // OWN_LAST from head_k too, in the same order).
  // In prefill an image's rows see to its end (step.glsl's sees_ahead; the
  // window stays the query's own: from p back).
  const uint end = kOwnKeyLast ? p : p + 1 + step_rows[t].sees_ahead;

// One head's online softmax over the batch's keys kr and values vr.
#define ATTEND_BATCH(QR, ACC, M, L)                                             \
  {                                                                             \
    float s[BATCH];                                                             \
    float m_new = M;                                                            \
    for (uint b = 0; b < BATCH; ++b) {                                          \
      float part = 0.0;                                                         \
      for (uint e = 0; e < LANE_DIMS; ++e) part += QR[e] * kr[b][e];            \
      s[b] = j0 + b < end ? subgroupAdd(part) : -1.0 / 0.0;                     \
      m_new = max(m_new, s[b]);                                                 \
    }                                                                           \
    const float correction = exp(M - m_new); /* 0 on the first batch (M = -inf) */ \
    L *= correction;                                                            \
    for (uint e = 0; e < LANE_DIMS; ++e) ACC[e] *= correction;                  \
    for (uint b = 0; b < BATCH; ++b) {                                          \
      if (j0 + b >= end) break;                                                 \
      const float w = exp(s[b] - m_new);                                        \
      L += w;                                                                   \
      for (uint e = 0; e < LANE_DIMS; ++e) ACC[e] += w * vr[b][e];              \
    }                                                                           \
    M = m_new;                                                                  \
  }
  for (uint j0 = lo + sg * BATCH; j0 < end; j0 += NS * BATCH) {
    // The batch's keys and values (past the last: the last again, weighted 0), all in flight.
    float kr[BATCH][LANE_DIMS], vr[BATCH][LANE_DIMS];
    for (uint b = 0; b < BATCH; ++b) {
      const uint rb = cache_base + (min(j0 + b, end - 1) % SLOTS) * HEAD_DIM;
      for (uint e = 0; e < LANE_DIMS; ++e) {
        const uint d = min(lane + e * SUBGROUP_SIZE, HEAD_DIM - 1);
        kr[b][e] = float(kc[rb + d]);
        vr[b][e] = float(vc[rb + d]);
      }
    }
    ATTEND_BATCH(qr0, acc0, m0, l0)
    if (QUERY_HEADS > 1) ATTEND_BATCH(qr1, acc1, m1, l1)
  }
// The token's own key and value (PREP, OWN_LAST), for one head.
#define ATTEND_OWN(QR, ACC, M, L)                                                                     \
  {                                                                                                   \
    float part = 0.0;                                                                                 \
    for (uint e = 0; e < LANE_DIMS; ++e) part += QR[e] * head_k[min(lane + e * SUBGROUP_SIZE, HEAD_DIM - 1)]; \
    const float s = subgroupAdd(part), m_new = max(M, s);                                             \
    const float correction = exp(M - m_new), w = exp(s - m_new);                                      \
    L = L * correction + w;                                                                           \
    for (uint e = 0; e < LANE_DIMS; ++e)                                                              \
      ACC[e] = ACC[e] * correction + w * head_v[min(lane + e * SUBGROUP_SIZE, HEAD_DIM - 1)];         \
    M = m_new;                                                                                        \
  }
  if (kOwnKeyLast && sg == 0) {
    ATTEND_OWN(qr0, acc0, m0, l0)
    if (QUERY_HEADS > 1) ATTEND_OWN(qr1, acc1, m1, l1)
  }

  // Combine the subgroups, a query head at a time: out = sum_g e^(m_g - M)
  // acc_g / sum_g e^(m_g - M) l_g.
#define COMBINE(h, ACC, M_SG, L_SG)                                                                       \
  {                                                                                                       \
    if (subgroupElect()) { sg_max[sg] = M_SG; sg_sum[sg] = L_SG; }                                        \
    for (uint e = 0; e < LANE_DIMS; ++e) {                                                                \
      const uint d = lane + e * SUBGROUP_SIZE;                                                            \
      if (d < HEAD_DIM) sg_out[sg * HEAD_DIM + d] = ACC[e];                                               \
    }                                                                                                     \
    barrier();                                                                                            \
    float M = -1.0 / 0.0;                                                                                 \
    for (uint g = 0; g < NS; ++g) M = max(M, sg_max[g]);                                                  \
    float total = 0.0;                                                                                    \
    for (uint g = 0; g < NS; ++g) total += sg_max[g] == -1.0 / 0.0 ? 0.0 : exp(sg_max[g] - M) * sg_sum[g]; \
    const uint ob = qb + h * HEAD_DIM;                                                                    \
    for (uint d = tid; d < HEAD_DIM; d += THREADS) {                                                      \
      float sum = 0.0;                                                                                    \
      for (uint g = 0; g < NS; ++g)                                                                       \
        if (sg_max[g] != -1.0 / 0.0) sum += exp(sg_max[g] - M) * sg_out[g * HEAD_DIM + d];                \
      if (HALF_OUT != 0)                                                                                  \
        oh[ob + d] = OPERAND_FP16(sum / total);                                                           \
      else                                                                                                \
        o[ob + d] = sum / total;                                                                          \
    }                                                                                                     \
  }
  COMBINE(0, acc0, m0, l0)
  if (QUERY_HEADS > 1) {
    barrier();  // every thread is done with head 0's
    COMBINE(1, acc1, m1, l1)
  }
}
