// expect: unicorn: prefill_chunk must be between 1 and max_context tokens
// A prefill pass of zero tokens would never consume the prompt.
#include <unicorn/layout/diag.hpp>

struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig = {
      .model = unicorn::kGemma3Tiny, .scheme = unicorn::schemes::kF32, .max_context = 256,
      .prefill_chunk = 0};
};
static_assert(unicorn::diag::check_deployment<Bad>());
