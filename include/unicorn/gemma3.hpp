// unicorn/gemma3.hpp — the official Gemma 3 deployments, as types.
//
// Each names a model, a scheme and a context budget. Entry headers
// (gemma3_1b.hpp, ..., gemma27b.hpp) pick one as the ready engine type and
// bring the engine (engine.hpp); this header has the types only, so a
// binary's own translation unit that names one (examples/generate/main.cpp,
// with layout/compiled_deployment.hpp) does not parse the run-time engine.
#pragma once

#include <tuple>

#include "unicorn/config/deployment.hpp"

namespace unicorn::deployments {

// Gemma 3's vision-language sizes (4B, 12B, 27B) see images: their
// deployments name the image encoder (config/vision_dims.hpp), whose weights
// come in the mmproj file beside the model (LoadOptions::mmproj). The others
// read text only.
constexpr DeploymentConfig with_official_vision(const DeploymentConfig& c) {
  const bool sees = c.model.name == kGemma3_4B.name || c.model.name == kGemma3_12B.name ||
                    c.model.name == kGemma3_27B.name;
  return sees ? c.with_vision(kGemma3Siglip) : c;
}

// Every official engine of a generator is compiled for the model's whole
// trained context (131,072 tokens for 4B, 12B and 27B; 32,768 for 270M and
// 1B) and takes a KV cache of kGeneratorContext tokens (32K) unless asked for
// more (EngineOptions::context, the generators' -c): a 128K cache costs the
// 27B 10.6 GiB where 32K costs 3.1.
inline constexpr uint32_t kGeneratorContext = 32768;
constexpr DeploymentConfig generator(const ModelDims& model, const Scheme& scheme) {
  return with_official_vision(make_deployment(model, scheme).with_default_context(kGeneratorContext));
}
// Google's QAT Q4_0 GGUF releases (Q4_0 weights, F16 embedding).
struct Gemma3_270M_QAT { static constexpr DeploymentConfig kConfig = generator(kGemma3_270M, schemes::kQ4_0_QAT); };
struct Gemma3_1B_QAT { static constexpr DeploymentConfig kConfig = generator(kGemma3_1B, schemes::kQ4_0_QAT); };
struct Gemma3_4B_QAT { static constexpr DeploymentConfig kConfig = generator(kGemma3_4B, schemes::kQ4_0_QAT); };
struct Gemma3_12B_QAT { static constexpr DeploymentConfig kConfig = generator(kGemma3_12B, schemes::kQ4_0_QAT); };
struct Gemma3_27B_QAT { static constexpr DeploymentConfig kConfig = generator(kGemma3_27B, schemes::kQ4_0_QAT); };

// The built-in demo (unicorn-generate with no --model): models/gemma3-demo.gguf, a
// small Gemma 3 trained on English (tools/train_demo) with the real tokenizer. Its
// embedding is Q4_0 and its other matrices F16: the embedding is 50 M of its 54 M
// parameters, and Q4_0 keeps the file at 35 MB (at Q8_0 the embedding alone is 53 MB); it was trained
// onto Q4_0's grid, so the file loses nothing. `unicorn-convert --random gemma3-demo`
// makes random weights in the same shapes.
inline constexpr Scheme kDemoScheme{Format::Q4_0, Format::F16, Format::F16, Format::F16};
struct Gemma3_Demo { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3Demo, kDemoScheme, 1024, 128); };
// The demo model converted to each format the engine runs (an F32 KV cache with F32
// weights, as reference checks run), for unicorn-perplexity's quality table.
template <Format F>
struct Gemma3_Demo_In {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3Demo, schemes::all(F, F == Format::F32 ? Format::F32 : Format::F16), 1024, 128);
};
using Gemma3_Demo_Formats =
    std::tuple<Gemma3_Demo, Gemma3_Demo_In<Format::F32>, Gemma3_Demo_In<Format::F16>, Gemma3_Demo_In<Format::BF16>,
               Gemma3_Demo_In<Format::Q8_0>, Gemma3_Demo_In<Format::Q4_0>>;

