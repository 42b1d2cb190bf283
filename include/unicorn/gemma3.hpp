// unicorn/gemma3.hpp — the official Gemma 3 deployments, as types.
//
// Each names a model, a scheme and a context budget. Entry headers
// (gemma3_1b.hpp, ..., gemma27b.hpp) pick one as the ready engine type.
#pragma once

#include "unicorn/engine.hpp"

namespace unicorn::deployments {

// Google's QAT Q4_0 GGUF releases (Q4_0 weights, F16 embedding), 32K-token KV cache.
struct Gemma3_270M_QAT { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_270M, schemes::kQ4_0_QAT, 32768); };
struct Gemma3_1B_QAT { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_1B, schemes::kQ4_0_QAT, 32768); };
struct Gemma3_4B_QAT { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_4B, schemes::kQ4_0_QAT, 32768); };
struct Gemma3_12B_QAT { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_12B, schemes::kQ4_0_QAT, 32768); };
struct Gemma3_27B_QAT { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_27B, schemes::kQ4_0_QAT, 32768); };

// The built-in demo (unicorn-generate with no --model): Gemma 3 architecture and
// the real tokenizer, 6 small layers of random weights made at build time.
struct Gemma3_Demo { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3Demo, schemes::kQ8_0, 1024, 128); };

}  // namespace unicorn::deployments
