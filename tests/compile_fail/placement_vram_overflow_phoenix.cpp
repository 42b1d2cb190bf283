// expect: unicorn: the Vram pool overflows: the placement needs more bytes in Vram than the
// expect: hardware profile has (template arguments: bytes needed, bytes available)
// expect-also: vram_overflow<20941362176, 536870912>
// Gemma 3 27B Q4_0, everything in Vram, on a Phoenix laptop whose BIOS carve-out
// is the smallest (512 MiB): 19 GiB of weights, KV cache and activations.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_27B, u::schemes::kQ4_0_QAT, 32768)
          .on(u::profiles::Phoenix<u::MiB(512)>{})
          .placed(u::placement::everything_in(u::Pool::Vram));
};
static_assert(u::diag::check_deployment<Bad>());
