// expect: unicorn: an image's soft tokens and its two markers are prefilled in one chunk
// expect-also: image_longer_than_prefill_chunk<258, 128>
// A 128-token prefill chunk cannot hold one image's 258 tokens.
#include <unicorn/layout/diag.hpp>

struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(unicorn::kGemma3_4B, unicorn::schemes::kQ4_0_QAT, 8192, 128)
          .with_vision(unicorn::kGemma3Siglip);
};
static_assert(unicorn::diag::check_deployment<Bad>());
