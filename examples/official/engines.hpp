// The official Gemma 3 sizes' engines in the formats their files come in, for
// the binaries that pick an engine by the file they are given (engine/pick.hpp):
// unicorn-generate (one stream, compiled for the model's whole context, 32K
// tokens of KV cache unless -c asks for more) and unicorn-server (the
// per-size servers' slots and context): the shapes of unicorn/gemma3.hpp's
// official deployments, in every format. The formats are Q4_0 (Google's QAT
// files, F16 embedding, and llama-quantize's, Q6_K embedding: one engine holds
// either, quant/scheme.hpp's takes_embedding), llama-quantize's Q4_K_M,
// Q5_K_M, Q4_K_S, Q5_K_S, Q6_K, Q8_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K,
// Q2_K_S, Q3_K_S, Q3_K_M and Q3_K_L
// (its Q4_0, Q5_0, IQ4_NL and IQ4_XS also as --imatrix lays them out), and BF16 and F16
// (Hugging Face directories, and GGUF files converted without quantizing).
// Each size's engines are computed in a translation unit of their own
// (engines_<size>.cpp), so their constexpr layouts compile in parallel; they
// include layout/compiled_deployment.hpp, not the engine.
#pragma once

#include <tuple>
#include <vector>

#include "unicorn/gemma3.hpp"
#include "unicorn/layout/compiled_deployment.hpp"

namespace unicorn::examples::official {

// Which binary the engines are for: the KV cache's shape differs.
enum class Shape { Generator, Server };

template <const ModelDims& M, Scheme S>
struct ForGenerator {
  static constexpr DeploymentConfig kConfig = deployments::generator(M, S);
};
template <const ModelDims& M, Scheme S>
struct ForServer {
  static constexpr DeploymentConfig kConfig = deployments::with_official_vision(
      make_deployment(M, S, deployments::kServerContext).with_streams(deployments::kServerSlots));
};

// Every size runs llama-quantize's K mixes: where a matrix's rows are not whole
// 256-element superblocks (the 270M's and 1B's) they hold the fallbacks it
// writes there, Q5_0, Q5_1 and Q8_0 (quant/scheme.hpp).
template <template <const ModelDims&, Scheme> class For, const ModelDims& M>
using Formats = std::tuple<For<M, schemes::kQ4_0_QAT>, For<M, schemes::kQ4_K_M>, For<M, schemes::kQ5_K_M>,
                           For<M, schemes::kQ4_K_S>, For<M, schemes::kQ5_K_S>, For<M, schemes::kQ6_K>,
                           For<M, schemes::kQ8_0>, For<M, schemes::kQ4_1>, For<M, schemes::kQ5_0>,
                           For<M, schemes::kQ5_1>, For<M, schemes::kQ4_0_IMatrix>, For<M, schemes::kQ5_0_IMatrix>,
                           For<M, schemes::kIQ4_NL>, For<M, schemes::kIQ4_XS>, For<M, schemes::kIQ4_NL_IMatrix>,
                           For<M, schemes::kIQ4_XS_IMatrix>, For<M, schemes::kQ2_K>, For<M, schemes::kQ2_K_S>,
                           For<M, schemes::kQ3_K_S>, For<M, schemes::kQ3_K_M>, For<M, schemes::kQ3_K_L>,
                           For<M, schemes::kBF16>, For<M, schemes::kF16>>;

template <class... D>
std::vector<CompiledDeployment> compiled(std::tuple<D...>*) {
  return {compiled_deployment<D>()...};
}
template <const ModelDims& M>
std::vector<CompiledDeployment> compiled(Shape shape) {
  return shape == Shape::Server ? compiled(static_cast<Formats<ForServer, M>*>(nullptr))
                                : compiled(static_cast<Formats<ForGenerator, M>*>(nullptr));
}

std::vector<CompiledDeployment> engines_270m(Shape shape);
std::vector<CompiledDeployment> engines_1b(Shape shape);
std::vector<CompiledDeployment> engines_4b(Shape shape);
std::vector<CompiledDeployment> engines_12b(Shape shape);
std::vector<CompiledDeployment> engines_27b(Shape shape);

// The speculative pairs (engines_pairs.cpp), for --draft: one stream each for
// the generator, the servers' slots and context for the server.
std::vector<CompiledDeployment> pairs(Shape shape);

// Every size's, smallest first.
inline std::vector<CompiledDeployment> engines(Shape shape) {
  std::vector<CompiledDeployment> all;
  for (auto* size : {engines_270m, engines_1b, engines_4b, engines_12b, engines_27b})
    for (const CompiledDeployment& e : size(shape)) all.push_back(e);
  return all;
}

}  // namespace unicorn::examples::official
