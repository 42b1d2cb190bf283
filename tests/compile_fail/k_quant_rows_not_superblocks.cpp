// expect: unicorn: a block-quantized tensor's rows must hold whole blocks of its format
// expect-also: 1152, 256
// Q4_K_M on the 1B: its 1152-wide rows are 4.5 superblocks, and llama-quantize's
// fallback for them (Q5_0) is a format the engine does not run.
#include <unicorn/diag.hpp>

struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(unicorn::kGemma3_1B, unicorn::schemes::kQ4_K_M, 8192);
};
static_assert(unicorn::diag::check_deployment<Bad>());
