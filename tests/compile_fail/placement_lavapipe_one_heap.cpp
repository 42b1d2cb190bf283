// expect: unicorn: the Vram and Gtt pools overflow the one heap of system memory they share
// expect-also: vram_and_gtt_overflow_one_heap<20941362176, 17179869184>
// Lavapipe: Vram and Gtt are the same 16 GiB of system memory; each pool alone
// fits, together (27B Q4_0 split between them) they do not.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_27B, u::schemes::kQ4_0_QAT, 32768)
          .on(u::profiles::Lavapipe<u::GiB(16)>{})
          .placed(u::placement::Ffn<u::Pool::Gtt>{});
};
static_assert(u::diag::check_deployment<Bad>());
