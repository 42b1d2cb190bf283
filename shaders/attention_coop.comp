#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// attention_coop — attention_tiled's function (causal softmax attention of a
// prefill chunk over the cache, grouped-query heads, sliding window on local
// layers; an image's rows see the whole image: step.glsl) with both products on the tensor units: S = Q K^T and O += P V as
// fp16 cooperative matrices accumulating in fp32. attention_tiled does them
// as fp32 dot products on the ordinary ALUs (~14 TFLOP/s on the H100).
//
// Rows are (token, query head of the kv head's group) pairs, row = token * G +
// head in group, as in attention_tiled. A workgroup holds ROWS rows of one kv
// head in row groups of TM rows, SPLIT subgroups each; it walks the keys its rows
// see, KEYS at a time: the key and value tiles go to shared memory as fp16 once
// for all rows (loaded a tile ahead), then each row group on its own rows:
//   S = Q K^T        (each subgroup KEYS / SPLIT of the keys, HEAD_DIM / TK steps)
//   online softmax   (S through shared memory: LPR lanes per row)
//   O = O * corr     (per row: see "rows of an accumulator")
//   O += P V         (each subgroup HEAD_DIM / SPLIT of the head dims, KEYS / TK steps)
// and at the end O / l through shared memory to the output rows. With SPLIT = 1
// only subgroup barriers separate the phases, with SPLIT = 2 workgroup barriers.
// With PAIRS a workgroup takes two row tiles, one after the other. A chunk
// may hold several streams' segments (step.glsl), each starting at a multiple
// of ROWS / G tokens, so a row tile is one stream's: a workgroup skips the
// tiles of streams other than its cache row's.
//
// Rows of an accumulator: which rows of a cooperative matrix an invocation's
// elements belong to is the implementation's choice, but it is the same for
// every matrix of one type (element-wise arithmetic depends on it). So a
// matrix loaded from rows that hold their own index tells each invocation the
// row of each of its elements, and the per-row rescaling of the online
// softmax becomes a multiply per element, in registers.
//
// Written in the NV form, rewritten to the KHR form at build time like
// matmul_coop (tools/spirv_coop_khr.cpp): matrices are named variables inside
// main, no arrays (NVIDIA's driver keeps arrays of matrices out of registers).
// Q is scaled before its fp16 rounding; K, V and P are rounded to fp16; S, O
// and the softmax are fp32; l sums the rounded probabilities that P V uses.
// Dispatch: (row tiles, cache rows in the part, 1), row tiles = ceil(n_tokens *
// HEADS / KV_HEADS / ROWS), halved (rounded up) with PAIRS; WARPS = ROWS / TM * SPLIT
// subgroups (kernels::attention_coop_threads).
#define STEP_BINDING 4
#include "include/step.glsl"

layout(constant_id = 0) const uint HEADS = 1;
layout(constant_id = 1) const uint KV_HEADS = 1;
layout(constant_id = 2) const uint HEAD_DIM = 64;  // multiple of TK and SPLIT * TN, at most 16 * SPLIT * TN
layout(constant_id = 3) const uint SLOTS = 1;
layout(constant_id = 4) const uint WINDOW = 0;     // 0: global layer
layout(constant_id = 5) const float SCALE = 1.0;   // query_pre_attn_scalar^-0.5
layout(constant_id = 6) const uint ROWS = 64;      // query rows per workgroup: WARPS * TM
layout(constant_id = 7) const uint KEYS = 32;      // keys per tile: a multiple of TK and SPLIT * TN, at most 4 * SPLIT * TN
layout(constant_id = 8) const uint HALF_OUT = 0;   // o as the fp16 operand of the output projection
layout(constant_id = 9) const uint TM = 16;        // cooperative matrix shape (the device's)
layout(constant_id = 10) const uint TN = 16;
layout(constant_id = 11) const uint TK = 16;
layout(constant_id = 12) const uint SUBGROUP_SIZE = 32;
layout(local_size_x_id = 13) in;                 // WARPS * SUBGROUP_SIZE
// 1: each workgroup takes two row tiles, one from each end of the chunk, so
// that the workgroups walk about as many keys each (the host's choice where a
// chunk has more row tiles than the GPU holds workgroups at once).
layout(constant_id = 14) const uint PAIRS = 0;
// Subgroups per TM rows: 1, or 2 that split the tile's keys for S = Q K^T,
// the rows for the softmax and the head dims for O += P V, with workgroup
// barriers between the phases (twice the subgroups on the same rows, each
// with half the products: kernels::attention_coop_shape).
layout(constant_id = 15) const uint SPLIT = 1;
#include "include/operand.glsl"
#include "include/fp16_pack.glsl"

