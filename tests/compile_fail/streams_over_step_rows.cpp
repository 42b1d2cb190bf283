// expect: unicorn: streams must be between 1 and the rows of one step
// A batched decode step has one token row per stream, in activations sized for
// one prefill chunk (32 rows here): 40 streams do not fit.
#include <unicorn/layout/diag.hpp>

struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(unicorn::kGemma3Tiny, unicorn::schemes::kF32, 256, 32).with_streams(40);
};
static_assert(unicorn::diag::check_deployment<Bad>());
