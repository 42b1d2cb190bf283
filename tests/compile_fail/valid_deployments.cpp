// expect-compiles
// Positive control: valid deployments pass every check, so a failure of the
// cases beside this one is theirs, not the harness's (flags, include paths).
// The official sizes are here too: each check must hold for the whole Gemma 3
// family (STYLE.md rule 4), the 62-layer 27B included.
#include <unicorn/diag.hpp>

namespace u = unicorn;

struct Tiny {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::all(u::Format::Q8_0, u::Format::F32), 256, 32);
};
struct Gemma270M { static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3_270M, u::schemes::kQ4_0_QAT, 32768); };
struct Gemma1B { static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3_1B, u::schemes::kQ4_0_QAT, 32768); };
struct Gemma4B { static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3_4B, u::schemes::kQ4_0_QAT, 32768); };
struct Gemma12B { static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3_12B, u::schemes::kQ4_0_QAT, 32768); };
struct Gemma27B { static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3_27B, u::schemes::kQ4_0_QAT, 32768); };

// Google's QAT file with the LM head read from a Q8_0 copy of the F16 embedding.
struct Gemma27BQ8Head { static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3_27B, u::schemes::kQ4_0_QAT_Q8Head, 32768); };

static_assert(u::diag::check_deployment<Tiny>());
static_assert(u::diag::check_deployment<Gemma27BQ8Head>());
static_assert(u::kLayoutOf<Gemma27BQ8Head>.view().weight(u::Role::LmHead).format == u::Format::Q8_0);
static_assert(u::kLayoutOf<Gemma27BQ8Head>.view().weight(u::Role::OutputNorm).role == u::Role::OutputNorm);
static_assert(u::kLayoutOf<Gemma27B>.view().weight(u::Role::LmHead).role == u::Role::Embedding);
static_assert(u::diag::check_deployment<Gemma270M>());
static_assert(u::diag::check_deployment<Gemma1B>());
static_assert(u::diag::check_deployment<Gemma4B>());
static_assert(u::diag::check_deployment<Gemma12B>());
static_assert(u::diag::check_deployment<Gemma27B>());
