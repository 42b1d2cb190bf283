#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// vision_attention_coop — vision_attention's function (every patch attends to
// every patch, q/k/v biases added on load, scale head_dim^-0.5) with both
// products on the tensor units, as attention_coop.comp does for the text
// model's prefill: S = Q K^T and O += P V as fp16 cooperative matrices
// accumulating in fp32, the online softmax in fp32.
//
// A workgroup holds ROWS query rows of one head in row groups of TM rows, one
// subgroup each; it walks all keys KEYS at a time: the key and value tiles go
// to shared memory as fp16 once for all row groups, then each subgroup on its
// own rows:
//   S = Q K^T        (KEYS / TN accumulators, PAD_DIM / TK steps)
//   online softmax   (S through shared memory: LPR lanes per row)
//   O = O * corr     (per element, through the row-index matrix)
//   O += P V         (PAD_DIM / TN accumulators, KEYS / TK steps)
// and at the end O / l through shared memory to the output rows.
// Heads of HEAD_DIM dims (72 in SigLIP So400m, not a multiple of 16) are
// zero-padded to PAD_DIM in shared memory: the padding adds zeros to S and
// computes output dims that are not written.
// Rows of an accumulator: which rows of a cooperative matrix an invocation's
// elements belong to is the implementation's choice, the same for every
// matrix of one type; a matrix loaded from rows that hold their own index
// tells each invocation the row of each of its elements (attention_coop.comp).
// Written in the NV form, rewritten to the KHR form at build time
// (tools/spirv_coop_khr.cpp): matrices are named variables, no arrays.
// Dispatch: (ceil(PATCHES / ROWS), HEADS, 1), ROWS / TM * SUBGROUP_SIZE threads.
#include "include/fp16_pack.glsl"

layout(constant_id = 0) const uint PATCHES = 256;
layout(constant_id = 1) const uint HEADS = 4;
layout(constant_id = 2) const uint HEAD_DIM = 16;  // a multiple of 8
layout(constant_id = 3) const uint PAD_DIM = 16;   // HEAD_DIM rounded up to a multiple of TN, TK and 8
layout(constant_id = 4) const float SCALE = 0.25;  // head_dim^-0.5
layout(constant_id = 5) const uint ROWS = 64;      // query rows per workgroup: a multiple of TM
layout(constant_id = 6) const uint KEYS = 32;      // keys per tile: a multiple of TN and TK, at most 4 * TN
layout(constant_id = 7) const uint TM = 16;        // cooperative matrix shape (the device's)
layout(constant_id = 8) const uint TN = 16;
layout(constant_id = 9) const uint TK = 16;
layout(constant_id = 10) const uint SUBGROUP_SIZE = 32;
layout(local_size_x_id = 11) in;                  // ROWS / TM * SUBGROUP_SIZE
layout(constant_id = 11) const uint THREADS = 128;

layout(binding = 0) readonly buffer QKV { vec4 qkv4[]; };      // [PATCHES, 3 * HEADS * HEAD_DIM]: q | k | v
layout(binding = 1) readonly buffer Bias { vec4 bias4[]; };    // [3 * HEADS * HEAD_DIM]
layout(binding = 2) writeonly buffer Out { float out_[]; };    // [PATCHES, HEADS * HEAD_DIM]

const uint GROUPS = ROWS / TM;
const uint LPR = SUBGROUP_SIZE / TM;         // lanes per row in the softmax
const uint CPL = KEYS / LPR;                 // keys per lane
const uint ELEMS = TM * TN / SUBGROUP_SIZE;  // an invocation's elements of an accumulator (<= 8)
const uint UNITS8 = PAD_DIM / 8;             // 8-element units of a padded row
// Shared memory in 16-byte units: fp16 rows of Q, K and V (UNITS8 units plus
// one of padding, so the 8 rows of a matrix load fall on distinct banks); per
// row group a TM x KEYS fp32 score region (KEYS / 4 units plus one a row),
// whose start is the subgroup's TM x TN scratch matrix at the start and the
// end, and whose place the probabilities (fp16, KEYS / 8 units plus one a
// row) take once the scores are read.
const uint QST = UNITS8 + 1;
const uint SST = KEYS / 4 + 1, PST = KEYS / 8 + 1;
const uint K0 = ROWS * QST, V0 = K0 + KEYS * QST, S0 = V0 + KEYS * QST;
shared uvec4 sm[S0 + GROUPS * TM * SST];
shared float part[THREADS];  // lanes' row maxima and sums
shared float row_f[ROWS];    // the rows' rescaling of this tile, at the end their sums

