// expect: unicorn: the verify pass checks draft_max + 1 rows in one pass, more than the
// expect: model's passes hold
// expect-also: verify_rows_do_not_fit<9, 8>
// 8 drafted tokens and the one after them are 9 rows; the model's passes have 8.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Draft {
  static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3TinyK, u::schemes::kF32, 256, 32);
};
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::kF32, 256, 8).with_draft(Draft::kConfig, 8);
};
static_assert(u::diag::check_deployment<Bad>());
