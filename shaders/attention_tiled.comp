#version 450
#extension GL_GOOGLE_include_directive : require
// attention_tiled — attention.comp's function (causal softmax attention over
// the cache, grouped-query heads, sliding window on local layers: the token at
// position p sees (p - WINDOW, p], or [0, p] on global layers; an image's
// rows also the image's rows after p: step.glsl's sees_ahead) for chunks of
// many tokens, where attention.comp's workgroup per (token, head) reads every
// key once per query and waits on memory: prefill.
// One workgroup per tile of ROWS query rows of one kv head. Rows are (token,
// query head of the kv head's group) pairs, row = token * G + head in group,
// so the group's query heads share each key and value the workgroup loads.
// The workgroup walks the keys its rows see, KEYS at a time: the key tile goes
// to shared memory once for all ROWS rows, then scores (each thread a column of
// the ROWS x KEYS tile), the online softmax per row (max and exp, TPR threads a
// row), then the value tile through the same shared buffer and the output
// update (each thread 4 dims of O_ROWS rows, in registers). Each tile's loads
// are issued a phase ahead of their use. Arithmetic is fp32 whatever the cache
// holds. Shapes come from the host (kernels::attention_tiled_shape: what the
// device's shared memory holds).
// A chunk is one or several streams' segments of tokens at consecutive
// positions, each starting at a multiple of ROWS / G tokens (step.glsl); the
// cache part's rows are (stream, kv head) pairs, and workgroups on another
// stream's rows than their tile's leave at once.
// Dispatch: (ceil(n_tokens * HEADS / KV_HEADS / ROWS), cache rows in the part, 1).
#extension GL_EXT_shader_16bit_storage : require
#define STEP_BINDING 4
#include "include/step.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint HEADS = 1;
layout(constant_id = 1) const uint KV_HEADS = 1;
layout(constant_id = 2) const uint HEAD_DIM = 64;  // multiple of 4, <= 512
layout(constant_id = 3) const uint SLOTS = 1;
layout(constant_id = 4) const uint WINDOW = 0;     // 0: global layer
layout(constant_id = 5) const float SCALE = 1.0;   // query_pre_attn_scalar^-0.5
layout(constant_id = 6) const uint ROWS = 16;      // query rows per workgroup
layout(constant_id = 7) const uint KEYS = 16;      // keys per tile
layout(constant_id = 8) const uint HALF_OUT = 0;   // o as the fp16 operand of the output projection
#include "include/operand.glsl"

// Caches as 4 consecutive elements per load (head dims are multiples of 4),
// kept in shared memory as the cache holds them: an f16 cache's tiles take
// half the space, so twice the keys fit a tile.
#if defined(KV_F16)
#define TILE_T uvec2  // 4 halves
vec4 unpack4(uvec2 w) { return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)); }
#else
#define TILE_T vec4
vec4 unpack4(vec4 x) { return x; }
#endif
layout(binding = 1) readonly buffer KCache { TILE_T kc[]; };  // [rows in part][SLOTS][HEAD_DIM / 4]
layout(binding = 2) readonly buffer VCache { TILE_T vc[]; };
layout(binding = 0) readonly buffer QBuf { vec4 q[]; };      // [n, HEADS * HEAD_DIM / 4]
layout(binding = 3) writeonly buffer OBuf { vec4 o[]; };     // [n, HEADS * HEAD_DIM / 4]
layout(binding = 3) writeonly buffer OBufH { f16vec4 oh[]; };  // the same in fp16 (HALF_OUT)
layout(push_constant) uniform Push { uint head_begin; uint heads; } pc;

const uint THREADS = 128;
const uint G = HEADS / KV_HEADS;   // query heads per kv head
const uint DQ = HEAD_DIM / 4;       // vec4 columns of a head
// Shared rows are padded by 4 elements, so the rows a subgroup reads at one
// column start 16 (fp32) or 8 (f16) bytes apart and fall in different banks.
const uint STRIDE = DQ + 1;
// Scores: thread (column c = tid % KEYS, row group tid / KEYS) owns rows
// group + k * S_GROUPS of key c.
const uint S_GROUPS = THREADS / KEYS;
const uint S_ROWS = ROWS / S_GROUPS;
// Softmax: TPR threads per row, KPT keys each.
const uint TPR = THREADS / ROWS;
const uint KPT = KEYS / TPR;
// Output: thread (vec4 column tid % DQP, row group tid / DQP) owns rows
// group + k * O_GROUPS; DQP is DQ rounded up to a power of two.
const uint DQP = DQ > 64 ? 128 : DQ > 32 ? 64 : DQ > 16 ? 32 : DQ > 8 ? 16 : 8;
const uint O_GROUPS = THREADS / DQP;
const uint O_ROWS = ROWS / O_GROUPS;

