// expect: unicorn: the image encoder cuts its image_size x image_size input into patch x patch
// expect: squares, so image_size must be a multiple of patch
// expect-also: vision_patches_do_not_tile_image<66, 4>
// An encoder of 66-pixel images cut into 4-pixel patches leaves a 2-pixel strip.
#include <unicorn/layout/diag.hpp>

constexpr unicorn::VisionDims kOdd = [] {
  unicorn::VisionDims v = unicorn::kGemma3SiglipTiny;
  v.image_size = 66;
  return v;
}();
struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(unicorn::kGemma3Tiny, unicorn::schemes::kF32, 256, 32).with_vision(kOdd);
};
static_assert(unicorn::diag::check_deployment<Bad>());
