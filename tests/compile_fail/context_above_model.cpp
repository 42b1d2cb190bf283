// expect: unicorn: max_context must be between 1 and the model's trained context
// expect: (ModelDims::max_context); lower the deployment's max_context
// The tiny model is trained for 256 positions; a 512-position cache asks for more.
#include <unicorn/layout/diag.hpp>

struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(unicorn::kGemma3Tiny, unicorn::schemes::kF32, 512, 32);
};
static_assert(unicorn::diag::check_deployment<Bad>());