// 8 consecutive values of patch `t`'s q, k or v (part 0, 1, 2) of head `head`
// from dim 8 * d8, bias added; zeros in the padding.
uvec4 unit8(uint t, uint part_, uint head, uint d8, float scale) {
  if (8 * d8 >= HEAD_DIM) return uvec4(0);
  const uint hidden = HEADS * HEAD_DIM, off = part_ * hidden + head * HEAD_DIM + 8 * d8;
  const uint at = (t * 3 * hidden + off) / 4, b = off / 4;
  return pack8((qkv4[at] + bias4[b]) * scale, (qkv4[at + 1] + bias4[b + 1]) * scale);
}

#define ACC fcoopmatNV<32, gl_ScopeSubgroup, TM, TN>
#define MAT_A fcoopmatNV<16, gl_ScopeSubgroup, TM, TK>
#define MAT_B fcoopmatNV<16, gl_ScopeSubgroup, TK, TN>
#define FOR4(X) X(0) X(1) X(2) X(3)
#define FOR16(X) FOR4(X) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define EACH_ELEM(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
const uint SN = KEYS / TN, DN = PAD_DIM / TN;  // score and output accumulators of a subgroup
// S = Q K^T: B[k][j] = K[j][k], K rows k-contiguous: a column-major load.
#define S_DECLARE(j) ACC s##j = ACC(0.0);
#define S_MUL(j)                                                           \
  if (j < SN) {                                                            \
    coopMatLoadNV(b, sm, K0 + (j * TN) * QST + dk / 8, QST, true);        \
    s##j = coopMatMulAddNV(a, b, s##j);                                    \
  }
#define S_STORE(j) if (j < SN) coopMatStoreNV(s##j, sm, s_base + (j * TN) / 4, SST, false);
// O += P V: V rows are the k of the product, head dims its columns: row-major.
#define O_DECLARE(d) ACC o##d = ACC(0.0);
#define O_MUL(d)                                                           \
  if (d < DN) {                                                            \
    coopMatLoadNV(b, sm, V0 + kc * QST + (d * TN) / 8, QST, false);       \
    o##d = coopMatMulAddNV(a, b, o##d);                                    \
  }
