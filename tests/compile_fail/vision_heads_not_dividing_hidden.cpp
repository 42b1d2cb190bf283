// expect: unicorn: the image encoder's attention splits its hidden size over its heads, so hidden
// expect: must be a multiple of heads
// expect-also: vision_heads_do_not_divide_hidden<64, 3>
#include <unicorn/layout/diag.hpp>

constexpr unicorn::VisionDims kOdd = [] {
  unicorn::VisionDims v = unicorn::kGemma3SiglipTiny;
  v.heads = 3;
  return v;
}();
struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(unicorn::kGemma3Tiny, unicorn::schemes::kF32, 256, 32).with_vision(kOdd);
};
static_assert(unicorn::diag::check_deployment<Bad>());
