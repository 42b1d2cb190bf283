// expect: unicorn: head_dim must be even (RoPE rotates pairs) and at most 256 (the attention
// expect: kernel keeps a query head in shared memory)
// A 512-wide head does not fit the attention kernel's shared-memory query.
#include <unicorn/layout/diag.hpp>

constexpr unicorn::ModelDims bad_model() {
  auto m = unicorn::kGemma3Tiny;
  m.head_dim = 512;
  return m;
}
struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(bad_model(), unicorn::schemes::kF32, 256, 32);
};
static_assert(unicorn::diag::check_deployment<Bad>());
