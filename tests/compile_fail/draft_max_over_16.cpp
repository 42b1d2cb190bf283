// expect: unicorn: draft_max, the most tokens the draft proposes a round, must be between 1
// expect: and 16
// expect-also: draft_max_out_of_range<17, 16>
// 17 tokens a round: past the verify pass's compiled bound.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Draft {
  static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3TinyK, u::schemes::kF32, 256, 32);
};
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::kF32, 256, 32).with_draft(Draft::kConfig, 17);
};
static_assert(u::diag::check_deployment<Bad>());
