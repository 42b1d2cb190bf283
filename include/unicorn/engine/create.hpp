// unicorn/engine/create.hpp — EngineCore's creation: the run-time layout
// checked against the compiled one and the device's limits, the pools against
// the device's heaps, the buffers allocated pool by pool, the lanes, and the
// passes recorded once; and what it all occupies (device_memory).
#pragma once

#include "unicorn/engine/core.hpp"

namespace unicorn::detail {

UNICORN_DECL EngineCore::EngineCore(gpu::Context& ctx, const DeploymentConfig& config, LayoutView compiled,
                                     const EngineOptions& options)
    : ctx_(ctx),
      cfg_(config.with_streams(checked_streams(config, options.streams))),
      kv_context_(checked_context(config, options.context)),
      run_layout_(std::in_place, cfg_.with_context(kv_context_)),
      layout_(run_layout_->view()),
      kernels_(ctx.kernel_cache(options.pipeline_cache)),
      sets_(ctx),
      tuning_(with_device_facts(options.tuning, ctx.info())),
      tensor_units_(ctx.info().coopmat && fp16_products(options.products, config.scheme)),
      int_dot_(options.products != Products::fp32 &&
               (options.tuning.matvec_int_dot == Tuning::IntDot::WhereSupported     ? ctx.info().int_dot
                : options.tuning.matvec_int_dot == Tuning::IntDot::WhereAccelerated ? ctx.info().int_dot_accelerated
                                                                                    : false)) {
  check_against_compiled(compiled, config);
  check_device_limits();
  check_pools_fit();
  const LayoutView& layout = layout_;
  allocate_weights();
  allocate_by_pool(layout.kv_slab_bytes, layout.kv_slab_pools, kv_sets_, kv_slabs_, "the KV cache");
  if (cfg_.streams == 0 || cfg_.streams > std::min(cfg_.prefill_chunk, layout.logit_rows))
    throw Error("engine: " + std::to_string(cfg_.streams) + " streams; a step has rows for 1 to " +
                std::to_string(std::min(cfg_.prefill_chunk, layout.logit_rows)));
  std::vector<ActivationSlot> chunk_acts(layout.activations.begin(), layout.activations.end());
  if (cfg_.streams == 1) {
    prefill_lane_.emplace(ctx, cfg_, chunk_acts, layout.activation_pool, cfg_.prefill_chunk, 0, "");
  } else {
    std::vector<ActivationSlot> step_acts;
    for (size_t a = 0; a < chunk_acts.size(); ++a)
      step_acts.push_back(detail::decode_lane_slot(cfg_, Act(a), chunk_acts[a]));
    prefill_lane_.emplace(ctx, cfg_, chunk_acts, layout.activation_pool, cfg_.prefill_chunk, 1, " of prefill");
    decode_lane_.emplace(ctx, cfg_, step_acts, layout.activation_pool, std::max(cfg_.streams, cfg_.draft_max + 1), 0,
                         " of decode steps");
  }
  record_passes();
}

UNICORN_DECL void EngineCore::allocate_weights() {
  allocate_by_pool(layout_.weight_slab_bytes, layout_.weight_slab_pools, weight_sets_, weight_slabs_, "weights");
}

UNICORN_DECL void EngineCore::record_passes() {
  prefill_ = record_forward(cfg_.prefill_chunk, 1, PassKind::Prefill);
  decode_ = record_forward(1, 1, PassKind::Decode);
  if (cfg_.streams > 1) {
    // With tensor units, steps of many streams run their products there and
    // steps of a few keep the matrix-vector kernels (batch_pass()).
    const bool tensor_units = tensor_units_ && kernels::kSplitKFromStreams <= cfg_.streams;
    batch_ = record_forward(cfg_.streams, cfg_.streams, tensor_units ? PassKind::DecodeSplitK : PassKind::Decode);
    // Steps of up to kSplitKSmallTokens streams on the tile of that many
    // tokens, in a pass of that many rows (no workgroups for rows it never
    // has). A row's sums are the same on either tile (the same k order; the
    // model test holds them bit for bit).
    if (tensor_units && cfg_.streams > kernels::kSplitKSmallTokens)
      batch_small_ = record_forward(kernels::kSplitKSmallTokens, kernels::kSplitKSmallTokens,
                                    PassKind::DecodeSplitK, kernels::kSplitKSmallTokens);
  }
  if (cfg_.draft_max > 0) verify_ = record_forward(cfg_.draft_max + 1, cfg_.draft_max + 1, PassKind::Verify);
  kernels_->save();  // the next start reads these pipelines from disk
}

UNICORN_DECL void EngineCore::hold_embedding_as(Format format) {
  if (format == cfg_.scheme.embedding) return;
  if (!cfg_.scheme.takes_embedding(format))
    throw Error("internal: an engine whose LM head is a " + std::string(format_name(cfg_.scheme.lm_head)) +
                " copy holds its embedding in " + std::string(format_name(cfg_.scheme.embedding)) + " only");
  for (uint32_t s = 0; s < cfg_.streams; ++s) check_not_in_flight(s, "a new embedding format");
  const Format before = cfg_.scheme.embedding;
  const auto lay_out = [&](Format f) {
    // The passes and their descriptor sets name the old buffers: all go first,
    // and the old weights before the new are allocated (the peak is one set).
    prefill_.reset(), decode_.reset(), batch_.reset(), batch_small_.reset(), verify_.reset();
    prefill_many_logits_.reset(), prefill_all_logits_.reset();
    sets_.clear();
    weight_slabs_.clear();
    weight_sets_ = {};
    cfg_.scheme = cfg_.scheme.with_embedding(f);
    run_layout_.emplace(cfg_.with_context(kv_context_));
    layout_ = run_layout_->view();
    check_pools_fit();
    allocate_weights();
    record_passes();
  };
  try {
    lay_out(format);
  } catch (const std::exception&) {
    lay_out(before);  // what fitted before fits again: the engine stays usable, and the error is the new format's
    throw;
  }
}

UNICORN_DECL DeviceMemory EngineCore::device_memory() const {
  DeviceMemory m;
  for (Pool p : kPools) {
    m.pools[size_t(p)].weights = weight_sets_[size_t(p)].bytes();
    m.pools[size_t(p)].kv_cache = kv_sets_[size_t(p)].bytes();
  }
  for (const Lane* lane : {&*prefill_lane_, decode_lane_ ? &*decode_lane_ : nullptr}) {
    if (!lane) continue;
    m.pools[size_t(layout_.activation_pool)].activations += lane->acts.bytes();
    m.pools[size_t(Pool::Vram)].activations += lane->partials.bytes();  // DeviceLocal
    m.host_visible += lane->host.bytes() + (lane->logits_readback ? lane->logits_readback->bytes() : 0);
  }
  return m;
}

UNICORN_DECL EngineCore::Lane::Lane(gpu::Context& ctx, const DeploymentConfig& cfg,
                                   std::span<const ActivationSlot> acts, Pool pool, uint32_t rows_per_step,
                                   uint32_t queue, const std::string& what)
    : stream(ctx, queue) {
  std::vector<uint64_t> act_bytes;
  for (const auto& a : acts) act_bytes.push_back(a.bytes);
  this->acts = gpu::BufferSet(ctx, act_bytes, gpu::memory_kind_of(pool), "activations" + what);
  const uint64_t logit_rows = acts[size_t(Act::Logits)].rows;
  uint64_t host_sizes[kHostBuffers];
  host_sizes[kStepRows] = sizeof(StepHeader) + sizeof(StepRow) * uint64_t(std::max(rows_per_step, cfg.streams));
  host_sizes[kChosen] = 4 * logit_rows;
  host_sizes[kSamplerRows] = kSamplerRowBytes * logit_rows;
  host_sizes[kLogprobs] = 4ull * kLogprobRowFloats * logit_rows;
  host_sizes[kMasks] = 4ull * token_mask_words(cfg.model.vocab) * cfg.streams;
  host = gpu::BufferSet(ctx, host_sizes, gpu::MemoryKind::HostVisible, "host buffers" + what);
  const uint64_t partial_bytes[] = {8ull * kernels::kLogitParts * logit_rows};  // the most parts any vocabulary takes
  partials = gpu::BufferSet(ctx, partial_bytes, gpu::MemoryKind::DeviceLocal, "sampler partials" + what);
  // Zeroed once; each waiting dispatch sets its counter back to 0.
  const uint64_t counter_bytes[] = {4ull * wait_counters(cfg)};
  counters = gpu::BufferSet(ctx, counter_bytes, gpu::MemoryKind::DeviceLocal, "wait counters" + what);
  stream.run_once([&](vk::CommandBuffer cb) { cb.fillBuffer(counters[0].handle, 0, VK_WHOLE_SIZE, 0); },
                  gpu::Submission::Upload);
}

UNICORN_DECL void EngineCore::check_pools_fit() const {
  const Budget budget = placement_budget(cfg_, layout_);
  std::vector<gpu::PoolNeed> needs;
  for (Pool pool : kPools) {
    const uint64_t bytes = budget.need(pool);
    if (!bytes) continue;
    const uint32_t type = gpu::storage_memory_type(ctx_, gpu::memory_kind_of(pool));
    needs.push_back({pool, bytes, ctx_.heap_of_type(type)});
  }
  const auto heaps = ctx_.heaps();
  gpu::check_pools_fit(ctx_.info().name, needs, heaps);
}

UNICORN_DECL void EngineCore::allocate_by_pool(std::span<const uint64_t> slab_bytes, std::span<const Pool> slab_pools,
                                              std::array<gpu::BufferSet, kPoolCount>& sets,
                                              std::vector<gpu::Buffer>& slabs, const std::string& what) {
  slabs.resize(slab_bytes.size());
  for (Pool pool : kPools) {
    std::vector<uint64_t> sizes;
    std::vector<size_t> index;
    for (size_t i = 0; i < slab_bytes.size(); ++i)
      if (slab_pools[i] == pool) {
        sizes.push_back(slab_bytes[i]);
        index.push_back(i);
      }
    if (sizes.empty()) continue;
    sets[size_t(pool)] = gpu::BufferSet(ctx_, sizes, gpu::memory_kind_of(pool),
                                        what + " in " + std::string(pool_name(pool)));
    for (size_t k = 0; k < index.size(); ++k) slabs[index[k]] = sets[size_t(pool)][k];
  }
}

UNICORN_DECL void EngineCore::check_against_compiled(const LayoutView& compiled,
                                                     const DeploymentConfig& compiled_config) const {
  const auto same = [](auto a, auto b) { return std::ranges::equal(a, b); };
  const auto same_act = [](const ActivationSlot& a, const ActivationSlot& b) {
    return a.bytes == b.bytes && a.rows == b.rows && a.slices == b.slices;
  };
  if (compiled.tensors.size() != layout_.tensors.size() ||
      !same(compiled.weight_slab_bytes, layout_.weight_slab_bytes) ||
      !std::ranges::equal(compiled.activations, layout_.activations, same_act) ||
      (kv_context_ == compiled_config.max_context && cfg_.streams == compiled_config.streams &&
       !same(compiled.kv_slab_bytes, layout_.kv_slab_bytes)))
    throw Error("internal: the engine's run-time layout differs from the compiled one beyond its KV cache");
}

UNICORN_DECL void EngineCore::check_device_limits() const {
  const auto& info = ctx_.info();
  if (info.max_storage_buffer_range < kMaxBindingBytes)
    throw Error("gpu: " + info.name + " binds at most " +
                std::to_string(info.max_storage_buffer_range) +
                " bytes per storage buffer; Vulkan guarantees 128 MiB");
  if (info.subgroup_size < 8 || info.subgroup_size > 128)
    throw Error("gpu: " + info.name + " has subgroups of " + std::to_string(info.subgroup_size) +
                " lanes; the kernels need 8 to 128");
  if (info.min_storage_buffer_offset_alignment > kBindingAlign)
    throw Error("gpu: " + info.name + " needs storage-buffer offsets aligned to " +
                std::to_string(info.min_storage_buffer_offset_alignment) + " bytes");
}

}  // namespace unicorn::detail
