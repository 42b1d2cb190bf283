// expect: unicorn: the NpuSram pool overflows: the NPU's on-chip memory holds a few MiB
// expect-also: npu_sram_overflow<37202944, 3932160>
// One layer's attention weights of Gemma 3 27B Q4_0 (35.5 MiB) in Phoenix's NPU
// SRAM (3.75 MiB): reported as an overflow, before "NPU kernels not built".
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_27B, u::schemes::kQ4_0_QAT, 32768)
          .on(u::profiles::Phoenix<u::GiB(16)>{})
          .placed(u::placement::Attention<u::Pool::Vram>::Embeddings<u::Pool::Vram>::Ffn<u::Pool::Gtt>::kPlacement
                      .with(u::Group::Attention, u::Layers{0, 1}, u::Pool::NpuSram));
};
static_assert(u::diag::check_deployment<Bad>());
