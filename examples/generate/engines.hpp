// unicorn-generate's engines: the built-in demo model's, then every official
// Gemma 3 size in the formats its files come in — Google's QAT Q4_0, and
// llama-quantize's Q4_K_M, Q5_K_M, Q6_K and Q8_0, and BF16 (Hugging Face
// directories, and GGUF files converted without quantizing) — each with a
// 32K-token KV cache. A model file picks the one that runs it
// (engine/pick.hpp). Each size's engines are computed in a translation unit of
// their own (engines_<size>.cpp), so their constexpr layouts compile in
// parallel; they include compiled_deployment.hpp, not the engine.
#pragma once

#include <tuple>
#include <vector>

#include "unicorn/compiled_deployment.hpp"

namespace unicorn::examples::generate {

inline constexpr uint32_t kOfficialContext = 32768;

template <const ModelDims& M, Scheme S>
struct Official {
  static constexpr DeploymentConfig kConfig = make_deployment(M, S, kOfficialContext);
};

// Every size runs llama-quantize's K mixes: where a matrix's rows are not whole
// 256-element superblocks (the 270M's and 1B's) they hold the fallbacks it
// writes there, Q5_0, Q5_1 and Q8_0 (quant/scheme.hpp).
template <const ModelDims& M>
using Formats = std::tuple<Official<M, schemes::kQ4_0_QAT>, Official<M, schemes::kQ4_K_M>, Official<M, schemes::kQ5_K_M>,
                           Official<M, schemes::kQ6_K>, Official<M, schemes::kQ8_0>, Official<M, schemes::kBF16>>;

template <class... D>
std::vector<CompiledDeployment> compiled(std::tuple<D...>*) {
  return {compiled_deployment<D>()...};
}
template <class Set>
std::vector<CompiledDeployment> compiled() {
  return compiled(static_cast<Set*>(nullptr));
}

std::vector<CompiledDeployment> engines_270m();
std::vector<CompiledDeployment> engines_1b();
std::vector<CompiledDeployment> engines_4b();
std::vector<CompiledDeployment> engines_12b();
std::vector<CompiledDeployment> engines_27b();

}  // namespace unicorn::examples::generate
