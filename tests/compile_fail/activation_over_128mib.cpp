// expect: unicorn: an activation buffer of one prefill chunk exceeds the 128 MiB every Vulkan
// expect: device can bind; lower prefill_chunk
// 27B's FFN gate for a 4096-token chunk: 4096 x 21504 floats = 336 MiB.
#include <unicorn/layout/diag.hpp>

struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(unicorn::kGemma3_27B, unicorn::schemes::kQ4_0_QAT, 8192, 4096);
};
static_assert(unicorn::diag::check_deployment<Bad>());
