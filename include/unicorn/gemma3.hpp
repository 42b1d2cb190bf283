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

// Servers (unicorn-server, unicorn-gemma3-*-server): the same deployments with
// several streams, each a slot of its own context. The KV cache is allocated
// for every slot at its full context: 4 slots of 8K tokens cost the 27B about
// 10 GiB beside its weights.
inline constexpr uint32_t kServerSlots = 4, kServerContext = 8192;
struct Gemma3_270M_QAT_Server { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_270M, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots); };
struct Gemma3_1B_QAT_Server { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_1B, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots); };
struct Gemma3_4B_QAT_Server { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_4B, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots); };
struct Gemma3_12B_QAT_Server { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_12B, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots); };
struct Gemma3_27B_QAT_Server { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_27B, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots); };
// unicorn-server with no --model: the demo model, 8 slots of its 1024 tokens.
struct Gemma3_Demo_Server { static constexpr DeploymentConfig kConfig = Gemma3_Demo::kConfig.with_streams(8); };

}  // namespace unicorn::deployments
