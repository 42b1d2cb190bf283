// expect: unicorn: the model fits, but with its draft (the draft's weights, KV cache and
// expect: activations, in the pools of its own placement) the pool overflows
// expect-also: draft_overflows_pool<unicorn::Pool::Vram, 4906557440, 4294967296, 1240029184>
// Gemma 3 4B Q4_0 with a 4K context fits a 4 GiB carve-out (3.4 GiB); with
// Gemma 3 1B beside it as its draft (1.2 GB with its own 4K-token KV cache), it does not.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Draft {
  static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3_1B, u::schemes::kQ4_0_QAT, 4096);
};
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_4B, u::schemes::kQ4_0_QAT, 4096)
          .on(u::profiles::Phoenix<u::GiB(4)>{})
          .placed(u::placement::everything_in(u::Pool::Vram))
          .with_draft(Draft::kConfig, 8);
};
static_assert(u::diag::check_deployment<Bad>());
