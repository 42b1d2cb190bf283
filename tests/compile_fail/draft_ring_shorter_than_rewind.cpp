// expect: unicorn: the draft takes back up to draft_max tokens a round, and its sliding-window
// expect-also: draft_ring_shorter_than_rewind<8, 4>
// The draft's sliding-window layers keep window + 4 positions: taking back 8
// would need keys the ring has overwritten.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Draft {
  static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3TinyK, u::schemes::kF32, 256, 4);
};
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::kF32, 256, 32).with_draft(Draft::kConfig, 8);
};
static_assert(u::diag::check_deployment<Bad>());