#if defined(KV_F16)
layout(binding = 1) readonly buffer KCache { uvec4 kc[]; };  // [rows in part][SLOTS][HEAD_DIM / 8], 8 halves
layout(binding = 2) readonly buffer VCache { uvec4 vc[]; };
#else
layout(binding = 1) readonly buffer KCache { vec4 kc[]; };   // [rows in part][SLOTS][HEAD_DIM / 4]
layout(binding = 2) readonly buffer VCache { vec4 vc[]; };
#endif
layout(binding = 0) readonly buffer QBuf { vec4 q[]; };      // [n, HEADS * HEAD_DIM / 4]
layout(binding = 3) writeonly buffer OBuf { float o[]; };    // [n, HEADS * HEAD_DIM]
layout(binding = 3) writeonly buffer OBufH { float16_t oh[]; };  // the same in fp16 (HALF_OUT)
layout(push_constant) uniform Push { uint head_begin; uint heads; } pc;

const uint GROUPS = ROWS / TM;            // row groups of TM rows
const uint WARPS = GROUPS * SPLIT;
const uint THREADS = WARPS * SUBGROUP_SIZE;
const uint G = HEADS / KV_HEADS;     // query heads per kv head
const uint LPR = SPLIT * SUBGROUP_SIZE / TM;  // lanes per row in the softmax (of the row group's subgroups)
const uint CPL = KEYS / LPR;                 // keys per lane
const uint ELEMS = TM * TN / SUBGROUP_SIZE;  // an invocation's elements of an accumulator (<= 8)
// Shared memory in 16-byte units. fp16 rows of Q, K and V: HEAD_DIM / 8 units plus
// one of padding, so the 8 rows of a matrix load fall on distinct banks. Per
// row group a TM x KEYS fp32 region (KEYS / 4 units plus one a row): the scores;
// at the start and the end each subgroup's TM x TN scratch matrix (the
// row-index matrix, the output). The probabilities (fp16, KEYS / 8 units plus
// one a row) take the scores' place with one subgroup per row group, the key
// tile's (spent by then) with two.
const uint QST = HEAD_DIM / 8 + 1;
const uint SST = KEYS / 4 + 1, PST = KEYS / 8 + 1;
const uint K0 = ROWS * QST, V0 = K0 + KEYS * QST, S0 = V0 + KEYS * QST;
shared uvec4 sm[S0 + GROUPS * TM * SST];
shared float part[THREADS];  // lanes' row maxima and sums
shared float row_f[ROWS];      // the rows' rescaling of this tile, at the end their sums

// Between the phases of a tile: the row group's subgroups see each other's
// scores and probabilities.
void sync_group() {
  if (SPLIT == 1) subgroupBarrier(); else barrier();
}

uint cache_row;  // the kv head's first cache row

// The key and value tiles move from the cache to shared memory through
// registers, in 8-element units: each thread loads its LOADS units of the next
// tile before the products of this one, so the loads are in flight while the
// subgroups compute, and converts them to fp16 only when it stores them.
const uint UNITS = KEYS * (HEAD_DIM / 8), LOADS = (UNITS + THREADS - 1) / THREADS;
#if defined(KV_F16)
#define RAW_T uvec4  // 8 halves, as the cache holds them
uvec4 to_fp16(uvec4 x) { return x; }
#else
#define RAW_T mat2x4  // 8 floats
uvec4 to_fp16(mat2x4 x) { return pack8(x[0], x[1]); }
#endif
RAW_T k_raw[LOADS], v_raw[LOADS];

