// expect: unicorn: one image takes tokens_per_image soft tokens plus <start_of_image> and
// expect: <end_of_image> (template arguments: those tokens, max_context); raise max_context
// expect-also: image_longer_than_context<258, 200>
// Gemma 3's 256 soft tokens and two markers do not fit a 200-position cache.
#include <unicorn/layout/diag.hpp>

struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(unicorn::kGemma3_4B, unicorn::schemes::kQ4_0_QAT, 200, 200)
          .with_vision(unicorn::kGemma3Siglip);
};
static_assert(unicorn::diag::check_deployment<Bad>());
