// expect: unicorn: a block-quantized tensor's rows must hold whole 32-element blocks; pick
// expect: F16/BF16/F32 for this role or a model whose hidden, heads*head_dim and ffn sizes are
// expect: multiples of 32
// Q4_0 packs 32 weights per block; a 100-wide row is 3.125 blocks.
#include <unicorn/diag.hpp>

constexpr unicorn::ModelDims bad_model() {
  auto m = unicorn::kGemma3Tiny;
  m.hidden = 100;
  return m;
}
struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(bad_model(), unicorn::schemes::kQ4_0, 256, 32);
};
static_assert(unicorn::diag::check_deployment<Bad>());