// Units tid + u * THREADS of the key and value tiles [j0, j0 + KEYS); zero
// outside [lo, hi] (a probability of 0 times stale memory must not be NaN).
void load_tiles(uint tid, uint j0, uint lo, uint hi) {
  [[unroll]] for (uint u = 0; u < LOADS; ++u) {
    const uint e = tid + u * THREADS, j = j0 + e / (HEAD_DIM / 8), d8 = e % (HEAD_DIM / 8);
    k_raw[u] = RAW_T(0);
    v_raw[u] = RAW_T(0);
    if (e < UNITS && j >= lo && j <= hi) {
      const uint row = cache_row + j % SLOTS;
#if defined(KV_F16)
      k_raw[u] = kc[row * (HEAD_DIM / 8) + d8];
      v_raw[u] = vc[row * (HEAD_DIM / 8) + d8];
#else
      const uint i = row * (HEAD_DIM / 4) + d8 * 2;
      k_raw[u] = mat2x4(kc[i], kc[i + 1]);
      v_raw[u] = mat2x4(vc[i], vc[i + 1]);
#endif
    }
  }
}
void store_tiles(uint tid) {
  [[unroll]] for (uint u = 0; u < LOADS; ++u) {
    const uint e = tid + u * THREADS;
    if (e < UNITS) {
      sm[K0 + (e / (HEAD_DIM / 8)) * QST + e % (HEAD_DIM / 8)] = to_fp16(k_raw[u]);
      sm[V0 + (e / (HEAD_DIM / 8)) * QST + e % (HEAD_DIM / 8)] = to_fp16(v_raw[u]);
    }
  }
}

// The positions row `row` sees: [lo, hi]; empty past the chunk.
void row_range(uint row, uint rows, out uint lo, out uint hi) {
  if (row >= rows) { lo = 1; hi = 0; return; }
  const uint pos = step_rows[row / G].pos;  // the window is the query's: from pos back
  lo = WINDOW != 0 && pos + 1 > WINDOW ? pos + 1 - WINDOW : 0;
  hi = pos + step_rows[row / G].sees_ahead;  // an image's rows see to its end
}

#define ACC fcoopmatNV<32, gl_ScopeSubgroup, TM, TN>
#define MAT_A fcoopmatNV<16, gl_ScopeSubgroup, TM, TK>
#define MAT_B fcoopmatNV<16, gl_ScopeSubgroup, TK, TN>
#define FOR4(X) X(0) X(1) X(2) X(3)
#define FOR8(X) FOR4(X) X(4) X(5) X(6) X(7)
#define FOR16(X) FOR8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
// An invocation's elements of an accumulator (a list of its own: it expands FOR16 inside).
#define EACH_ELEM(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
const uint SN = KEYS / SPLIT / TN, DN = HEAD_DIM / SPLIT / TN;  // score and output accumulators of a subgroup
// S = Q K^T on the subgroup's keys: B[k][j] = K[j][k], K rows k-contiguous: a column-major load.
#define S_DECLARE(j) ACC s##j = ACC(0.0);
#define S_MUL(j)                                                                      \
  if (j < SN) {                                                                       \
    coopMatLoadNV(b, sm, K0 + (key0 + j * TN) * QST + dk / 8, QST, true);            \
    s##j = coopMatMulAddNV(a, b, s##j);                                               \
  }
#define S_STORE(j) if (j < SN) coopMatStoreNV(s##j, sm, s_base + (key0 + j * TN) / 4, SST, false);
// O += P V on the subgroup's head dims: V rows are the k of the product, head
// dims its columns: row-major.
#define O_DECLARE(d) ACC o##d = ACC(0.0);
#define O_MUL(d)                                                                      \
  if (d < DN) {                                                                       \
    coopMatLoadNV(b, sm, V0 + kc * QST + (dim0 + d * TN) / 8, QST, false);          \
    o##d = coopMatMulAddNV(a, b, o##d);                                               \
  }