// Speculative decoding (docs/speculative.md): a small model of the same
// vocabulary drafts up to kMaxDraftTokens tokens a round and the large one
// checks them in one pass over its weights; the text is the large model's
// token for token. 270M drafts for 4B, 12B and 27B, 1B for 12B and 27B, all in
// Google's QAT Q4_0, at the drafts' whole context, 32K: a draft follows the
// model position for position (diag::check_pair).
constexpr DeploymentConfig drafted(const DeploymentConfig& model, const DeploymentConfig& draft) {
  return model.with_context(draft.max_context).with_draft(draft);
}
struct Gemma3_4B_QAT_Draft270M { static constexpr DeploymentConfig kConfig = drafted(Gemma3_4B_QAT::kConfig, Gemma3_270M_QAT::kConfig); };
struct Gemma3_12B_QAT_Draft270M { static constexpr DeploymentConfig kConfig = drafted(Gemma3_12B_QAT::kConfig, Gemma3_270M_QAT::kConfig); };
struct Gemma3_27B_QAT_Draft270M { static constexpr DeploymentConfig kConfig = drafted(Gemma3_27B_QAT::kConfig, Gemma3_270M_QAT::kConfig); };
struct Gemma3_12B_QAT_Draft1B { static constexpr DeploymentConfig kConfig = drafted(Gemma3_12B_QAT::kConfig, Gemma3_1B_QAT::kConfig); };
struct Gemma3_27B_QAT_Draft1B { static constexpr DeploymentConfig kConfig = drafted(Gemma3_27B_QAT::kConfig, Gemma3_1B_QAT::kConfig); };
// The demo model's draft (kGemma3DemoDraft, in the demo's scheme and context)
// and the demo drafted by it.
struct Gemma3_Demo_Draft { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3DemoDraft, kDemoScheme, 1024, 128); };
struct Gemma3_Demo_Speculative { static constexpr DeploymentConfig kConfig = Gemma3_Demo::kConfig.with_draft(Gemma3_Demo_Draft::kConfig); };
// Every ready-made pair, the demo's first (the binaries that pick a pair by
// the files they are given: examples/official/engines.hpp); the servers' below.
using Gemma3_Pairs = std::tuple<Gemma3_Demo_Speculative, Gemma3_4B_QAT_Draft270M, Gemma3_12B_QAT_Draft270M,
                                Gemma3_27B_QAT_Draft270M, Gemma3_12B_QAT_Draft1B, Gemma3_27B_QAT_Draft1B>;

// Servers (unicorn-server, unicorn-gemma3-*-server): the same deployments with
// up to kServerSlots streams, each a slot of its own context. The KV cache is
// allocated at start-up for the slots and context chosen (EngineOptions::streams
// and context): by default as many slots of 8K tokens as the device's free
// memory holds (engine/fit.hpp); each costs the 27B about 1.3 GiB.
inline constexpr uint32_t kServerSlots = 64, kServerContext = 8192;
struct Gemma3_270M_QAT_Server { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_270M, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots); };
struct Gemma3_1B_QAT_Server { static constexpr DeploymentConfig kConfig = make_deployment(kGemma3_1B, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots); };
struct Gemma3_4B_QAT_Server { static constexpr DeploymentConfig kConfig = with_official_vision(make_deployment(kGemma3_4B, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots)); };
struct Gemma3_12B_QAT_Server { static constexpr DeploymentConfig kConfig = with_official_vision(make_deployment(kGemma3_12B, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots)); };
struct Gemma3_27B_QAT_Server { static constexpr DeploymentConfig kConfig = with_official_vision(make_deployment(kGemma3_27B, schemes::kQ4_0_QAT, kServerContext).with_streams(kServerSlots)); };
// unicorn-server with no --model: the demo model, 8 slots of its 1024 tokens.
struct Gemma3_Demo_Server { static constexpr DeploymentConfig kConfig = Gemma3_Demo::kConfig.with_streams(8); };

// The servers drafted (unicorn-server --draft): a slot generating alone takes
// speculative rounds, and batched steps whenever others are busy
// (server/scheduler.hpp). The draft has one stream; its context the slots'.
struct Gemma3_Demo_Server_Speculative { static constexpr DeploymentConfig kConfig = Gemma3_Demo_Server::kConfig.with_draft(Gemma3_Demo_Draft::kConfig); };
struct Gemma3_4B_QAT_Server_Draft270M { static constexpr DeploymentConfig kConfig = Gemma3_4B_QAT_Server::kConfig.with_draft(Gemma3_270M_QAT::kConfig); };
struct Gemma3_12B_QAT_Server_Draft270M { static constexpr DeploymentConfig kConfig = Gemma3_12B_QAT_Server::kConfig.with_draft(Gemma3_270M_QAT::kConfig); };
struct Gemma3_27B_QAT_Server_Draft270M { static constexpr DeploymentConfig kConfig = Gemma3_27B_QAT_Server::kConfig.with_draft(Gemma3_270M_QAT::kConfig); };
struct Gemma3_12B_QAT_Server_Draft1B { static constexpr DeploymentConfig kConfig = Gemma3_12B_QAT_Server::kConfig.with_draft(Gemma3_1B_QAT::kConfig); };
struct Gemma3_27B_QAT_Server_Draft1B { static constexpr DeploymentConfig kConfig = Gemma3_27B_QAT_Server::kConfig.with_draft(Gemma3_1B_QAT::kConfig); };
using Gemma3_Server_Pairs =
    std::tuple<Gemma3_Demo_Server_Speculative, Gemma3_4B_QAT_Server_Draft270M, Gemma3_12B_QAT_Server_Draft270M,
               Gemma3_27B_QAT_Server_Draft270M, Gemma3_12B_QAT_Server_Draft1B, Gemma3_27B_QAT_Server_Draft1B>;

}  // namespace unicorn::deployments
