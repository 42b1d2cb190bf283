// expect: unicorn: grouped-query attention needs the query heads to be a multiple of the key/value
// expect: heads; fix `heads` or `kv_heads` in the ModelDims
// 6 query heads cannot share 4 key/value heads evenly.
#include <unicorn/layout/diag.hpp>

constexpr unicorn::ModelDims bad_model() {
  auto m = unicorn::kGemma3Tiny;
  m.heads = 6;
  m.kv_heads = 4;
  return m;
}
struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig =
      unicorn::make_deployment(bad_model(), unicorn::schemes::kF32, 256, 32);
};
static_assert(unicorn::diag::check_deployment<Bad>());
