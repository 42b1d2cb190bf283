// unicorn/engine/options.hpp — what is chosen when an engine is created, as
// values (the library reads no environment for them;
// the tools fill these from flags, or from UNICORN_* variables through
// tools/tuning_env.hpp).
//
// The deployment type fixes everything the compile-time checks bound; these
// choose within it: how many streams and KV cache positions each stream gets
// (at most the compiled ones), where compiled pipelines are kept between runs, and the
// kernel shapes performance sweeps try.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iterator>
#include <optional>

#include "unicorn/engine/kernels.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/device_options.hpp"

namespace unicorn {

// Kernel shapes for performance sweeps (tools/matvec_sweep.sh, unicorn-bench);
// the defaults are the measured best. notes/tuning.md says what measured each
// one, and which knobs were deleted once their experiment was decided.
struct Tuning {
  // Decode's matrix-vector kernels: output rows per row group, lanes per row
  // group (0: kernels::matvec_lanes, per matrix), blocks per lane per pass.
  uint32_t matvec_rows = kernels::kMatVecRows;
  uint32_t matvec_lanes = 0;
  uint32_t matvec_unroll = kernels::kMatVecUnroll;
  // Decode's block-format matrices on matvec_dot (inputs as bytes, integer dot
  // products, kernels::matvec_dot_takes): where the device runs them in
  // hardware, wherever it has them (lavapipe emulates them), or nowhere.
  enum class IntDot : uint32_t { Never = 0, WhereSupported = 1, WhereAccelerated = 2 };
  IntDot matvec_int_dot = IntDot::WhereAccelerated;
  // One token's rows longer than this split K on matvec_dot (0: never).
  uint32_t matvec_dot_split_in_features = kernels::kMatVecDotSplitInFeatures;
  // Rows per row group of those split products (0: matvec_rows').
  uint32_t matvec_dot_split_rows = kernels::kMatVecDotSplitRows;
  // 1: a decode step's attention does attn_prep's work (q/k norm, RoPE, the
  // cache write) for its own heads, one dispatch and one barrier a layer
  // fewer; 0: attn_prep as its own dispatch, as prefill runs it.
  uint32_t decode_attention_prep = 1;
  // 1: a one-token decode step's output projections (o, down) are followed by
  // their add_norm with no barrier between them: the rmsnorm waits until the
  // product's workgroups have all counted themselves done (rmsnorm.comp's
  // WAIT), two barriers a layer fewer; 0: a barrier before each add_norm.
  uint32_t decode_norm_wait = 1;
  // 1: the same for the q, k and v products and the decode attention after
  // them (attention.comp's WAIT; with decode_attention_prep), a barrier a
  // layer fewer; 0: a barrier before attention.
  uint32_t decode_attention_wait = 1;
  // Batched decode on matvec: tokens per pass over the weights, accumulators per row group.
  uint32_t batch_tile = kernels::kMatVecBatchTile;
  uint32_t batch_accumulators = kernels::kMatVecBatchAccumulators;
  // Prefill's tensor-unit products: i forces kernels::kCoopTiles[i - 1] on
  // every matrix (0: kernels::coop_tile's choice); the workgroups of a wave
  // that choice assumes; the fewest steps of 32 k each split of K keeps.
  uint32_t coop_tile_index = 0;
  uint32_t coop_wave = 0;  // 0: the device's multiprocessors (gpu::DeviceInfo)
  uint32_t coop_split_steps = kernels::kCoopMinSplitSteps;
  // Batched steps on tensor units: i forces kernels::kSplitKTiles[i - 1] (0: kernels::splitk_tile);
  // the fewest steps of 32 k each subgroup keeps where a product splits K across workgroups.
  uint32_t splitk_tile_index = 0;
  uint32_t splitk_split_steps = kernels::kSplitKMinSteps;
  // Prefill attention: query rows of attention_tiled's tile (none: by chunk,
  // kernels::attention_tiled_rows; 0: attention.comp), and the most rows and
  // keys of attention_coop's.
  std::optional<uint32_t> attention_rows;
  uint32_t attention_coop_rows = 64;
  uint32_t attention_coop_keys = 64;
  // attention.comp: query heads a workgroup (0: kernels::attention_query_heads' rule).
  uint32_t attention_query_heads = 0;

  kernels::CoopTile coop_tile(uint32_t tokens, uint32_t rows, bool x_half, uint32_t max_splits) const {
    if (!coop_tile_index || coop_tile_index > std::size(kernels::kCoopTiles))
      return kernels::coop_tile(tokens, rows, x_half, coop_wave, max_splits);
    kernels::CoopTile t = kernels::kCoopTiles[coop_tile_index - 1];
    t.x_half = x_half;
    return t;
  }
  kernels::SplitKTile splitk_tile(uint32_t tokens) const {
    if (splitk_tile_index && splitk_tile_index <= std::size(kernels::kSplitKTiles))
      return kernels::kSplitKTiles[splitk_tile_index - 1];
    return kernels::splitk_tile(tokens);
  }
};

// The tuning with what it leaves to the device filled in from the device's
// facts: a wave of tensor-unit workgroups is its multiprocessors.
inline Tuning with_device_facts(Tuning t, const gpu::DeviceInfo& device) {
  if (t.coop_wave == 0) t.coop_wave = device.multiprocessors;
  return t;
}

// The arithmetic of prefill's products and attention (and of batched decode
// steps' products) where the device has tensor units
// (gpu::DeviceInfo::coopmat), which take fp16 operands and accumulate in fp32.
// Decode's matrix-vector products are fp32, except that block-format matrices take
// their inputs as bytes (q8, llama.cpp's MMVQ) where the device has hardware
// integer dot products (Tuning::matvec_int_dot), unless products is fp32.
enum class Products : uint32_t {
  // fp32 for a deployment whose matrices are all F32 (a reference deployment
  // asks for its precision: within 1e-5 of transformers on every device);
  // fp16 operands for every other scheme, whose weights are no finer than fp16.
  by_scheme,
  fp16,  // fp16 operands on tensor units wherever the device has them (fast F32)
  fp32,  // fp32 tiles everywhere, tensor units unused; decode's inputs stay floats (no matvec_dot)
};

struct EngineOptions {
  // KV cache positions per stream; 0: the deployment's default
  // (DeploymentConfig::context_by_default: its max_context unless it names a
  // shorter default, as Gemma 3's 128K engines do).
  // Global layers keep one per position of the context; the sliding-window
  // layers keep a ring of window + prefill_chunk positions, or the context
  // where it is shorter (layout.hpp). More than the compiled context is an error.
  uint32_t context = 0;
  // Streams, each with a KV cache of `context` positions (a server's slots);
  // 0: the compiled DeploymentConfig::streams, which bounds it. Only the KV
  // cache and the batched pass shrink with it; engine/fit.hpp's
  // streams_that_fit says how many the device's free memory holds.
  uint32_t streams = 0;
  // Where compiled pipelines are kept between runs (gpu/pipeline_cache.hpp);
  // empty: nowhere, every start compiles them. The tools pass
  // tools/tuning_env.hpp's pipeline_cache_dir() ($UNICORN_PIPELINE_CACHE, else
  // $XDG_CACHE_HOME/unicorn, else ~/.cache/unicorn).
  std::filesystem::path pipeline_cache;
  Products products = Products::by_scheme;
  Tuning tuning;
  // The device an engine opens when it is given none (AnyEngine's constructor
  // without a gpu::Context): validation, tensor units, which device. The tools
  // pass tools/tuning_env.hpp's device_from_env().
  gpu::DeviceOptions device;
};

}  // namespace unicorn
