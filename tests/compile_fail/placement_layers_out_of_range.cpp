// expect: unicorn: a placement segment names layers [first, last) outside the model's layers
// expect-also: placement_layers_out_of_range<20, 40, 26>
// Layers 20..39 of a 26-layer model.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_1B, u::schemes::kQ4_0_QAT, 32768)
          .placed(u::placement::everything_in(u::Pool::Vram)
                      .with(u::Group::Ffn, u::Layers{20, 40}, u::Pool::Gtt));
};
static_assert(u::diag::check_deployment<Bad>());
