// expect: unicorn: Pool::Cpu would need a CPU path, and no inference op has a CPU implementation
// expect: in this engine
// expect-also: cpu_pool_needs_a_cpu_path<unicorn::Group::Embeddings, 603984384>
// The embedding table "in CPU memory": only a CPU gather could read it there.
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
struct Bad {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3_1B, u::schemes::kQ4_0_QAT, 32768)
          .placed(u::placement::Embeddings<u::Pool::Cpu>{});
};
static_assert(u::diag::check_deployment<Bad>());
