// unicorn/engine/kernels.hpp — every shader as a typed handle: its module, its
// specialization constants and its bindings.
//
// One Hana struct per shader; field i is the shader's `constant_id = i`, of
// the same name in capitals (see gpu/kernel.hpp; tests/kernel checks both).
// Dimensions reach the shaders only through these, so the same SPIR-V module
// serves every model size.
#pragma once

#include <algorithm>
#include <boost/hana/define_struct.hpp>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>

#include "unicorn/base/error.hpp"
#include "unicorn/quant/formats.hpp"
#include "unicorn/spirv_modules.hpp"

namespace unicorn::kernels {

struct Embed {
  BOOST_HANA_DEFINE_STRUCT(Embed, (uint32_t, hidden), (float, scale));
};
// half_out (here and below): the output is the fp16 operand of the prefill
// products (Act::Operand, matmul_coop with x_half).
struct RmsNorm {
  BOOST_HANA_DEFINE_STRUCT(RmsNorm, (uint32_t, dim), (float, eps), (uint32_t, accumulate),
                           (uint32_t, row_set), (uint32_t, chain), (uint32_t, half_out),
                           (uint32_t, slices), (uint32_t, slice), (uint32_t, wait), (uint32_t, threads));
};
// threads: the workgroup, one per row. 256 on a GPU. On a CPU device, where a
// barrier switches between all of a workgroup's subgroups, as few as keep a
// thread at 8 elements or under (the tiny model's 96: 32 threads), never
// fewer than 4 subgroups nor more than a GPU's 256.
constexpr uint32_t rmsnorm_threads(uint32_t dim, uint32_t subgroup_size, bool cpu) {
  if (!cpu) return 256;
  const uint32_t need = (dim + 7) / 8;
  return std::clamp((need + subgroup_size - 1) / subgroup_size * subgroup_size, 4 * subgroup_size, 256u);
}
// slices, slice (rmsnorm): the input is `slices` partial sums `slice`
// elements apart (a product split over K, LinearCoop's splits), added in order.
// wait: one row, recorded right after its input's matvec (signal) with no
// barrier between them; it starts when the matvec's workgroups have all
// counted themselves done (Tuning::decode_norm_wait).
struct Linear {  // matmul
  BOOST_HANA_DEFINE_STRUCT(Linear, (uint32_t, in_features), (uint32_t, out_features),
                           (uint32_t, row_set));
};
// matmul_coop: Linear's constants, the cooperative-matrix shape and the
// subgroup size (gpu::DeviceInfo), then the workgroup's output tile and its
// subgroup grid (a CoopTile), and the workgroup size they make.
struct LinearCoop {
  BOOST_HANA_DEFINE_STRUCT(LinearCoop, (uint32_t, in_features), (uint32_t, out_features),
                           (uint32_t, row_set), (uint32_t, tm), (uint32_t, tn), (uint32_t, tk),
                           (uint32_t, subgroup_size), (uint32_t, tile_tokens),
                           (uint32_t, tile_rows), (uint32_t, warps_tokens),
                           (uint32_t, warps_rows), (uint32_t, threads), (uint32_t, stages),
                           (uint32_t, producers), (uint32_t, x_half), (uint32_t, splits),
                           (uint32_t, slice));
};
// Prefill's products take X as fp16 (matmul_coop's X_HALF) where every K of
// the model is a multiple of 8: written once by the kernel that produces it
// (rmsnorm, attention, geglu with half_out) into Act::Operand, where with fp32
// X every workgroup that stages a tile converted it again: faster prefill on
// every size (notes/kernel_shapes.md).
constexpr bool x_half_fits(uint32_t K) { return K % 8 == 0; }
// A matmul_coop workgroup's output tile (tokens x weight rows) and the grid of
// subgroups that share it; each subgroup owns a (tokens / warps_tokens) x
// (rows / warps_rows) block of accumulators.
// stages: shared buffers (2, or 1 for tiles too large to fit twice in 48 KiB:
// two barriers a step); producers: extra subgroups that only load, the others
// then only multiply (shaders/matmul_coop.comp); splits: K cut into that many
// ranges, each its own workgroups writing partial sums (a slice of Y each)
// that the consumer adds.
struct CoopTile {
  uint32_t tokens, rows, warps_tokens, warps_rows, stages = 2, producers = 0;
  bool x_half = false;  // X as fp16 (x_half_fits(K))
  uint32_t splits = 1;
  constexpr uint32_t warps() const { return warps_tokens * warps_rows; }  // the ones that multiply
  // Shared memory of its matmul_coop workgroup (bytes): `stages` buffers of
  // fp16 rows (32 k + 8 padding); after the loop the same memory holds a
  // 16 x 16 fp32 scratch matrix per subgroup, which must fit.
  constexpr uint32_t shared_bytes() const {
    return std::max(stages * (tokens + rows) * 80, warps() * 16 * 16 * 4);
  }
};
// The tiles, largest first: 128 x 256 with 16 subgroups of 64 x 32 (4 x 2
// matrices of 16 x 16) and one shared buffer (30 KiB); 128 x 128 with two
// buffers, 8 subgroups of 64 x 32 that only multiply and 8 producer subgroups
// that only load; 64 x 64 with 4 subgroups of 32 x 32. Each fits 48 KiB.
// 128 x 256 reads X half as often per product; fewer, larger subgroups on
// 128 x 128 were much slower, and a 64 x 128 tile never beat both of its
// neighbours (notes/kernel_shapes.md).
inline constexpr CoopTile kCoopTiles[] = {{128, 256, 2, 8, 1}, {128, 128, 2, 4, 2, 8}, {64, 64, 2, 2}};
// What each tile reaches with every multiprocessor busy (TFLOP/s, Q4_0, fp16
// X): the best of each over Gemma 3's matrices in an H100 kernel sweep
// (notes/kernel_shapes.md), used only to rank tiles against each other.
inline constexpr double kCoopTilePeak[] = {166, 164, 109};
// `wave` below: workgroups in flight at once. The large tiles hold one per
// multiprocessor, so a wave is the device's multiprocessors
// (gpu::DeviceInfo::multiprocessors; Tuning::coop_wave overrides it). A matrix
// whose tiles fill 1.2 waves leaves most of the second one idle.
// A matrix takes the tile, and where its consumer adds partial sums the split
// of K, with the most work done per wave: the tile's peak times the share of
// its last wave the workgroups fill; on a tie the larger tile (fewer re-reads
// of each operand) and fewer splits. Against every tile on Gemma 3's matrices
// it picks the fastest or one within 1 % of it, where a "fill the GPU" rule
// left some projections on far slower small tiles (notes/kernel_shapes.md).
constexpr CoopTile coop_tile(uint32_t tokens, uint32_t rows, bool x_half, uint32_t wave, uint32_t max_splits = 1) {
  CoopTile best{};
  double best_rate = -1;
  for (size_t i = 0; i < std::size(kCoopTiles); ++i)
    for (uint32_t splits = 1; splits <= max_splits; ++splits) {
      const CoopTile& c = kCoopTiles[i];
      const uint64_t groups =
          uint64_t((rows + c.rows - 1) / c.rows) * ((tokens + c.tokens - 1) / c.tokens) * splits;
      const uint64_t waves = (groups + wave - 1) / wave;
      const double rate = kCoopTilePeak[i] * double(groups) / double(waves * wave);
      if (rate > best_rate) best = c, best.splits = splits, best_rate = rate;
    }
  best.x_half = x_half;
  return best;
}
// The splits of K (at most max_splits) for tile t that best fill the last
// wave of its workgroups together with `in_flight` others dispatched with it
// (no barrier between): the up projection after the gate's, same tile.
constexpr uint32_t coop_splits_after(const CoopTile& t, uint32_t tokens, uint32_t rows, uint64_t in_flight,
                                     uint32_t wave, uint32_t max_splits = 1) {
  const uint64_t tiles = uint64_t((rows + t.rows - 1) / t.rows) * ((tokens + t.tokens - 1) / t.tokens);
  uint32_t best = 1;
  double best_fill = -1;
  for (uint32_t splits = 1; splits <= max_splits; ++splits) {
    const uint64_t groups = in_flight + tiles * splits, waves = (groups + wave - 1) / wave;
    const double fill = double(groups) / double(waves * wave);
    if (fill > best_fill) best = splits, best_fill = fill;
  }
  return best;
}
// The most splits of K that leave each range at least `min_steps` steps of
// 32, capped by what the consumer takes (kProjSlices, kUpSlices).
inline constexpr uint32_t kCoopMinSplitSteps = 8;
constexpr uint32_t coop_max_splits(uint32_t K, uint32_t cap, uint32_t min_steps = kCoopMinSplitSteps) {
  return std::clamp((K + 31) / 32 / std::max(min_steps, 1u), 1u, std::max(cap, 1u));
}
// slice: elements of Y between the partial sums of a split tile (n x M).
inline LinearCoop linear_coop(uint32_t K, uint32_t M, uint32_t row_set, uint32_t tm, uint32_t tn,
                              uint32_t tk, uint32_t subgroup_size, CoopTile t, uint32_t slice = 0) {
  return {.in_features = K, .out_features = M, .row_set = row_set, .tm = tm, .tn = tn, .tk = tk,
          .subgroup_size = subgroup_size, .tile_tokens = t.tokens, .tile_rows = t.rows,
          .warps_tokens = t.warps_tokens, .warps_rows = t.warps_rows,
          .threads = (t.warps() + t.producers) * subgroup_size, .stages = t.stages, .producers = t.producers,
          .x_half = uint32_t(t.x_half), .splits = t.splits, .slice = slice};
}
// matmul_coop_splitk (batched decode: a few token rows): Linear's constants,
// the cooperative-matrix shape and subgroup size, the workgroup's output tile
// (tokens x weight rows) and its subgroups, each walking a share of K; and
// the ranges of K across workgroups (splits, partial sums `slice` apart);
// pair: gate and up in one tile, writing gelu(gate) * up (in fp16: half_out).
struct LinearCoopSplitK {
  BOOST_HANA_DEFINE_STRUCT(LinearCoopSplitK, (uint32_t, in_features), (uint32_t, out_features),
                           (uint32_t, row_set), (uint32_t, tm), (uint32_t, tn), (uint32_t, tk),
                           (uint32_t, subgroup_size), (uint32_t, tile_tokens),
                           (uint32_t, tile_rows), (uint32_t, split), (uint32_t, threads),
                           (uint32_t, x_half), (uint32_t, splits), (uint32_t, slice),
                           (uint32_t, pair), (uint32_t, half_out));
};
struct SplitKTile {
  uint32_t tokens, rows, split;
  // Shared memory of its workgroup (bytes): each subgroup's fp16 rows (32 k +
  // 8 padding) of both operands; the fp32 partial tiles reuse it after the loop.
  constexpr uint32_t shared_bytes() const { return split * (tokens + rows) * 80; }
  constexpr bool partials_fit() const { return tokens * rows * 4 <= (tokens + rows) * 80; }
};
// The tiles matmul_coop_splitk is built and tested for; splitk_tile picks the
// first for up to 16 tokens and the second above (1 or 2 x 2 matrices per
// subgroup, in as many token tiles as the step needs). Four subgroups split
// K, each with two steps' loads in flight: on a 4B's K = 2560 each walks 20
// steps, where eight walked 10 and spent much of a workgroup's life on the
// loads' first round trip and the closing reduction. Both picks split alike,
// so a row's sums keep one order on either (batch invariance).
// Tuning::splitk_tile_index = i (1-based) runs any of them; the first two won
// the sweep of notes/kernel_shapes.md at 8 and 32 streams. All fit 48 KiB.
inline constexpr SplitKTile kSplitKTiles[] = {{16, 32, 4}, {32, 32, 4}, {32, 48, 6}, {16, 16, 16}};
// Batched decode steps of this many streams or more run their products on
// matmul_coop_splitk where the device has tensor units; fewer keep matvec.
// Every batched step, now that four subgroups split K: even at 2 streams the
// 16-token tile beat matvec (notes/kernel_shapes.md).
inline constexpr uint32_t kSplitKFromStreams = 2;
constexpr SplitKTile splitk_tile(uint32_t tokens) { return kSplitKTiles[tokens <= 16 ? 0 : 1]; }
// Engines of more streams than this also record a split-K pass on the first
// tile, for steps of up to this many streams (EngineCore::batch_pass).
inline constexpr uint32_t kSplitKSmallTokens = kSplitKTiles[0].tokens;
inline LinearCoopSplitK linear_coop_splitk(uint32_t K, uint32_t M, uint32_t row_set, uint32_t tm,
                                           uint32_t tn, uint32_t tk, uint32_t subgroup_size,
                                           SplitKTile t, bool x_half = false, uint32_t splits = 1,
                                           uint32_t slice = 0) {
  return {.in_features = K, .out_features = M, .row_set = row_set, .tm = tm, .tn = tn, .tk = tk,
          .subgroup_size = subgroup_size, .tile_tokens = t.tokens, .tile_rows = t.rows, .split = t.split,
          .threads = t.split * subgroup_size, .x_half = uint32_t(x_half), .splits = splits, .slice = slice, .pair = 0,
          .half_out = 0};
}
// The fused gate and up (block formats): out = gelu(x Wg^T) * (x Wu^T), M
// rows of each, TILE_ROWS / 2 of each a tile; in fp16 (the down projection's
// operand) with half_out.
inline LinearCoopSplitK linear_coop_splitk_pair(uint32_t K, uint32_t M, uint32_t tm, uint32_t tn,
                                                uint32_t tk, uint32_t subgroup_size, SplitKTile t,
                                                bool x_half, bool half_out) {
  LinearCoopSplitK s = linear_coop_splitk(K, M, 0, tm, tn, tk, subgroup_size, t, x_half);
  s.pair = 1;
  s.half_out = uint32_t(half_out);
  return s;
}
// Ranges of K across matmul_coop_splitk's workgroups, for a product whose
// consumer adds up to `cap` partial sums (an output projection, or a step's
// q, k and v, whose M is their rows together): a matrix of few row tiles and
// a long K — the 4B's down projection is 80 tiles of 32 rows walking K =
// 10240 — leaves most multiprocessors idle and its chains long.
// The splits whose workgroups best fill their last wave (`wave`: two 256-thread
// workgroups on each multiprocessor, kSplitKGroupsPerMultiprocessor), each
// range keeping at least min_steps (kSplitKMinSteps; Tuning::splitk_split_steps)
// steps of 32 k for every subgroup.
// Not a function of the step's tokens: a row's sums keep one order in every
// batched pass (batch invariance).
inline constexpr uint32_t kSplitKGroupsPerMultiprocessor = 2;
inline constexpr uint32_t kSplitKMinSteps = 2;
constexpr uint32_t splitk_splits(uint32_t K, uint32_t M, SplitKTile t, uint32_t cap,
                                 uint32_t wave, uint32_t min_steps = kSplitKMinSteps) {
  const uint64_t tiles = (M + t.rows - 1) / t.rows, steps = (K + 31) / 32;
  const uint32_t most =
      uint32_t(std::clamp<uint64_t>(steps / (std::max(min_steps, 1u) * t.split), 1, std::max(cap, 1u)));
  uint32_t best = 1;
  double best_fill = -1;
  for (uint32_t splits = 1; splits <= most; ++splits) {
    const uint64_t groups = tiles * splits, waves = (groups + wave - 1) / wave;
    const double fill = double(groups) / double(waves * wave);
    if (fill > best_fill + 1e-9) best = splits, best_fill = fill;
  }
  return best;
}
struct MatVec {
  BOOST_HANA_DEFINE_STRUCT(MatVec, (uint32_t, in_features), (uint32_t, out_features),
                           (uint32_t, row_set), (uint32_t, rows_per_group),
                           (uint32_t, lanes_per_group), (uint32_t, unroll), (uint32_t, pair),
                           (uint32_t, tokens), (uint32_t, tile), (uint32_t, splits), (uint32_t, slice),
                           (uint32_t, signal));
};
// signal: each workgroup counts itself done (for a waiting rmsnorm, RmsNorm::wait).
// Batched decode (tokens > 1 per workgroup): tokens per pass over the weights,
// and accumulators per row group (rows times 1, or 2 for the fused pair) — the
// per-token registers a pass holds are tile * accumulators * 2. The lanes stay
// those of the single-token shape, so a row's sums keep their order.
// Tuning::batch_tile and batch_accumulators override them.
inline constexpr uint32_t kMatVecBatchTile = 4;
inline constexpr uint32_t kMatVecBatchAccumulators = 4;
// The matvec shape: output rows per row group (its inputs are loaded once for
// all of them), lanes per row group, blocks per lane per pass. Measured on the
// H100 with tools/matvec_sweep.sh; Tuning::matvec_rows, _lanes and _unroll
// (UNICORN_MATVEC_* in the tools) override them for such sweeps.
inline constexpr uint32_t kMatVecRows = 4;
inline constexpr uint32_t kMatVecUnroll = 1;
// Lanes per row group. A subgroup of 32 (or the device's smaller one) per row
// group, and more — split-K over whole subgroups, up to the 128-lane
// workgroup — while the matrix has fewer than kMatVecLanesAtWork lanes at work:
// a small matrix (a 1B or 4B projection, any down projection) otherwise
// leaves most of a large GPU idle and its few lanes waiting on memory one
// block after another. Never more lanes than a row has blocks.
inline constexpr uint64_t kMatVecLanesAtWork = 65536;
//
// A matrix with enough lanes at work on 32 (the large ones: 12B and 27B gate
// and up, every LM head) takes 64 where that idles no more lanes in a row's
// last pass over its blocks: 27B Q4_0 tg128 +2.7 %, 27B Q4_K_M +3.2 %, 12B
// +1.8 % (Q4_0) and +3.1 % (Q4_K_M) on the H100. The 4B's 80 blocks a row
// would idle 48 of 64 lanes in the second pass (4B Q4_0 and Q8_0 -4.6 % with
// 64 there), so it keeps 32 (notes/tuning.md).
//
// A CPU device (lavapipe: a subgroup is one thread's SIMD vector) takes one
// lane per row group, whatever the matrix: each lane sums its own rows, with
// no reduction across lanes, which there is work for the thread rather than
// free hardware. The demo model's Q4_0 LM head (262,144 x 192) ran a decode
// step's product in 11.0 ms against 32.3 on 8 lanes (notes/tuning.md).
constexpr uint32_t matvec_lanes(Format format, uint32_t in_features, uint32_t out_rows,
                                uint32_t rows_per_group, uint32_t subgroup_size, bool cpu_device) {
  if (cpu_device) return 1;
  uint32_t lanes = subgroup_size < 32 ? subgroup_size : 32;
  if (!is_block_quantized(format)) return lanes;
  const uint32_t blocks = in_features / 32;
  const uint64_t row_groups = (uint64_t(out_rows) + rows_per_group - 1) / rows_per_group;
  while (lanes < 128 && lanes < blocks && row_groups * lanes < kMatVecLanesAtWork) lanes *= 2;
  const auto padded = [blocks](uint32_t n) { return (blocks + n - 1) / n * n; };
  if (lanes == 32 && blocks >= 64 && padded(64) == padded(32)) lanes = 64;
  return lanes;
}
// matvec_dot (a block format's quants as bytes against inputs quantized to
// bytes, integer dot products; a module per block format): its shared memory
// for one token's inputs of `in_features`, each block of 32 as 32 bytes and two
// floats, beside the reductions' 512 floats.
constexpr uint32_t matvec_dot_shared_bytes(uint32_t in_features) { return in_features / 32 * 40 + 512 * 4; }
// Its lanes per row group: 32, so a workgroup's 16 rows share the inputs it
// quantized (the float kernel's rule, up to 128 lanes and 4 rows a workgroup,
// staged a 12B down projection's inputs for every 4 rows: 37.7 us against 22.0).
inline constexpr uint32_t kMatVecDotLanes = 32;
// One token's rows longer than this split K over workgroups (partial sums in
// the output's slices, where it has them): unsplit, the 27B's down projection
// (21,504) read 86 KB of inputs in each workgroup before its first weight,
// 62.4 us against the float kernel's 45.6 (notes/tuning.md).
inline constexpr uint32_t kMatVecDotSplitInFeatures = 8192;
// Their rows per row group: 8, so each workgroup's share of the inputs,
// staged once, serves 32 rows, where that leaves the product at least
// kMatVecDotSplitRowsGroupsPerMultiprocessor (3.4) workgroups on each of
// the device's multiprocessors (448 on the H100's 132, where it was measured;
// fewer left a 4B's down projection short of work). notes/kernel_shapes.md
// has the figures.
inline constexpr uint32_t kMatVecDotSplitRows = 8;
inline constexpr double kMatVecDotSplitRowsGroupsPerMultiprocessor = 3.4;
constexpr bool matvec_dot_split_rows_fit(uint32_t out_rows, uint32_t splits, uint32_t rows, uint32_t lanes,
                                         uint32_t multiprocessors) {
  const uint64_t rows_per_group = uint64_t(rows) * 128 / lanes;
  const auto min_groups = uint64_t(multiprocessors * kMatVecDotSplitRowsGroupsPerMultiprocessor);
  return (out_rows + rows_per_group - 1) / rows_per_group * splits >= min_groups;
}
constexpr uint32_t matvec_dot_splits(uint32_t in_features, uint32_t split_in_features, uint32_t slices) {
  const uint32_t want = split_in_features ? (in_features + split_in_features - 1) / split_in_features : 1;
  return std::clamp(want, 1u, std::max(slices, 1u));
}
// Whether a decode matrix of `format` and `in_features` runs on matvec_dot,
// its K split `splits` ways for one token.
constexpr bool matvec_dot_takes(Format format, uint32_t in_features, uint32_t tokens, uint32_t max_shared,
                                uint32_t splits = 1) {
  const uint32_t blocks = (in_features / 32 + splits - 1) / splits;
  return is_block_quantized(format) && (tokens > 1 || matvec_dot_shared_bytes(blocks * 32) <= max_shared);
}
// Whether a lanes count fits the kernel: it divides the subgroup, or is a
// multiple of it within the 128-lane workgroup; rows fit its shared memory.
// (`rows` counts accumulators: twice the rows for the fused gate/up pair.)
constexpr bool matvec_shape_ok(uint32_t lanes, uint32_t rows, uint32_t subgroup_size) {
  const bool lanes_ok = lanes && lanes <= 128 && 128 % lanes == 0 &&
                        (subgroup_size % lanes == 0 || lanes % subgroup_size == 0);
  return lanes_ok && rows >= 1 && rows * 128 / subgroup_size <= 512;
}
// attn_prep's heads per workgroup of 128 threads (its HEADS_PER_GROUP): 4
// for a prefill chunk, where one head per workgroup left half the threads
// idle on 128-dim heads; 1 for a decode step, whose few workgroups each do one
// pair a thread (four heads made decode slower). notes/kernel_shapes.md.
// A head's threads are whole subgroups: fewer heads with 64-lane subgroups.
constexpr uint32_t attn_prep_heads_per_group(bool decode, uint32_t subgroup_size = 32) {
  return decode ? 1 : std::clamp(128 / std::max(subgroup_size, 1u), 1u, 4u);
}
constexpr uint32_t attn_prep_groups(uint32_t heads, uint32_t heads_per_group) {
  return (heads + heads_per_group - 1) / heads_per_group;
}
struct AttnPrep {  // q/k norm + RoPE + KV cache write
  BOOST_HANA_DEFINE_STRUCT(AttnPrep, (uint32_t, heads), (uint32_t, kv_heads), (uint32_t, head_dim),
                           (uint32_t, slots), (float, theta), (float, scale), (float, eps),
                           (uint32_t, heads_per_group));
};
struct Attention {
  BOOST_HANA_DEFINE_STRUCT(Attention, (uint32_t, heads), (uint32_t, kv_heads),
                           (uint32_t, head_dim), (uint32_t, slots), (uint32_t, window),
                           (float, scale), (uint32_t, subgroup_size), (uint32_t, half_out),
                           (uint32_t, threads), (uint32_t, prep), (float, theta), (float, rope_scale),
                           (float, eps), (uint32_t, wait), (uint32_t, query_heads),
                           (uint32_t, qkv_slices), (uint32_t, q_slice), (uint32_t, kv_slice),
                           (uint32_t, own_last));
};
// own_last (verify passes): the token's own key, which attn_prep wrote, is
// attended after the earlier ones, as prep orders it: a decode step's sums.
// prep (decode passes): attention first does attn_prep's work for its own
// query heads and kv head, with AttnPrep's theta, scale (rope_scale here) and
// eps; attn_prep is not dispatched (shaders/attention.comp).
// qkv_slices (with prep, not wait): q, k and v arrive as that many partial
// sums, q_slice and kv_slice elements apart (a batched step's q, k and v
// products split K: kernels::splitk_splits), which prep adds in order.
// wait (with prep, one token, one cache part): recorded right after the q, k
// and v matvecs (signal) with no barrier between them; each workgroup starts
// when their workgroups have all counted themselves done
// (Tuning::decode_attention_wait).
// attention (decode): threads per workgroup, 16 subgroups. A decode step's
// attention is a chain of dependent loads per subgroup, so more subgroups
// walk the keys in fewer steps (a third of 4 subgroups' time:
// notes/kernel_shapes.md). Shared memory: 16 * head_dim floats.
// On a CPU device (lavapipe) a subgroup is one thread's SIMD vector, not
// hardware that waits on loads, and every barrier switches between all of a
// workgroup's subgroups: 4 subgroups, or the head_dim / 2 threads that
// PREP's rotation needs (the tiny model's batched step, 8 streams: attention
// 6.3 -> 2.5 ms, notes/build_time.md).
constexpr uint32_t attention_threads(uint32_t subgroup_size, uint32_t head_dim, bool cpu) {
  if (cpu) return std::max(4 * subgroup_size, (head_dim / 2 + subgroup_size - 1) / subgroup_size * subgroup_size);
  return std::clamp(16 * subgroup_size, 128u, 1024u);
}
// attention: query heads a workgroup, of one kv group, reading each key and
// value row once for all of them (shaders/attention.comp, QUERY_HEADS; the
// same bits either way). Two where the kv group has an even count and a pass
// of `tokens` rows still has kAttentionGroupedMinGroups workgroups, else one:
// on the H100 pairs ran the 4B's 32-stream step 8 % faster at 1,024 positions,
// but a step of 8 streams, one stream, or the 1B's 32 (a single kv head) 4-8 %
// slower, with too few workgroups left to fill the GPU (notes/batched_decode.md,
// step 13). `forced` (Tuning::attention_query_heads) wins if it divides the group.
inline constexpr uint32_t kAttentionMaxQueryHeads = 2;  // attention.comp's MAX_QUERY_HEADS
inline constexpr uint64_t kAttentionGroupedMinGroups = 128;
constexpr uint32_t attention_query_heads(uint32_t heads, uint32_t kv_heads, uint32_t tokens, uint32_t forced = 0) {
  const uint32_t group = heads / kv_heads;
  if (forced && forced <= kAttentionMaxQueryHeads && group % forced == 0) return forced;
  return group % 2 == 0 && uint64_t(tokens) * heads / 2 >= kAttentionGroupedMinGroups ? 2 : 1;
}
// attention_tiled (prefill chunks): attention's constants but the subgroup
// size, then the tile: query rows per workgroup and keys per step.
struct AttentionTiled {
  BOOST_HANA_DEFINE_STRUCT(AttentionTiled, (uint32_t, heads), (uint32_t, kv_heads),
                           (uint32_t, head_dim), (uint32_t, slots), (uint32_t, window),
                           (float, scale), (uint32_t, rows), (uint32_t, keys), (uint32_t, half_out));
};
struct AttentionTile {
  uint32_t rows = 0, keys = 0;  // 0: no tile fits; attention.comp serves every chunk
  uint32_t split = 1;           // attention_coop: subgroups per 16 rows (its SPLIT)
};
// Shared memory of a tile (attention_tiled.comp): fp32 query rows and key or
// value rows in the cache's element size (kv_bytes), each padded by 4
// elements; the scores, the threads' row maxima, the rows' rescaling.
constexpr uint32_t attention_tiled_shared_bytes(uint32_t head_dim, uint32_t kv_bytes,
                                                AttentionTile t) {
  const uint32_t row_elems = head_dim + 4;
  return row_elems * (t.rows * 4 + t.keys * kv_bytes) + 4 * (t.rows * t.keys + 128 + t.rows);
}
// Whether the kernel's 128 threads split a tile evenly in each of its phases:
// scores (a key per thread, rows in 128 / keys groups), softmax (128 / rows
// threads per row, a key or more each), output (4 dims per thread, rows in
// 128 / (head_dim / 4 rounded up to a power of two) groups, at most 16 each).
constexpr bool attention_tiled_shape_ok(uint32_t head_dim, AttentionTile t) {
  if (head_dim % 4 || head_dim == 0 || head_dim > 512 || !t.rows || !t.keys) return false;
  uint32_t columns = 8;
  while (columns < head_dim / 4) columns *= 2;
  const uint32_t out_groups = 128 / columns;
  return 128 % t.keys == 0 && 128 % t.rows == 0 && t.rows % (128 / t.keys) == 0 &&
         t.keys % (128 / t.rows) == 0 && t.rows % out_groups == 0 && t.rows / out_groups <= 16;
}
// Query rows per tile: 16 share each key and value load among more rows; 8
// where a chunk would make fewer than kAttentionTiledGroups workgroups of 16,
// since then much of a large GPU idles while the workgroups of the chunk's
// last rows walk every key (the 1B's few heads: notes/kernel_shapes.md).
// Tuning::attention_rows overrides (0: attention.comp).
inline constexpr uint32_t kAttentionTiledGroups = 256;
constexpr uint32_t attention_tiled_rows(uint32_t tokens, uint32_t query_heads) {
  return uint64_t(tokens) * query_heads / 16 >= kAttentionTiledGroups ? 16 : 8;
}
// The tile for a head dim and cache element size on a device: `rows` query
// rows, else fewer (less shared memory), else more (small heads split the
// output into more row groups than `rows`); the most keys that fit.
constexpr AttentionTile attention_tiled_shape(uint32_t head_dim, uint32_t kv_bytes,
                                              uint32_t max_shared_bytes, uint32_t rows) {
  auto fit = [&](uint32_t r) {
    for (uint32_t keys : {32u, 16u}) {
      const AttentionTile t{r, keys};
      if (attention_tiled_shape_ok(head_dim, t) &&
          attention_tiled_shared_bytes(head_dim, kv_bytes, t) <= max_shared_bytes)
        return t;
    }
    return AttentionTile{};
  };
  if (rows == 0) return {};
  for (uint32_t r = rows; r >= 8; r /= 2)
    if (const AttentionTile t = fit(r); t.rows) return t;
  for (uint32_t r = rows * 2; r <= 32; r *= 2)
    if (const AttentionTile t = fit(r); t.rows) return t;
  return {};
}
// attention_coop (prefill chunks on the tensor units): attention_tiled's
// constants, then the cooperative-matrix shape and subgroup size
// (gpu::DeviceInfo) and the workgroup size they make: rows / tm subgroups.
struct AttentionCoop {
  BOOST_HANA_DEFINE_STRUCT(AttentionCoop, (uint32_t, heads), (uint32_t, kv_heads),
                           (uint32_t, head_dim), (uint32_t, slots), (uint32_t, window),
                           (float, scale), (uint32_t, rows), (uint32_t, keys), (uint32_t, half_out),
                           (uint32_t, tm), (uint32_t, tn), (uint32_t, tk), (uint32_t, subgroup_size),
                           (uint32_t, threads), (uint32_t, pairs), (uint32_t, split));
};
// Shared memory of an attention_coop tile: fp16 rows of Q (rows), K and V
// (keys each), each head_dim + 8 halves; per tm rows an fp32 score region of
// keys + 4 floats a row; the lanes' partial maxima and the rows' rescaling.
constexpr uint32_t attention_coop_shared_bytes(uint32_t head_dim, uint32_t tm, uint32_t subgroup_size,
                                               AttentionTile t) {
  const uint32_t groups = t.rows / tm;
  return 16 * ((t.rows + 2 * t.keys) * (head_dim / 8 + 1) + groups * tm * (t.keys / 4 + 1)) +
         4 * (groups * t.split * subgroup_size + t.rows);
}
// Whether the kernel tiles this shape: row groups of tm rows, each of `split`
// subgroups (1 or 2) that share its keys for the scores and its head dims for
// the output, in whole matrices, at most 4 score and 16 output accumulators
// per subgroup (named in the kernel); an even share of a tile's keys for each
// of the split * subgroup_size / tm lanes of a row in the softmax; each
// subgroup's tm x tn scratch matrix in its row group's score region; with
// split 2 the probabilities in the spent key tile; accumulators of at most 8
// elements per invocation.
constexpr bool attention_coop_shape_ok(uint32_t head_dim, uint32_t tm, uint32_t tn, uint32_t tk,
                                       uint32_t subgroup_size, AttentionTile t) {
  if (!tm || !tn || !tk || subgroup_size % tm || !t.rows || !t.keys || t.rows % tm) return false;
  if (t.split != 1 && t.split != 2) return false;
  const uint32_t lanes_per_row = t.split * subgroup_size / tm, keys = t.keys / t.split,
                 dims = head_dim / t.split;
  return head_dim % 16 == 0 && head_dim % tk == 0 && head_dim % (t.split * tn) == 0 && dims / tn <= 16 &&
         t.keys % 16 == 0 && t.keys % tk == 0 && t.keys % (t.split * tn) == 0 && keys / tn <= 4 &&
         t.keys % (2 * lanes_per_row) == 0 && t.split * tn / 4 <= t.keys / 4 + 1 &&
         (t.split == 1 || t.rows * (t.keys / 8 + 1) <= t.keys * (head_dim / 8 + 1)) &&
         tm * tn <= 8 * subgroup_size;
}
// The tile for a head dim on a device: the most rows x keys that fit its
// shared memory (on a tie, more rows: each key tile serves more of them), at
// most 64 rows and 64 keys (Tuning::attention_coop_rows and _keys lower
// them), and two subgroups per 16 rows where the shape allows (max_split:
// 1 keeps one); none where nothing fits, so
// attention_tiled serves prefill. H100 (48 KiB): 128-dim heads (27B) 64 rows
// x 32 keys, 8 subgroups; 256-dim heads 48 x 16, 3 subgroups.
constexpr AttentionTile attention_coop_shape(uint32_t head_dim, uint32_t tm, uint32_t tn, uint32_t tk,
                                             uint32_t subgroup_size, uint32_t max_shared_bytes,
                                             uint32_t max_rows = 64, uint32_t max_keys = 64,
                                             uint32_t max_split = 2) {
  AttentionTile best{};
  for (uint32_t rows = tm; rows <= max_rows; rows += tm)
    for (uint32_t keys = 16; keys <= max_keys; keys += 16)
      for (uint32_t split = 1; split <= std::min(max_split, 2u); ++split) {
        const AttentionTile t{rows, keys, split};
        if (!attention_coop_shape_ok(head_dim, tm, tn, tk, subgroup_size, t) ||
            attention_coop_shared_bytes(head_dim, tm, subgroup_size, t) > max_shared_bytes)
          continue;
        const uint32_t area = rows * keys, best_area = best.rows * best.keys;
        if (area > best_area || (area == best_area && (rows > best.rows || (rows == best.rows && split > best.split))))
          best = t;
      }
  return best;
}
// Its workgroup: split subgroups per tm rows.
constexpr uint32_t attention_coop_threads(AttentionTile t, uint32_t tm, uint32_t subgroup_size) {
  return t.rows / tm * t.split * subgroup_size;
}
// A chunk runs attention_coop where it makes at least this many workgroups of
// one row tile each, else attention_tiled (smaller tiles, more workgroups):
// the 1B's 43 lost to attention_tiled, the 4B's 88 won (notes/kernel_shapes.md).
inline constexpr uint32_t kAttentionCoopGroups = 64;
// Whether attention_coop pairs row tiles (PAIRS): where the workgroups of one
// row tile each are more than a wave (the multiprocessors), so that some would
// share a multiprocessor while the last row tiles, which walk the most keys,
// hold the pass up.
constexpr bool attention_coop_pairs(uint64_t workgroups, uint32_t wave) {
  return workgroups > wave;
}
// up_slices, slice: up as partial sums (as RmsNorm's slices).
struct Geglu {
  BOOST_HANA_DEFINE_STRUCT(Geglu, (uint32_t, ffn), (uint32_t, half_out), (uint32_t, up_slices),
                           (uint32_t, slice));
};
// Threads per token row of geglu: one per 4 elements when F % 4 == 0.
constexpr uint32_t geglu_threads(uint32_t F) { return F % 4 == 0 ? F / 4 : F; }
struct LogitsMax {
  BOOST_HANA_DEFINE_STRUCT(LogitsMax, (uint32_t, vocab), (uint32_t, parts));
};
struct Sample {
  BOOST_HANA_DEFINE_STRUCT(Sample, (uint32_t, vocab), (uint32_t, parts));
};
struct Logprobs {
  BOOST_HANA_DEFINE_STRUCT(Logprobs, (uint32_t, vocab), (uint32_t, parts));
};
// Workgroups logits_max splits a row into (their maxima feed the sampler):
// 128 for Gemma 3's 262,144 logits, fewer for a small vocabulary, so that a
// slice is at least 2,048 logits (8 a thread). A workgroup with little to scan
// still pays its launch and its nine barriers, and the batched pass dispatches
// every part of every stream's row: on lavapipe, the tiny models' 128 parts of
// 4 logits were half of a decode step.
inline constexpr uint32_t kLogitParts = 128;
constexpr uint32_t logit_parts(uint32_t vocab) { return std::clamp((vocab + 2047) / 2048, 1u, kLogitParts); }
static_assert(logit_parts(262144) == kLogitParts, "every Gemma 3 size keeps its 128 parts");
struct Convert {
  BOOST_HANA_DEFINE_STRUCT(Convert, (uint32_t, source_type), (float, add));
};
// check_finite's KIND: what a tensor part's values are (engine/check_tensors.hpp).
enum class FiniteCheck : uint32_t { F32 = 0, F16 = 1, BF16 = 2, BlockScales = 3 };
struct CheckFinite {
  BOOST_HANA_DEFINE_STRUCT(CheckFinite, (uint32_t, kind));
};

// Binding counts, per shader (its `layout(binding = i)` declarations).
// matvec's binding 4 is the fused pair's second tensor (the first again otherwise);
// matvec's binding 5 and rmsnorm's 6 are the signal / wait counters (any buffer without).
inline constexpr uint32_t kEmbedBindings = 3, kRmsNormBindings = 7, kLinearBindings = 4,
                          kMatVecBindings = 6, kAttnPrepBindings = 8, kAttentionBindings = 10,
                          kAttentionTiledBindings = 5, kAttentionCoopBindings = 5, kGegluBindings = 4,
                           kLogitsMaxBindings = 5, kSampleBindings = 5, kLogprobsBindings = 6,
                           kConvertBindings = 2,
                           kCheckFiniteBindings = 2;
// matmul_coop_splitk binds what matmul and matmul_coop bind, and as matvec
// binding 4: the fused pair's second tensor (the first again otherwise).
inline constexpr uint32_t kLinearSplitKBindings = 5;

// The kernels as typed handles: a SPIR-V module (spirv::Module, which the build
// generates, so a kernel that does not exist does not compile), the type of its
// specialization constants and its binding count. EngineCore::kernel takes a
// handle with a value of its Spec, so no module meets another kernel's constants.
template <class Spec>
struct Shader {
  spirv::Module module;
  uint32_t bindings;
};

// A family's module for a format (a weight format, or the KV cache's for the
// attention kernels); a format the build compiled no variant of is an internal
// error (the deployment's formats are checked against the engine's long before).
template <class Spec>
Shader<Spec> variant_of(std::optional<spirv::Module> module, const char* family, Format f, uint32_t bindings) {
  if (!module) throw Error(std::string("internal: no ") + family + " kernel for " + std::string(format_name(f)));
  return {*module, bindings};
}
inline Shader<Embed> embed(Format f) { return variant_of<Embed>(spirv::embed(f), "embed", f, kEmbedBindings); }
inline Shader<Convert> convert(Format f) {
  return variant_of<Convert>(spirv::convert(f), "convert", f, kConvertBindings);
}
inline Shader<MatVec> matvec(Format f) { return variant_of<MatVec>(spirv::matvec(f), "matvec", f, kMatVecBindings); }
// matvec on integer dot products (block formats only: matvec_dot_takes).
inline Shader<MatVec> matvec_dot(Format f) {
  return variant_of<MatVec>(spirv::matvec_dot(f), "matvec_dot", f, kMatVecBindings);
}
inline Shader<Linear> matmul(Format f) { return variant_of<Linear>(spirv::matmul(f), "matmul", f, kLinearBindings); }
inline Shader<LinearCoop> matmul_coop(Format f) {
  return variant_of<LinearCoop>(spirv::matmul_coop(f), "matmul_coop", f, kLinearBindings);
}
inline Shader<LinearCoopSplitK> matmul_coop_splitk(Format f) {
  return variant_of<LinearCoopSplitK>(spirv::matmul_coop_splitk(f), "matmul_coop_splitk", f, kLinearSplitKBindings);
}
inline Shader<AttnPrep> attn_prep(Format kv) {
  return variant_of<AttnPrep>(spirv::attn_prep(kv), "attn_prep", kv, kAttnPrepBindings);
}
inline Shader<Attention> attention(Format kv) {
  return variant_of<Attention>(spirv::attention(kv), "attention", kv, kAttentionBindings);
}
inline Shader<AttentionTiled> attention_tiled(Format kv) {
  return variant_of<AttentionTiled>(spirv::attention_tiled(kv), "attention_tiled", kv, kAttentionTiledBindings);
}
inline Shader<AttentionCoop> attention_coop(Format kv) {
  return variant_of<AttentionCoop>(spirv::attention_coop(kv), "attention_coop", kv, kAttentionCoopBindings);
}
inline constexpr Shader<RmsNorm> kRmsNorm{spirv::Module::rmsnorm, kRmsNormBindings};
inline constexpr Shader<Geglu> kGeglu{spirv::Module::geglu, kGegluBindings};
inline constexpr Shader<LogitsMax> kLogitsMax{spirv::Module::logits_max, kLogitsMaxBindings};
inline constexpr Shader<Sample> kSample{spirv::Module::sample, kSampleBindings};
inline constexpr Shader<Logprobs> kLogprobs{spirv::Module::logprobs, kLogprobsBindings};
inline constexpr Shader<CheckFinite> kCheckFinite{spirv::Module::check_finite, kCheckFiniteBindings};

}  // namespace unicorn::kernels
