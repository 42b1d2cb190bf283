// expect: unicorn: the placement puts tensors in NpuSram, but the hardware profile has no NPU
// expect: (NpuSram holds 0 bytes)
// expect-also: npu_sram_on_a_machine_without_npu<6680576, 0>
// The NPU-offload plan (first 4 layers' attention in NPU SRAM) on an H100: no NPU.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_1B, u::schemes::kQ4_0_QAT, 32768)
          .on(u::profiles::H100<>{})
          .placed(u::placement::npu_attention_first_layers(4));
};
static_assert(u::diag::check_deployment<Bad>());
