// expect-compiles
// Positive control of the placement checks: every experiment in configs/ and
// each profile with a placement that fits pass check_deployment, and the
// default (no .on(), no .placed()) is "everything in Vram" on the unbounded
// generic profile.
#include <unicorn/layout/diag.hpp>

#include "../../configs/placement_experiments.hpp"

namespace u = unicorn;
namespace e = unicorn::experiments;

static_assert(u::diag::check_deployment<e::Gemma3_27B_Q4_0_Phoenix_AllWeightsInGtt>());
static_assert(u::diag::check_deployment<e::Gemma3_27B_Q4_0_Phoenix16G_FfnInGtt>());
static_assert(u::diag::check_deployment<e::Gemma3_1B_Q4_0_Phoenix2G_AllInVram>());
static_assert(u::diag::check_deployment<e::Gemma3_27B_Q4_0_Phoenix12G_FfnSplit>());

struct Default {
  static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3_27B, u::schemes::kF32, 131072);
};
static_assert(Default::kConfig.placement == u::placement::everything_in(u::Pool::Vram));
static_assert(Default::kConfig.hardware.capacity_of(u::Pool::Vram) == u::kUnbounded);
static_assert(u::diag::check_deployment<Default>());

struct Strix12B {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_12B, u::schemes::kQ4_0_QAT, 32768)
          .on(u::profiles::StrixPoint<u::GiB(16)>{})
          .placed(u::placement::Ffn<u::Pool::Gtt>{});
};
static_assert(u::diag::check_deployment<Strix12B>());

struct H100_27B {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_27B, u::schemes::kQ8_0, 32768).on(u::profiles::H100<>{}).with_streams(4);
};
static_assert(u::diag::check_deployment<H100_27B>());

struct Discrete4B {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_4B, u::schemes::kQ4_0_QAT, 32768)
          .on(u::profiles::DiscreteGpu<u::GiB(8)>{})
          .placed(u::placement::Weights<u::Pool::Gtt>{});
};
static_assert(u::diag::check_deployment<Discrete4B>());

// A fully custom per-layer list: the first 3 tiny layers' FFN in Gtt.
constexpr std::array<u::LayerPools, 6> kTinyLayers{{{.ffn = u::Pool::Gtt},
                                                    {.ffn = u::Pool::Gtt},
                                                    {.ffn = u::Pool::Gtt},
                                                    {},
                                                    {},
                                                    {}}};
struct TinyPerLayer {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::kQ8_0, 256, 32)
          .on(u::profiles::Lavapipe<>{})
          .placed(u::placement::per_layer(kTinyLayers));
};
static_assert(TinyPerLayer::kConfig.placement.pool_of(u::Group::Ffn, 2) == u::Pool::Gtt);
static_assert(TinyPerLayer::kConfig.placement.pool_of(u::Group::Ffn, 3) == u::Pool::Vram);
static_assert(TinyPerLayer::kConfig.placement.segment_count == 1);
static_assert(u::diag::check_deployment<TinyPerLayer>());
// Slabs never mix pools.
static_assert([] {
  const auto& L = u::kLayoutOf<TinyPerLayer>;
  for (const auto& t : L.tensors)
    for (const auto& p : L.view().parts_of(t))
      if ((t.arena == u::Arena::Weights ? L.weight_slab_pools[p.slab] : L.kv_slab_pools[p.slab]) != t.pool)
        return false;
  return true;
}());
