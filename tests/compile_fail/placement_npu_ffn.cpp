// expect: unicorn: NpuSram can hold attention weights only
// expect-also: npu_cannot_run_this_tensor_kind<unicorn::Group::Ffn, 60160>
// FFN weights of one tiny layer in NPU SRAM on Phoenix: they would fit, but no
// NPU kernel of this design runs an FFN.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::kQ8_0, 256, 32)
          .on(u::profiles::Phoenix<u::GiB(1)>{})
          .placed(u::placement::everything_in(u::Pool::Vram)
                      .with(u::Group::Ffn, u::Layers{0, 1}, u::Pool::NpuSram));
};
static_assert(u::diag::check_deployment<Bad>());
