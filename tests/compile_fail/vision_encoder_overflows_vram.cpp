// expect: unicorn: the text model fits, but with the image encoder (its weights counted at F16
// expect: and one image's activations) the pool overflows
// expect-also: vision_encoder_overflows_pool<unicorn::Pool::Vram, 4757494016, 4294967296, 1090965760>
// Gemma 3 4B Q4_0 with a 4K context fits a 4 GiB carve-out (3.4 GiB); its
// image encoder, about 0.8 GiB of F16 weights and 0.25 GiB of activations, does not.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_4B, u::schemes::kQ4_0_QAT, 4096)
          .on(u::profiles::Phoenix<u::GiB(4)>{})
          .placed(u::placement::everything_in(u::Pool::Vram))
          .with_vision(u::kGemma3Siglip);
};
static_assert(u::diag::check_deployment<Bad>());
