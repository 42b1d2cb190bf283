// expect: unicorn: a block-quantized tensor's rows must hold whole blocks of its format
// expect: (32 elements; 256 for the K-quants and IQ4_XS); pick another format for this role or a
// expect: model whose hidden, heads*head_dim and ffn sizes are multiples of the block
// Q4_0 packs 32 weights per block; a 100-wide row is 3.125 blocks.
#include <unicorn/layout/diag.hpp>

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
