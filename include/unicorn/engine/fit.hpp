// unicorn/engine/fit.hpp — how many streams (a server's slots) of a context
// the device's free memory holds, before an engine is created with them
// (EngineOptions::streams).
//
// A deployment compiles the most streams it may serve; the KV cache is
// allocated at start-up for the streams and context asked. This computes the
// run-time budget (layout/budget.hpp) for n streams, pool by pool, with the
// image encoder's and the draft engine's bytes, against each memory heap's
// free bytes (gpu::Context::heaps: VK_EXT_memory_budget where the driver has
// it), and takes the largest n that fits with headroom left over for what no
// budget counts (the lanes' host buffers and partial sums, pipelines, the
// driver's own).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "unicorn/config/deployment.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/memory.hpp"
#include "unicorn/layout/budget.hpp"
#include "unicorn/layout/layout.hpp"

namespace unicorn {

// What a heap keeps free beyond the budgets: a 32nd of its free bytes, and at
// least 256 MiB.
constexpr uint64_t fit_headroom(uint64_t available) { return std::max<uint64_t>(available / 32, MiB(256)); }

// Whether the pools' needs fit their heaps with fit_headroom to spare (pools
// on one heap are summed, as gpu::check_pools_fit sums them).
inline bool pools_fit_with_headroom(std::span<const gpu::PoolNeed> needs, std::span<const gpu::Context::Heap> heaps) {
  for (uint32_t h = 0; h < heaps.size(); ++h) {
    uint64_t need = 0;
    for (const gpu::PoolNeed& n : needs)
      if (n.heap == h) need += n.bytes;
    if (need && need + fit_headroom(heaps[h].available) > heaps[h].available) return false;
  }
  return true;
}

// The most streams, 1 to `most`, whose needs (needs_for(n): each pool's bytes
// and heap) fit `heaps`; 0 where not even one does. Needs grow with n, so a
// bisection finds it.
template <class NeedsFor>
uint32_t most_streams_that_fit(uint32_t most, NeedsFor&& needs_for, std::span<const gpu::Context::Heap> heaps) {
  uint32_t lo = 0, hi = most;  // lo fits (0 trivially); the answer is in [lo, hi]
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo + 1) / 2;
    const std::vector<gpu::PoolNeed> needs = needs_for(mid);
    if (pools_fit_with_headroom(needs, heaps))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

struct StreamsFit {
  uint32_t streams = 1;   // the most that fit, 1 to the compiled number (1 where none fits: its
                          // engine's creation then says by how much it does not, if it does not)
  bool fits = true;       // false: not even one stream fits with the headroom kept
  uint32_t compiled = 1;  // DeploymentConfig::streams
  uint64_t kv_bytes_per_stream = 0;  // the KV cache of one stream at the context asked
  uint64_t free_bytes = 0;           // of the heap that holds the KV cache, before the engine
};

// How many streams of `context` KV positions (0: the compiled context) a
// deployment's engine, its image encoder and its draft take on `ctx` now.
inline StreamsFit streams_that_fit(const gpu::Context& ctx, const DeploymentConfig& c, uint32_t context = 0) {
  const DeploymentConfig at = c.with_context(context ? std::min(context, c.max_context) : c.max_context);
  const auto heap_of = [&](Pool pool) {
    return ctx.heap_of_type(gpu::storage_memory_type(ctx, gpu::memory_kind_of(pool)));
  };
  // The draft's engine (one stream, the model's context where its own allows): its bytes do not
  // depend on the model's streams.
  Budget draft;
  if (c.has_draft()) {
    const DeploymentConfig d = c.draft->with_context(std::min(at.max_context, c.draft->max_context));
    const RunLayout layout(d);
    draft = placement_budget(d, layout.view());
  }
  const auto needs_for = [&](uint32_t n) {
    const DeploymentConfig s = at.with_streams(n);
    const RunLayout layout(s);
    const Budget b = placement_budget(s, layout.view());
    std::vector<gpu::PoolNeed> needs;
    for (Pool p : kPools)
      if (const uint64_t bytes = b.need(p) + draft.need(p)) needs.push_back({p, bytes, heap_of(p)});
    return needs;
  };
  const auto heaps = ctx.heaps();
  StreamsFit fit;
  fit.compiled = c.streams;
  const uint32_t most = most_streams_that_fit(c.streams, needs_for, heaps);
  fit.streams = std::max(1u, most);
  fit.fits = most > 0;
  const RunLayout one(at.with_streams(1));
  for (uint64_t b : one.kv_slab_bytes) fit.kv_bytes_per_stream += b;
  const uint32_t kv_heap = heap_of(at.placement.pool_of(Group::KvCache, -1));
  fit.free_bytes = kv_heap < heaps.size() ? heaps[kv_heap].available : 0;
  return fit;
}

}  // namespace unicorn
