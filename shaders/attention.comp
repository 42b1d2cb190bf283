#version 450
#extension GL_GOOGLE_include_directive : require
// attention — causal softmax attention of one query head over the cache, with
// grouped-query heads and, on local layers, a sliding window. Token t at
// position p attends to positions (p - WINDOW, p] on local layers, [0, p] on
// global ones — Hugging Face's Gemma 3 masks.
// One workgroup per (token, query head); each token row has its own position
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
// Dispatch: (n_tokens, HEADS, 1) per cache part.
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
layout(binding = 3) writeonly buffer OBuf { float o[]; };    // [n, HEADS * HEAD_DIM]
layout(binding = 3) writeonly buffer OBufH { float16_t oh[]; };  // the same in fp16 (HALF_OUT)
layout(push_constant) uniform Push { uint head_begin; uint heads; } pc;

layout(constant_id = 8) const uint THREADS = 128;  // a multiple of SUBGROUP_SIZE
const uint BATCH = 4;
const uint NS = THREADS / SUBGROUP_SIZE;  // subgroups
const uint LANE_DIMS = (HEAD_DIM + SUBGROUP_SIZE - 1) / SUBGROUP_SIZE;  // head dims per lane
shared float sg_max[NS], sg_sum[NS];
shared float sg_out[NS * HEAD_DIM];

void main() {
  const uint t = gl_WorkGroupID.x;
  const uint head = gl_WorkGroupID.y;
  if (t >= n_tokens) return;
  const uint cache_row = step_rows[t].stream * KV_HEADS + head / (HEADS / KV_HEADS);
  if (cache_row < pc.head_begin || cache_row >= pc.head_begin + pc.heads) return;
  const uint p = step_rows[t].pos;
  const uint lo = (WINDOW != 0 && p + 1 > WINDOW) ? p + 1 - WINDOW : 0;
  const uint qb = t * HEADS * HEAD_DIM + head * HEAD_DIM;
  const uint lane = gl_SubgroupInvocationID, sg = gl_SubgroupID, tid = gl_LocalInvocationID.x;
  float qr[LANE_DIMS];  // this lane's query dims lane, lane + SUBGROUP_SIZE, ..., scaled
  for (uint e = 0; e < LANE_DIMS; ++e) {
    const uint d = lane + e * SUBGROUP_SIZE;
    qr[e] = d < HEAD_DIM ? q[qb + d] * SCALE : 0.0;
  }

  const uint cache_base = (cache_row - pc.head_begin) * SLOTS * HEAD_DIM;
  float m = -1.0 / 0.0, l = 0.0;
  float acc[LANE_DIMS];  // dims lane, lane + SUBGROUP_SIZE, ...
  for (uint e = 0; e < LANE_DIMS; ++e) acc[e] = 0.0;

  for (uint j0 = lo + sg * BATCH; j0 <= p; j0 += NS * BATCH) {
    // The batch's keys and values (past p: key p again, weighted 0), all in flight.
    float kr[BATCH][LANE_DIMS], vr[BATCH][LANE_DIMS];
    for (uint b = 0; b < BATCH; ++b) {
      const uint rb = cache_base + (min(j0 + b, p) % SLOTS) * HEAD_DIM;
      for (uint e = 0; e < LANE_DIMS; ++e) {
        const uint d = min(lane + e * SUBGROUP_SIZE, HEAD_DIM - 1);
        kr[b][e] = float(kc[rb + d]);
        vr[b][e] = float(vc[rb + d]);
      }
    }
    float s[BATCH];
    float m_new = m;
    for (uint b = 0; b < BATCH; ++b) {
      float part = 0.0;
      for (uint e = 0; e < LANE_DIMS; ++e) part += qr[e] * kr[b][e];
      s[b] = j0 + b <= p ? subgroupAdd(part) : -1.0 / 0.0;
      m_new = max(m_new, s[b]);
    }
    const float correction = exp(m - m_new);  // 0 on the first batch (m = -inf)
    l *= correction;
    for (uint e = 0; e < LANE_DIMS; ++e) acc[e] *= correction;
    for (uint b = 0; b < BATCH; ++b) {
      if (j0 + b > p) break;
      const float w = exp(s[b] - m_new);
      l += w;
      for (uint e = 0; e < LANE_DIMS; ++e) acc[e] += w * vr[b][e];
    }
    m = m_new;
  }

  // Combine the subgroups: out = sum_g e^(m_g - M) acc_g / sum_g e^(m_g - M) l_g.
  if (subgroupElect()) { sg_max[sg] = m; sg_sum[sg] = l; }
  for (uint e = 0; e < LANE_DIMS; ++e) {
    const uint d = lane + e * SUBGROUP_SIZE;
    if (d < HEAD_DIM) sg_out[sg * HEAD_DIM + d] = acc[e];
  }
  barrier();
  float M = -1.0 / 0.0;
  for (uint g = 0; g < NS; ++g) M = max(M, sg_max[g]);
  float total = 0.0;
  for (uint g = 0; g < NS; ++g) total += sg_max[g] == -1.0 / 0.0 ? 0.0 : exp(sg_max[g] - M) * sg_sum[g];
  for (uint d = tid; d < HEAD_DIM; d += THREADS) {
    float sum = 0.0;
    for (uint g = 0; g < NS; ++g)
      if (sg_max[g] != -1.0 / 0.0) sum += exp(sg_max[g] - M) * sg_out[g * HEAD_DIM + d];
    if (HALF_OUT != 0)
      oh[qb + d] = OPERAND_FP16(sum / total);
    else
      o[qb + d] = sum / total;
  }
}