shared vec4 qs[ROWS * STRIDE];    // queries, scaled          [ROWS][HEAD_DIM]
shared TILE_T kvs[KEYS * STRIDE]; // the key tile, then the value tile [KEYS][HEAD_DIM]
shared float ps[ROWS * KEYS];       // scores, then probabilities
shared float part[THREADS];     // per-thread row maxima, at the end row sums
shared float corr[ROWS];          // the rows' rescaling of this tile

// A tile moves from the cache to shared memory through registers: each
// thread loads its share (LOADS elements) one phase before it stores them, so
// the loads are in flight while the workgroup computes.
const uint LOADS = (KEYS * DQ + THREADS - 1) / THREADS;
uint cache_row;  // the kv head's first cache row

// Element e of the tile of keys (or values) [j0, j0 + KEYS): zero outside
// [lo, hi] (a probability of 0 times a stale value must not be NaN).
TILE_T cache_element(bool values, uint e, uint j0, uint lo, uint hi) {
  const uint c = e / DQ, d4 = e % DQ, j = j0 + c;
  TILE_T x = TILE_T(0);
  if (e < KEYS * DQ && j >= lo && j <= hi) {
    const uint i = (cache_row + j % SLOTS) * DQ + d4;
    x = values ? vc[i] : kc[i];
  }
  return x;
}