#define ROW_OF(i) uint row_of##i = 0; if (i < ELEMS) row_of##i = uint(rows_of[i]);
#define SCALE_ELEM(i) \
  if (i < ELEMS) { const int elem = i; const float f = row_f[group * TM + row_of##i]; FOR16(SCALE_O) }
#define SCALE_O(d) if (d < DN) o##d[elem] *= f;
// Output: one accumulator at a time through the subgroup's scratch, divided
// by the row's sum; padding dims and rows past the patches are not written.
#define O_OUT(d)                                                                     \
  if (d < DN) {                                                                      \
    coopMatStoreNV(o##d, sm, s_base, TN / 4, false);                                 \
    subgroupBarrier();                                                               \
    for (uint e = lane; e < TM * TN; e += SUBGROUP_SIZE) {                           \
      const uint r_ = e / TN, dim = d * TN + e % TN, row = group_row0 + r_;          \
      if (row < PATCHES && dim < HEAD_DIM)                                           \
        out_[row * HEADS * HEAD_DIM + head * HEAD_DIM + dim] =                       \
            uintBitsToFloat(sm[s_base + e / 4][e % 4]) / row_f[group * TM + r_];     \
    }                                                                                \
    subgroupBarrier();                                                               \
  }

void main() {
  const uint tid = gl_LocalInvocationID.x, group = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint head = gl_WorkGroupID.y, row0 = gl_WorkGroupID.x * ROWS;
  const uint group_row0 = row0 + group * TM, s_base = S0 + group * TM * SST;
  const bool group_live = group_row0 < PATCHES;
  const uint r = lane / LPR, seg = lane % LPR;  // this lane's row of the group, its share of the keys
  const bool row_live = group_row0 + r < PATCHES;

  // The row-index matrix: each row of the subgroup's scratch holds its index.
  for (uint e = lane; e < TM * TN; e += SUBGROUP_SIZE)
    sm[s_base + e / 4][e % 4] = floatBitsToUint(float(e / TN));
  subgroupBarrier();
  ACC rows_of;
  coopMatLoadNV(rows_of, sm, s_base, TN / 4, false);
  EACH_ELEM(ROW_OF)
  MAT_A a;
  MAT_B b;

  // Q, biased and scaled, as fp16 rows (zeros past the patches).
  for (uint e = tid; e < ROWS * UNITS8; e += THREADS) {
    const uint rq = e / UNITS8, d8 = e % UNITS8, row = row0 + rq;
    sm[rq * QST + d8] = row < PATCHES ? unit8(row, 0, head, d8, SCALE) : uvec4(0);
  }
  float m = -1.0 / 0.0, l = 0.0;  // the row's running max; this lane's share of its sum
  FOR16(O_DECLARE)
  for (uint j0 = 0; j0 < PATCHES; j0 += KEYS) {
    barrier();  // every subgroup is done with the previous tiles (and Q is stored)
    for (uint e = tid; e < KEYS * UNITS8; e += THREADS) {
      const uint j = e / UNITS8, d8 = e % UNITS8, key = j0 + j;
      sm[K0 + j * QST + d8] = key < PATCHES ? unit8(key, 1, head, d8, 1.0) : uvec4(0);
      sm[V0 + j * QST + d8] = key < PATCHES ? unit8(key, 2, head, d8, 1.0) : uvec4(0);
    }
    barrier();
    if (!group_live) continue;

    FOR4(S_DECLARE)
    [[unroll]] for (uint dk = 0; dk < PAD_DIM; dk += TK) {
      coopMatLoadNV(a, sm, group * TM * QST + dk / 8, QST, false);
      FOR4(S_MUL)
    }
    FOR4(S_STORE)
    subgroupBarrier();

    // Online softmax of row r over this tile's keys (its LPR lanes are in one subgroup).
    float s[CPL];
    float tile_max = -1.0 / 0.0;
    [[unroll]] for (uint k = 0; k < CPL; ++k) {
      const uint c = seg * CPL + k;
      const float v = uintBitsToFloat(sm[s_base + r * SST + c / 4][c % 4]);
      s[k] = row_live && j0 + c < PATCHES ? v : -1.0 / 0.0;
      tile_max = max(tile_max, s[k]);
    }
    part[tid] = tile_max;
    subgroupBarrier();
    float m_new = m;
    [[unroll]] for (uint k = 0; k < LPR; ++k) m_new = max(m_new, part[tid - seg + k]);
    // A row past the patches keeps m = -inf, l = 0 and a zero output.
    const float corr = m_new == -1.0 / 0.0 ? 1.0 : exp(m - m_new);
    l *= corr;
    m = m_new;
    // P, in the scores' place (every lane has read its scores above).
    [[unroll]] for (uint k = 0; k < CPL; k += 2) {
      const uint c = seg * CPL + k;
      const f16vec2 p = f16vec2(s[k] == -1.0 / 0.0 ? 0.0 : exp(s[k] - m_new),
                                s[k + 1] == -1.0 / 0.0 ? 0.0 : exp(s[k + 1] - m_new));
      l += float(p.x) + float(p.y);
      sm[s_base + r * PST + c / 8][(c % 8) / 2] = packFloat2x16(p);
    }
    if (seg == 0) row_f[group * TM + r] = corr;
    subgroupBarrier();

    EACH_ELEM(SCALE_ELEM)
    [[unroll]] for (uint kc = 0; kc < KEYS; kc += TK) {
      coopMatLoadNV(a, sm, s_base + kc / 8, PST, false);
      FOR16(O_MUL)
    }
  }

  if (!group_live) return;
  subgroupBarrier();
  part[tid] = l;
  subgroupBarrier();
  if (seg == 0) {
    float sum = 0.0;
    for (uint k = 0; k < LPR; ++k) sum += part[tid + k];
    row_f[group * TM + r] = row_live ? sum : 1.0;
  }
  subgroupBarrier();
  FOR16(O_OUT)
}
