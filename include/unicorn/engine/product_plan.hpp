// unicorn/engine/product_plan.hpp — how a product runs on the matrix-vector
// kernel (matvec.comp): on integer dot products or in float, K split over how
// many workgroups, the row groups' shape and the token tiles. A value computed
// from the device's facts, the tuning and what the pass asks, apart from
// recording: Recorder::linear (engine/ops.hpp) emits what it says, and tests
// compute a GPU's choices without one.
#pragma once

#include <algorithm>
#include <cstdint>

#include "unicorn/engine/kernels.hpp"
#include "unicorn/engine/options.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/quant/formats.hpp"

namespace unicorn::detail {

// What a pass asks of one product.
struct MatVecAsk {
  Format format;
  uint32_t in_features, out_features;  // K, M
  uint32_t tokens;           // token rows a workgroup takes (a step's streams, a pass's logit rows)
  bool one_token_order;      // the rows must sum as a one-token step does (a verify pass)
  bool pair;                 // gate and up in one kernel
  uint32_t slice_capacity;   // partial sums the output can hold (its consumer adds them)
};

struct MatVecPlan {
  bool int_dot = false;  // matvec_dot: the inputs as bytes, integer dot products
  uint32_t splits = 1;   // K over this many workgroups, as partial sums
  uint32_t rows = 1;     // output rows per row group (kernels::MatVec::rows_per_group)
  uint32_t lanes = 1;    // lanes per row group
  uint32_t unroll = 1;   // blocks per lane per pass
  uint32_t tokens = 1;   // token rows per workgroup
  uint32_t tile = 1;     // token rows per pass over the weights
  uint32_t rows_per_workgroup() const { return rows * 128 / lanes; }  // 128-lane workgroups
};

// int_dot_enabled: whether the engine takes integer dot products at all
// (the device has them and EngineOptions allow them).
inline MatVecPlan plan_matvec(const gpu::DeviceInfo& device, const Tuning& tuning, bool int_dot_enabled,
                              const MatVecAsk& ask) {
  const uint32_t K = ask.in_features, M = ask.out_features, sg = device.subgroup_size;
  const uint32_t accumulators = ask.pair ? 2 : 1;
  const bool cpu = device.cpu();
  MatVecPlan p;
  p.tokens = ask.tokens;
  // Integer dot products and K splits as a one-token step chooses them where
  // the rows must sum as it does; a batch's choices otherwise.
  const uint32_t choice_tokens = ask.one_token_order ? 1 : ask.tokens;
  const uint32_t dot_splits =
      choice_tokens == 1 ? kernels::matvec_dot_splits(K, tuning.matvec_dot_split_in_features, ask.slice_capacity) : 1;
  p.int_dot = int_dot_enabled &&
              kernels::matvec_dot_takes(ask.format, K, choice_tokens, device.max_shared_memory, dot_splits);
  p.splits = p.int_dot ? dot_splits : 1;
  p.rows = tuning.matvec_rows;
  p.lanes = tuning.matvec_lanes;
  if (!p.lanes || !is_block_quantized(ask.format))
    p.lanes = p.int_dot ? kernels::kMatVecDotLanes : kernels::matvec_lanes(ask.format, K, M, p.rows, sg, cpu);
  if (!kernels::matvec_shape_ok(p.lanes, p.rows * accumulators, sg))
    p.rows = kernels::kMatVecRows, p.lanes = kernels::matvec_lanes(ask.format, K, M, p.rows, sg, cpu);
  // Long rows split over workgroups: more rows share each workgroup's inputs
  // where enough workgroups remain.
  const uint32_t split_rows = tuning.matvec_dot_split_rows;
  if (p.splits > 1 && split_rows && kernels::matvec_shape_ok(p.lanes, split_rows * accumulators, sg) &&
      kernels::matvec_dot_split_rows_fit(M, p.splits, split_rows, p.lanes, device.multiprocessors))
    p.rows = split_rows;
  p.tile = std::max(1u, std::min(ask.tokens, tuning.batch_tile));
  if (ask.tokens > 1) {
    const uint32_t batch_rows = std::max(1u, tuning.batch_accumulators / accumulators);
    if (kernels::matvec_shape_ok(p.lanes, batch_rows * accumulators, sg)) p.rows = batch_rows;
  }
  p.unroll = tuning.matvec_unroll == 2 ? 2 : 1;
  return p;
}

}  // namespace unicorn::detail
