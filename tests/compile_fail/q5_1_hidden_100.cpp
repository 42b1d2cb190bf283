// expect: unicorn: a block-quantized tensor's rows must hold whole blocks of its format
// expect-also: 7, 100, 32
// Q5_1 (ggml type 7) packs 32 weights per block; a 100-wide row is 3.125
// blocks. Unlike the K-quants, llama-quantize has no fallback for Q5_1 either
// (src/llama-quant.cpp, tensor_type_fallback: "no tensor type fallback is
// defined"), so no file of this scheme and shape exists.
#include <unicorn/layout/diag.hpp>

constexpr unicorn::ModelDims bad_model() {
  auto m = unicorn::kGemma3Tiny;
  m.hidden = 100;
  return m;
}
struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(bad_model(), unicorn::schemes::kQ5_1, 256, 32);
};
static_assert(unicorn::diag::check_deployment<Bad>());
