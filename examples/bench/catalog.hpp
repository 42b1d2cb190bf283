// unicorn-bench's catalog: the deployments it can run (official sizes x
// {Q4_0, Q8_0, QAT Q4_0 with F16 embedding} x placement x streams, and the
// files Q4_K_M, Q5_K_M, Q4_K_S, Q5_K_S, Q6_K, Q4_1, Q5_0, Q5_1, BF16 and F16 of
// every size), each a CompiledDeployment.
// Their constexpr layouts and checks are the costly part of compiling them
// (about 0.25 s each, 117 in all), so each model's entries are
// computed in a translation unit of their own (catalog_<model>.cpp, which
// includes layout/compiled_deployment.hpp, not the engine), compiled in parallel;
// main.cpp holds the bench code, once for all of them.
#pragma once

#include <string_view>
#include <tuple>
#include <vector>

#include "unicorn/gemma3.hpp"
#include "unicorn/layout/compiled_deployment.hpp"

namespace unicorn::examples::bench {

enum class BenchPlacement { Vram, Gtt, GttFfn };
constexpr std::string_view placement_name(BenchPlacement p) {
  return p == BenchPlacement::Vram ? "vram" : p == BenchPlacement::Gtt ? "gtt" : "gtt-ffn";
}
constexpr Placement placement_of(BenchPlacement p) {
  switch (p) {
    case BenchPlacement::Vram: return placement::everything_in(Pool::Vram);
    case BenchPlacement::Gtt: return placement::Weights<Pool::Gtt>::kPlacement;
    case BenchPlacement::GttFfn: return placement::Ffn<Pool::Gtt>::kPlacement;
  }
  return {};
}

// The most streams --batch runs (llama.cpp's batched figures go to 32).
constexpr uint32_t kBatchStreams = 32;

// The most tokens --draft drafts a round: one stream's engines record a
// verify pass of this many + 1 rows (the k up to 16).
constexpr uint32_t kBenchDraftMax = 16;
// The KV positions a run's engine takes unless -d asks for more (main.cpp):
// room for llama-bench's pp512 and tg128.
constexpr uint32_t kBenchContext = 2048;
// One-stream engines are compiled for up to kBenchDepthContext positions, so
// that -d measures pp and tg at depth (the 270M, whose draft pairs with every
// size, is trained for 32K; the tiny test model for less); engines of several
// streams (--batch) for kBenchContext.
constexpr uint32_t kBenchDepthContext = 32768;
constexpr uint32_t bench_context(const ModelDims& m, uint32_t streams) {
  const uint32_t c = streams == 1 ? kBenchDepthContext : kBenchContext;
  return m.max_context < c ? m.max_context : c;
}

// What drafts for the bench's one-stream engines: --draft takes any file of
// the same vocabulary that a one-stream entry runs (a bench pairs at run
// time), and the tiny test model drafts for itself.
template <const ModelDims& M>
struct BenchDraft {
  static constexpr const ModelDims& kModel = M.vocab == kGemma3_270M.vocab ? kGemma3_270M : M;
  static constexpr DeploymentConfig kConfig = make_deployment(kModel, schemes::kQ4_0, bench_context(kModel, 1), 512);
};

template <const ModelDims& M, Scheme S, BenchPlacement P = BenchPlacement::Vram, uint32_t Streams = 1>
struct Bench {
  static constexpr DeploymentConfig kUndrafted =
      deployments::with_official_vision(make_deployment(M, S, bench_context(M, Streams), 512)
                                            .placed(placement_of(P))
                                            .with_streams(Streams));
  static constexpr DeploymentConfig kConfig =
      Streams == 1 ? kUndrafted.with_draft(BenchDraft<M>::kConfig, kBenchDraftMax) : kUndrafted;
  static constexpr BenchPlacement kPlacement = P;
};
template <const ModelDims& M>
using Variants = std::tuple<Bench<M, schemes::kQ4_0>, Bench<M, schemes::kQ8_0>, Bench<M, schemes::kQ4_0_QAT>,
                            Bench<M, schemes::kQ4_0_QAT.with_lm_head(Format::Q8_0)>,
                            Bench<M, schemes::kQ4_0_QAT.with_lm_head(Format::Q4_0)>,
                            Bench<M, schemes::kQ4_0, BenchPlacement::Gtt>,
                            Bench<M, schemes::kQ8_0, BenchPlacement::Gtt>,
                            Bench<M, schemes::kQ4_0_QAT, BenchPlacement::Gtt>,
                            Bench<M, schemes::kQ4_0, BenchPlacement::GttFfn>,
                            Bench<M, schemes::kQ4_0, BenchPlacement::Vram, kBatchStreams>,
                            Bench<M, schemes::kQ8_0, BenchPlacement::Vram, kBatchStreams>>;

// The catalog as run-time values: the bench code is compiled once, not once
// per deployment.
struct Entry {
  CompiledDeployment deployment;
  BenchPlacement placement;
};
template <class... D>
std::vector<Entry> entries(std::tuple<D...>*) {
  return {Entry{compiled_deployment<D>(), D::kPlacement}...};
}
template <const ModelDims& M>
std::vector<Entry> entries_of() {
  return entries(static_cast<Variants<M>*>(nullptr));
}
// llama-quantize's K files (quant/scheme.hpp; the 270M's and 1B's hold its
// Q5_0 / Q5_1 / Q8_0 fallbacks where rows are not whole 256-element
// superblocks), its Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K, Q2_K_S and
// Q3_K_S/M/L, its Q4_0, Q5_0,
// IQ4_NL and IQ4_XS as --imatrix lays them out, and BF16 and F16 files: with the
// Q4_0, QAT and Q8_0 above, every format unicorn-generate runs. (Each holds
// the file's embedding as it is: quant/scheme.hpp's takes_embedding.)
template <const ModelDims& M>
using KVariants = std::tuple<Bench<M, schemes::kQ4_K_M>, Bench<M, schemes::kQ5_K_M>, Bench<M, schemes::kQ4_K_S>,
                             Bench<M, schemes::kQ5_K_S>, Bench<M, schemes::kQ6_K>, Bench<M, schemes::kQ4_1>,
                             Bench<M, schemes::kQ5_0>, Bench<M, schemes::kQ5_1>, Bench<M, schemes::kQ4_0_IMatrix>,
                             Bench<M, schemes::kQ5_0_IMatrix>, Bench<M, schemes::kIQ4_NL>, Bench<M, schemes::kIQ4_XS>,
                             Bench<M, schemes::kIQ4_NL_IMatrix>, Bench<M, schemes::kIQ4_XS_IMatrix>,
                             Bench<M, schemes::kQ2_K>, Bench<M, schemes::kQ2_K_S>, Bench<M, schemes::kQ3_K_S>,
                             Bench<M, schemes::kQ3_K_M>, Bench<M, schemes::kQ3_K_L>, Bench<M, schemes::kBF16>,
                             Bench<M, schemes::kF16>>;
template <const ModelDims& M>
std::vector<Entry> k_entries_of() {
  return entries(static_cast<KVariants<M>*>(nullptr));
}

// One model's entries each (catalog_<model>.cpp), and all of them.
std::vector<Entry> catalog_270m();
std::vector<Entry> catalog_1b();
std::vector<Entry> catalog_4b();
std::vector<Entry> catalog_12b();
std::vector<Entry> catalog_27b();
std::vector<Entry> catalog_tiny();
inline std::vector<Entry> catalog() {
  std::vector<Entry> all;
  for (auto* part : {catalog_270m, catalog_1b, catalog_4b, catalog_12b, catalog_27b, catalog_tiny})
    for (const Entry& e : part()) all.push_back(e);
  return all;
}

}  // namespace unicorn::examples::bench
