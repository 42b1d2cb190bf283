// expect: unicorn: the projector average-pools the square grid of patches into a square grid of
// expect: soft tokens, so tokens_per_image must be a square
// expect-also: vision_tokens_do_not_pool_patches<36, 16>
// 36 = 6 x 6 soft tokens, but 16 patches per side do not pool into 6 evenly.
#include <unicorn/layout/diag.hpp>

constexpr unicorn::VisionDims kOdd = [] {
  unicorn::VisionDims v = unicorn::kGemma3SiglipTiny;
  v.tokens_per_image = 36;
  return v;
}();
struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(unicorn::kGemma3Tiny, unicorn::schemes::kF32, 256, 64).with_vision(kOdd);
};
static_assert(unicorn::diag::check_deployment<Bad>());