// The row of each of this invocation's accumulator elements, and the per-row
// rescaling applied to each.
#define ROW_OF(i) uint row_of##i = 0; if (i < ELEMS) row_of##i = uint(rows_of[i]);
#define SCALE_ELEM(i) \
  if (i < ELEMS) { const int elem = i; const float f = row_f[group * TM + row_of##i]; FOR16(SCALE_O) }
#define SCALE_O(d) if (d < DN) o##d[elem] *= f;
// Output: one accumulator at a time through the subgroup's scratch, divided
// by the row's sum, to the row's token and query head.
#define O_OUT(d)                                                                      \
  if (d < DN) {                                                                       \
    coopMatStoreNV(o##d, sm, scratch, TN / 4, false);                                 \
    subgroupBarrier();                                                                \
    for (uint e = lane; e < TM * TN; e += SUBGROUP_SIZE) {                            \
      const uint r = e / TN, c = e % TN, row = group_row0 + r;                        \
      if (row < rows) {                                                               \
        const float v = uintBitsToFloat(sm[scratch + e / 4][e % 4]) / row_f[group * TM + r]; \
        const uint at = (row / G * HEADS + kvh * G + row % G) * HEAD_DIM + dim0 + d * TN + c; \
        if (HALF_OUT != 0) oh[at] = OPERAND_FP16(v); else o[at] = v;                  \
      }                                                                               \
    }                                                                                 \
    subgroupBarrier();                                                                \
  }

void main() {
  const uint tid = gl_LocalInvocationID.x, warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint rows = n_tokens * G, tiles = (rows + ROWS - 1) / ROWS;
  const uint kvh_local = gl_WorkGroupID.y, cache_head = pc.head_begin + kvh_local;
  const uint kvh = cache_head % KV_HEADS;
  cache_row = kvh_local * SLOTS;
  // The row tiles of this workgroup: without PAIRS, one, the last rows first
  // (they see the most keys); with PAIRS, row tile x and row tile tiles-1-x,
  // so that every workgroup walks about as many keys.
  const uint x = gl_WorkGroupID.x;
  const uint first = PAIRS != 0 ? x : gl_NumWorkGroups.x - 1 - x;
  if (first >= tiles || (PAIRS != 0 && first > tiles - 1 - first)) return;
  const uint passes = PAIRS != 0 && tiles - 1 - first != first ? 2 : 1;
  // A row tile is one stream's rows (a chunk's segments start at multiples of
  // the tile's tokens); a tile of another stream than this cache row's is skipped.
  const uint stream = cache_head / KV_HEADS;
  const bool mine0 = step_rows[first * ROWS / G].stream == stream;
  const bool mine1 = passes == 2 && step_rows[(tiles - 1 - first) * ROWS / G].stream == stream;
  if (!mine0 && !mine1) return;

  // This subgroup's row group, its share of a tile's keys (S = Q K^T) and of
  // the head dims (O += P V); its lane among the row group's for the softmax.
  const uint group = warp / SPLIT, half_ = warp % SPLIT;
  const uint key0 = half_ * (KEYS / SPLIT), dim0 = half_ * (HEAD_DIM / SPLIT);
  const uint s_base = S0 + group * TM * SST, scratch = s_base + half_ * (TM * TN / 4);
  const uint p_base = SPLIT == 1 ? s_base : K0 + group * TM * PST;
  const uint group_lane = half_ * SUBGROUP_SIZE + lane, r = group_lane / LPR, seg = group_lane % LPR;

  // The row-index matrix: each row of the subgroup's scratch holds its index.
  for (uint e = lane; e < TM * TN; e += SUBGROUP_SIZE)
    sm[scratch + e / 4][e % 4] = floatBitsToUint(float(e / TN));
  subgroupBarrier();
  ACC rows_of;
  coopMatLoadNV(rows_of, sm, scratch, TN / 4, false);
  EACH_ELEM(ROW_OF)
  MAT_A a;
  MAT_B b;

  for (uint pass = 0; pass < passes; ++pass) {
    if (!(pass == 0 ? mine0 : mine1)) continue;  // workgroup-uniform
    const uint row0 = (pass == 0 ? first : tiles - 1 - first) * ROWS;
    // Keys any row of the tile sees: from the first row's window to the last
    // row, walked in tiles at multiples of KEYS, so a row's result does not
    // depend on where its chunk began (as in attention_tiled: a prompt
    // prefilled after a cached prefix gives the bits of a whole prefill).
    uint lo, hi, unused;
    row_range(row0, rows, lo, unused);
    row_range(min(row0 + ROWS, rows) - 1, rows, unused, hi);
    const uint first_key = lo <= hi ? lo - lo % KEYS : lo;  // an empty tile stays empty
    // The row group's rows, and the keys they see (a tile outside is skipped).
    const uint group_row0 = row0 + group * TM;
    uint group_lo, group_hi;
    row_range(group_row0, rows, group_lo, unused);
    row_range(min(group_row0 + TM, rows) - 1, rows, unused, group_hi);
    const bool group_live = group_row0 < rows;

    barrier();  // the previous pass is done with Q and the scratch
    // Q, scaled, as fp16 rows.
    for (uint e = tid; e < ROWS * (HEAD_DIM / 8); e += THREADS) {
      const uint rq = e / (HEAD_DIM / 8), d8 = e % (HEAD_DIM / 8), row = row0 + rq;
      uvec4 v = uvec4(0);
      if (row < rows) {
        const uint i = (row / G * HEADS + kvh * G + row % G) * (HEAD_DIM / 4) + d8 * 2;
        v = pack8(q[i] * SCALE, q[i + 1] * SCALE);
      }
      sm[rq * QST + d8] = v;
    }
    uint r_lo, r_hi;
    row_range(group_row0 + r, rows, r_lo, r_hi);
    float m = -1.0 / 0.0, l = 0.0;  // the row's running max; this lane's share of its sum

    FOR16(O_DECLARE)
    load_tiles(tid, first_key, lo, hi);
    for (uint j0 = first_key; j0 <= hi; j0 += KEYS) {
      barrier();  // every subgroup is done with the previous tiles
      store_tiles(tid);
      barrier();
      if (j0 + KEYS <= hi) load_tiles(tid, j0 + KEYS, lo, hi);  // in flight during this tile's products
      // Whether any row of the row group sees the tile (uniform in the row
      // group; with SPLIT = 2 its subgroups still meet the barriers).
      const bool work = group_live && j0 <= group_hi && j0 + KEYS > group_lo;
      if (SPLIT == 1 && !work) continue;

      if (work) {
        FOR4(S_DECLARE)
        [[unroll]] for (uint dk = 0; dk < HEAD_DIM; dk += TK) {
          coopMatLoadNV(a, sm, group * TM * QST + dk / 8, QST, false);
          FOR4(S_MUL)
        }
        FOR4(S_STORE)
      }
      sync_group();

      if (work) {
        // Online softmax of row r over this tile's keys (its LPR lanes are
        // in one subgroup).
        float s[CPL];
        float tile_max = -1.0 / 0.0;
        [[unroll]] for (uint k = 0; k < CPL; ++k) {
          const uint c = seg * CPL + k, j = j0 + c;
          const float v = uintBitsToFloat(sm[s_base + r * SST + c / 4][c % 4]);
          s[k] = j >= r_lo && j <= r_hi ? v : -1.0 / 0.0;
          tile_max = max(tile_max, s[k]);
        }
        part[tid] = tile_max;
        subgroupBarrier();
        float m_new = m;
        [[unroll]] for (uint k = 0; k < LPR; ++k) m_new = max(m_new, part[tid - seg + k]);
        // A row that has seen no key yet keeps m = -inf, l = 0 and a zero output.
        const float corr = m_new == -1.0 / 0.0 ? 1.0 : exp(m - m_new);
        l *= corr;
        m = m_new;
        // P (every lane of the subgroup has read its scores above, before
        // the barrier that let the maxima be read).
        [[unroll]] for (uint k = 0; k < CPL; k += 2) {
          const uint c = seg * CPL + k;
          const f16vec2 p = f16vec2(s[k] == -1.0 / 0.0 ? 0.0 : exp(s[k] - m_new),
                                    s[k + 1] == -1.0 / 0.0 ? 0.0 : exp(s[k + 1] - m_new));
          l += float(p.x) + float(p.y);
          sm[p_base + r * PST + c / 8][(c % 8) / 2] = packFloat2x16(p);
        }
        if (seg == 0) row_f[group * TM + r] = corr;
      }
      sync_group();

      if (work) {
        EACH_ELEM(SCALE_ELEM)
        [[unroll]] for (uint kc = 0; kc < KEYS; kc += TK) {
          coopMatLoadNV(a, sm, p_base + kc / 8, PST, false);
          FOR16(O_MUL)
        }
      }
    }

    if (group_live) {
      subgroupBarrier();
      part[tid] = l;
      subgroupBarrier();
      if (seg == 0) {
        float sum = 0.0;
        for (uint k = 0; k < LPR; ++k) sum += part[tid + k];
        row_f[group * TM + r] = sum;
      }
    }
    sync_group();  // the row group's sums
    if (group_live) FOR16(O_OUT)
  }
}
