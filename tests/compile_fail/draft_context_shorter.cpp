// expect: unicorn: the draft's max_context is shorter than the model's
// expect-also: draft_context_shorter_than_model<128, 256>
// The draft would run out of positions halfway through the model's context.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Draft {
  static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3TinyK, u::schemes::kF32, 128, 32);
};
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::kF32, 256, 32).with_draft(Draft::kConfig, 4);
};
static_assert(u::diag::check_deployment<Bad>());
