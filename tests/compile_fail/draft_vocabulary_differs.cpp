// expect: unicorn: the draft's vocabulary is not the model's
// expect-also: draft_vocabulary_differs<262144, 512>
// The demo model (Gemma 3's 262144 tokens) drafted by a tiny test model of 512:
// the ids one proposes mean other tokens to the other.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Draft {
  static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3TinyK, u::schemes::kF32, 256, 32);
};
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Demo, u::schemes::kF32, 256, 32).with_draft(Draft::kConfig, 4);
};
static_assert(u::diag::check_deployment<Bad>());
