// expect: unicorn: a separate LM head is quantized from the embedding when loading, so the
// expect: embedding must be F16, BF16 or F32 and the LM head Q8_0, Q4_0 or F16
// expect-also: lm_head_copy_unsupported<8, 2>
// A Q4_0 copy of a Q8_0 embedding would quantize twice: the loader converts
// only from float formats, so this is refused at compile time.
#include <unicorn/layout/diag.hpp>

struct Bad {
  static constexpr unicorn::DeploymentConfig kConfig = unicorn::make_deployment(
      unicorn::kGemma3_1B, unicorn::schemes::kQ8_0.with_lm_head(unicorn::Format::Q4_0), 4096);
};
static_assert(unicorn::diag::check_deployment<Bad>());
