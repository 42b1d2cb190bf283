// expect: unicorn: grouped-query attention needs the query heads to be a multiple of the key/value
// expect: heads; fix `heads` or `kv_heads` in the ModelDims
// The user's path: naming Engine<Bad> runs every check (engine.hpp's static_assert).
// In a build that compiles the engine's code once (unicorn/base/linkage.hpp), as
// ours does: the check is Engine's own, and the case takes 6.5 s, not 9.
#define UNICORN_SEPARATE_COMPILATION
#include <unicorn/engine.hpp>

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
constexpr auto kContext = unicorn::Engine<Bad>::kConfig.max_context;
