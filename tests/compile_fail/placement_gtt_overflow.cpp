// expect: unicorn: the Gtt pool overflows: the placement needs more bytes in Gtt than the
// expect: hardware profile has (template arguments: bytes needed, bytes available)
// expect-also: gtt_overflow<20561734656, 16642998272>
// Every weight and the KV cache of Gemma 3 27B Q4_0 in Gtt, on a Phoenix laptop
// with 16 GiB of memory (512 MiB carve-out): 19 GiB asked of 15.5 GiB.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_27B, u::schemes::kQ4_0_QAT, 32768)
          .on(u::profiles::Phoenix<u::MiB(512), u::GiB(16)>{})
          .placed(u::placement::Weights<u::Pool::Gtt>::KvCache<u::Pool::Gtt>{});
};
static_assert(u::diag::check_deployment<Bad>());
