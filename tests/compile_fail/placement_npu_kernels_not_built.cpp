// expect: unicorn: NpuSram placement fits, but the NPU attention kernels are not built in this
// expect: engine
// expect-also: npu_kernels_not_built<unicorn::Group::Attention, 40960, 3932160>
// The tiny model's first layer's attention (40 KiB) fits Phoenix's NPU SRAM, but
// there are no NPU kernels yet: the user's path, naming Engine<Bad>.
// In a build that compiles the engine's code once (unicorn/base/linkage.hpp), as
// ours does: the check is Engine's own, and the case takes 6.5 s, not 9.
#define UNICORN_SEPARATE_COMPILATION
#include <unicorn/engine.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::kQ8_0, 256, 32)
          .on(u::profiles::Phoenix<u::GiB(1)>{})
          .placed(u::placement::npu_attention_first_layers(1));
};
constexpr auto kContext = u::Engine<Bad>::kConfig.max_context;
