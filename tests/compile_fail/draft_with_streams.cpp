// expect: unicorn: the draft deployment must have one stream
// expect-also: draft_with_several_streams<4>
// A server's deployment (4 slots) as the draft: it drafts on its stream 0 only.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Draft {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3TinyK, u::schemes::kF32, 256, 32).with_streams(4);
};
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::kF32, 256, 32).with_draft(Draft::kConfig, 4);
};
static_assert(u::diag::check_deployment<Bad>());
