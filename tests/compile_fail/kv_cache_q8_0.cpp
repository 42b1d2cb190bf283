// expect: unicorn: the KV cache must be F16 or F32 (no attention kernel reads a block format); set
// expect: the scheme's kv_cache to Format::F16, or Format::F32 for reference checks
// Q8_0 weights are fine; a Q8_0 KV cache is not (no attention kernel reads it).
#include <unicorn/layout/diag.hpp>

struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig = unicorn::make_deployment(
      unicorn::kGemma3Tiny, unicorn::schemes::all(unicorn::Format::Q8_0, unicorn::Format::Q8_0),
      256, 32);
};
static_assert(unicorn::diag::check_deployment<Bad>());
