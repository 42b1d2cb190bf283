// expect-compiles
// Positive control of the pair checks (layout/diag.hpp's check_pair): every
// ready-made speculative pair of unicorn/gemma3.hpp passes them, and its
// budget holds the draft's bytes beside the model's, its layout only the
// model's. The cases draft_*.cpp beside this one each break one rule.
#include <tuple>
#include <unicorn/gemma3.hpp>
#include <unicorn/layout/diag.hpp>

namespace u = unicorn;
namespace d = unicorn::deployments;

template <class... P>
constexpr bool all_pairs_pass(std::tuple<P...>*) {
  return (u::diag::check_deployment<P>() && ...);
}
static_assert(all_pairs_pass(static_cast<d::Gemma3_Pairs*>(nullptr)));
static_assert(all_pairs_pass(static_cast<d::Gemma3_Server_Pairs*>(nullptr)));  // 64 and 8 slots

// The 27B drafted by the 270M: the model's bytes at the draft's 32K context
// (the 27B alone is compiled for 128K), then the draft's whole budget.
using Pair = d::Gemma3_27B_QAT_Draft270M;
struct Gemma27BAt32K { static constexpr u::DeploymentConfig kConfig = d::Gemma3_27B_QAT::kConfig.with_context(32768); };
static_assert(d::Gemma3_27B_QAT::kConfig.max_context == 131072 && Pair::kConfig.max_context == 32768);
static_assert(u::kBudgetOf<Pair>.need(u::Pool::Vram) ==
              u::kBudgetOf<Gemma27BAt32K>.need(u::Pool::Vram) + u::kBudgetOf<d::Gemma3_270M_QAT>.need(u::Pool::Vram));
static_assert(u::kBudgetOf<Pair>[u::Pool::Vram].draft_bytes == u::kBudgetOf<d::Gemma3_270M_QAT>.need(u::Pool::Vram));
static_assert(u::kLayoutOf<Pair>.weight_bytes() == u::kLayoutOf<d::Gemma3_27B_QAT>.weight_bytes());
static_assert(u::DraftOf<Pair>::kConfig.model.name == u::kGemma3_270M.name);
static_assert(Pair::kConfig.draft_max == u::kMaxDraftTokens);

// The demo pair: the demo's vocabulary, context and scheme in a two-layer model.
static_assert(u::DraftOf<d::Gemma3_Demo_Speculative>::kConfig.model.layers == 2);
static_assert(u::kGemma3DemoDraft.vocab == u::kGemma3Demo.vocab);
static_assert(u::kGemma3DemoDraft.layer_kind(0) == u::AttentionKind::Local &&
              u::kGemma3DemoDraft.layer_kind(1) == u::AttentionKind::Global);
static_assert(!d::Gemma3_Demo::kConfig.has_draft() && d::Gemma3_Demo_Speculative::kConfig.has_draft());

// A pair of the tiny test models, as tests/model/pair_tests.cpp builds one:
// the model with two streams (the verify rows within its decode lane too).
struct TinyDraft {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3TinyK, u::schemes::all(u::Format::Q8_0, u::Format::F32), 256, 32);
};
struct TinyPair {
  static constexpr u::DeploymentConfig kConfig =
      u::make_deployment(u::kGemma3Tiny, u::schemes::all(u::Format::Q8_0, u::Format::F32), 256, 32)
          .with_streams(2)
          .with_draft(TinyDraft::kConfig, 8);
};
static_assert(u::diag::check_deployment<TinyPair>());
