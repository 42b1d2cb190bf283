// unicorn/layout/budget.hpp — bytes per pool and tensor group, computed from
// the static layout at compile time (kBudgetOf<D>) and, from the same code, at
// run time by the engine before it allocates anything.
//
// Each part's bytes rounded up to the 256-byte binding alignment (what the slabs
// hold). The layout already holds every stream's KV cache
// (DeploymentConfig::streams); the activations are one set for prefill
// passes and, with several streams, a smaller one for the decode steps, whose
// rows are the step's streams (detail::decode_lane_slot). A deployment with an
// image encoder (DeploymentConfig::vision) adds its weights and activations
// (layout/vision_budget.hpp) to the pools they live in. A deployment with a
// draft (DeploymentConfig::draft, speculative decoding) adds the draft's whole
// budget, pool by pool as the draft's placement puts it, at compile time
// (kBudgetOf<D>): the two engines share one device (engine.hpp).
#pragma once

#include <array>
#include <cstdint>

#include "unicorn/config/deployment.hpp"
#include "unicorn/layout/layout.hpp"
#include "unicorn/layout/vision_budget.hpp"

namespace unicorn {

struct PoolBudget {
  std::array<uint64_t, kGroupCount> group_bytes{};
  uint64_t vision_bytes = 0;  // the image encoder's weights and activations here
  uint64_t draft_bytes = 0;   // the draft engine's weights, KV cache and activations here

  constexpr uint64_t total() const {
    uint64_t n = vision_bytes + draft_bytes;
    for (uint64_t b : group_bytes) n += b;
    return n;
  }
  // The first group with bytes here (the one an error message names).
  constexpr Group first_group() const {
    for (Group g : kGroups)
      if (group_bytes[size_t(g)]) return g;
    return Group::Embeddings;
  }
};

struct Budget {
  std::array<PoolBudget, kPoolCount> pools{};

  constexpr const PoolBudget& operator[](Pool p) const { return pools[size_t(p)]; }
  constexpr uint64_t need(Pool p) const { return pools[size_t(p)].total(); }
};

constexpr Budget placement_budget(const DeploymentConfig& c, const LayoutView& L) {
  Budget b;
  for (const TensorSlot& t : L.tensors) {
    uint64_t bytes = 0;
    for (const TensorPart& p : L.parts_of(t)) bytes += detail::align_up(p.bytes, kBindingAlign);
    b.pools[size_t(t.pool)].group_bytes[size_t(group_of(t.role))] += bytes;
  }
  uint64_t acts = 0;
  for (const ActivationSlot& a : L.activations) acts += a.bytes;
  if (c.streams > 1)
    for (size_t a = 0; a < L.activations.size(); ++a)
      acts += detail::decode_lane_slot(c, Act(a), L.activations[a]).bytes;
  b.pools[size_t(L.activation_pool)].group_bytes[size_t(Group::Activations)] += acts;
  const VisionBudget v = vision_budget(c);
  b.pools[size_t(c.placement.pool_of(Group::Embeddings, -1))].vision_bytes += v.weights;
  b.pools[size_t(L.activation_pool)].vision_bytes += v.activations;
  return b;
}

template <Deployment D>
constexpr Budget budget_of();

// The budget of deployment D, computed once at compile time: its draft's in
// draft_bytes where it has one.
template <Deployment D>
inline constexpr Budget kBudgetOf = budget_of<D>();

template <Deployment D>
constexpr Budget budget_of() {
  Budget b = placement_budget(D::kConfig, kLayoutOf<D>.view());
  if constexpr (D::kConfig.has_draft())
    for (Pool p : kPools) b.pools[size_t(p)].draft_bytes += kBudgetOf<DraftOf<D>>.need(p);
  return b;
}

}  // namespace unicorn