// The positions row r of the tile sees: [lo, hi]; empty past the chunk.
void row_range(uint row, uint rows, out uint lo, out uint hi) {
  if (row >= rows) { lo = 1; hi = 0; return; }
  const uint pos = step_rows[row / G].pos;  // the window is the query's: from pos back
  lo = WINDOW != 0 && pos + 1 > WINDOW ? pos + 1 - WINDOW : 0;
  hi = pos + step_rows[row / G].sees_ahead;  // an image's rows see to its end
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  // The last query rows see the most keys: their tiles start first.
  const uint row0 = (gl_NumWorkGroups.x - 1 - gl_WorkGroupID.x) * ROWS;
  const uint rows = n_tokens * G;
  if (row0 >= rows) return;
  const uint kvh_local = gl_WorkGroupID.y, cache_head = pc.head_begin + kvh_local;
  // The tile is one stream's rows (a chunk's segments start at multiples of
  // the tile's tokens): workgroups on another stream's cache rows leave.
  if (cache_head / KV_HEADS != step_rows[row0 / G].stream) return;
  const uint kvh = cache_head % KV_HEADS;
  cache_row = kvh_local * SLOTS;
  // Keys any row of the tile sees: from the first row's window to the last
  // row, walked in tiles at multiples of KEYS. Key tiles at fixed positions make
  // a row's result independent of where its chunk began, so a prompt prefilled
  // after a cached prefix gives the bits a whole prefill gives (the server's
  // prompt cache); tiles a row does not see change nothing (p = 0, rescale 1).
  uint lo, hi, unused;
  row_range(row0, rows, lo, unused);
  row_range(min(row0 + ROWS, rows) - 1, rows, unused, hi);
  const uint first_key = lo <= hi ? lo - lo % KEYS : lo;  // an empty tile stays empty

  for (uint e = tid; e < ROWS * DQ; e += THREADS) {
    const uint r = e / DQ, d4 = e % DQ, row = row0 + r;
    vec4 x = vec4(0.0);
    if (row < rows) x = q[(row / G * HEADS + kvh * G + row % G) * DQ + d4] * SCALE;
    qs[r * STRIDE + d4] = x;
  }

  const uint s_col = tid % KEYS, s_group = tid / KEYS;
  uint s_lo[S_ROWS], s_hi[S_ROWS];
  for (uint k = 0; k < S_ROWS; ++k) row_range(row0 + s_group + k * S_GROUPS, rows, s_lo[k], s_hi[k]);
  const uint m_row = tid / TPR, m_seg = tid % TPR;
  float m = -1.0 / 0.0, l = 0.0;  // the row's running max; this thread's share of its sum
  const uint o_col = tid % DQP, o_group = tid / DQP;
  vec4 acc[O_ROWS];
  for (uint k = 0; k < O_ROWS; ++k) acc[k] = vec4(0.0);

  TILE_T staged[LOADS];
  for (uint k = 0; k < LOADS; ++k) staged[k] = cache_element(false, tid + k * THREADS, first_key, lo, hi);
  for (uint j0 = first_key; j0 <= hi; j0 += KEYS) {
    for (uint k = 0; k < LOADS; ++k) {
      const uint e = tid + k * THREADS;
      if (e < KEYS * DQ) kvs[e / DQ * STRIDE + e % DQ] = staged[k];
    }
    barrier();
    for (uint k = 0; k < LOADS; ++k) staged[k] = cache_element(true, tid + k * THREADS, j0, lo, hi);

    // Scores of key j0 + s_col, -inf where the row does not see it.
    float s[S_ROWS];
    for (uint k = 0; k < S_ROWS; ++k) s[k] = 0.0;
    for (uint d4 = 0; d4 < DQ; ++d4) {
      const vec4 kv = unpack4(kvs[s_col * STRIDE + d4]);
      for (uint k = 0; k < S_ROWS; ++k) s[k] += dot(qs[(s_group + k * S_GROUPS) * STRIDE + d4], kv);
    }
    const uint j = j0 + s_col;
    for (uint k = 0; k < S_ROWS; ++k)
      ps[(s_group + k * S_GROUPS) * KEYS + s_col] = j >= s_lo[k] && j <= s_hi[k] ? s[k] : -1.0 / 0.0;
    barrier();

    // The keys are spent: the values take their place.
    for (uint k = 0; k < LOADS; ++k) {
      const uint e = tid + k * THREADS;
      if (e < KEYS * DQ) kvs[e / DQ * STRIDE + e % DQ] = staged[k];
    }
    float tile_max = -1.0 / 0.0;
    for (uint k = 0; k < KPT; ++k) tile_max = max(tile_max, ps[m_row * KEYS + m_seg * KPT + k]);
    part[tid] = tile_max;
    barrier();

    if (j0 + KEYS <= hi)  // the next key tile
      for (uint k = 0; k < LOADS; ++k) staged[k] = cache_element(false, tid + k * THREADS, j0 + KEYS, lo, hi);
    float m_new = m;
    for (uint k = 0; k < TPR; ++k) m_new = max(m_new, part[m_row * TPR + k]);
    // A row that has seen no key yet keeps m = -inf, l = 0 and a zero output.
    const float c = m_new == -1.0 / 0.0 ? 1.0 : exp(m - m_new);
    l *= c;
    for (uint k = 0; k < KPT; ++k) {
      const uint i = m_row * KEYS + m_seg * KPT + k;
      const float sc = ps[i];
      const float p = sc == -1.0 / 0.0 ? 0.0 : exp(sc - m_new);
      ps[i] = p;
      l += p;
    }
    m = m_new;
    if (m_seg == 0) corr[m_row] = c;
    barrier();

    if (o_col < DQ) {
      for (uint k = 0; k < O_ROWS; ++k) acc[k] *= corr[o_group + k * O_GROUPS];
      for (uint cc = 0; cc < KEYS; ++cc) {
        const vec4 v = unpack4(kvs[cc * STRIDE + o_col]);
        for (uint k = 0; k < O_ROWS; ++k) acc[k] += ps[(o_group + k * O_GROUPS) * KEYS + cc] * v;
      }
    }
    barrier();  // the next tile overwrites kvs, ps and part
  }

  part[tid] = l;
  barrier();
  if (o_col >= DQ) return;
  for (uint k = 0; k < O_ROWS; ++k) {
    const uint r = o_group + k * O_GROUPS, row = row0 + r;
    if (row >= rows) break;
    float sum = 0.0;
    for (uint i = 0; i < TPR; ++i) sum += part[r * TPR + i];
    const uint at = (row / G * HEADS + kvh * G + row % G) * DQ + o_col;
    if (HALF_OUT != 0)
      oh[at] = OPERAND_FP16X4(acc[k] / sum);
    else
      o[at] = acc[k] / sum;
  }
}
