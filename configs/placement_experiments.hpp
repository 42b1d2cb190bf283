// configs/placement_experiments.hpp — placement experiments: where a model's
// memory lives on a given machine. Each type builds into its own generator
// binary (configs/CMakeLists.txt); `<binary> --placement` prints its
// compile-time table of bytes per pool, and a placement that cannot fit does
// not compile (tests/compile_fail/placement_*.cpp).
//
// Phoenix is a Ryzen 7040/8040 laptop: Radeon 780M with a BIOS carve-out (the
// Vram pool; the first template argument) on 32 GiB of DDR5 (the rest is Gtt).
#pragma once

#include "unicorn/config/deployment.hpp"

namespace unicorn::experiments {

using profiles::Phoenix;
using placement::Attention;
using placement::Weights;

// Gemma 3 27B Q4_0 (Google's QAT GGUF: F16 embedding) with the smallest
// carve-out: every weight and the KV cache in Gtt; activations in the 512 MiB
// of Vram.
struct Gemma3_27B_Q4_0_Phoenix_AllWeightsInGtt {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3_27B, schemes::kQ4_0_QAT, 32768)
          .on(Phoenix<MiB(512)>{})
          .placed(Weights<Pool::Gtt>::KvCache<Pool::Gtt>{});
};

// The same model with a 16 GiB carve-out: embeddings (also the LM head),
// attention and the KV cache in Vram, the FFN weights (three quarters of the
// bytes) in Gtt.
struct Gemma3_27B_Q4_0_Phoenix16G_FfnInGtt {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3_27B, schemes::kQ4_0_QAT, 32768)
          .on(Phoenix<GiB(16)>{})
          .placed(Attention<Pool::Vram>::Embeddings<Pool::Vram>::Ffn<Pool::Gtt>{});
};

// Gemma 3 1B Q4_0 with a 2 GiB carve-out: everything in Vram.
struct Gemma3_1B_Q4_0_Phoenix2G_AllInVram {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3_1B, schemes::kQ4_0_QAT, 32768)
          .on(Phoenix<GiB(2)>{})
          .placed(placement::everything_in(Pool::Vram));
};

// A per-layer split (compiled by the compile-fail positive control, not built
// as a binary): 27B on a 12 GiB carve-out, the first 12 layers' FFN in Vram
// beside attention and embeddings, the other 50 layers' FFN in Gtt.
struct Gemma3_27B_Q4_0_Phoenix12G_FfnSplit {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3_27B, schemes::kQ4_0_QAT, 32768)
          .on(Phoenix<GiB(12)>{})
          .placed(placement::everything_in(Pool::Vram)
                      .with(Group::Ffn, Pool::Gtt)
                      .with(Group::Ffn, Layers{0, 12}, Pool::Vram));
};

}  // namespace unicorn::experiments
