// expect: unicorn: the draft deployment has a draft of its own
// A chain of drafts: the middle model would have to verify for the top one and
// draft for it at once.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Smallest {
  static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3TinyK, u::schemes::kF32, 256, 32);
};
struct Middle {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3TinyK, u::schemes::kF32, 256, 32).with_draft(Smallest::kConfig, 4);
};
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::kF32, 256, 32).with_draft(Middle::kConfig, 4);
};
static_assert(u::diag::check_deployment<Bad>());
