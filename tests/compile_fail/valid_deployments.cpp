// expect-compiles
// Positive control: valid deployments pass every check, so a failure of the
// cases beside this one is theirs, not the harness's (flags, include paths).
// The official sizes are here too: each check must hold for the whole Gemma 3
// family (STYLE.md rule 4), the 62-layer 27B included.
#include <algorithm>
#include <iterator>
#include <unicorn/layout/diag.hpp>

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

// With Gemma 3's image encoder: the official encoder beside the 4B, 12B and
// 27B (its bytes in the budget), and the tiny one beside the tiny text model.
struct TinyVision { static constexpr u::DeploymentConfig kConfig = Tiny::kConfig.with_vision(u::kGemma3SiglipTiny); };
template <const u::ModelDims& M>
struct WithVision { static constexpr u::DeploymentConfig kConfig = u::make_deployment(M, u::schemes::kQ4_0_QAT, 32768).with_vision(u::kGemma3Siglip); };
static_assert(u::diag::check_deployment<TinyVision>());
static_assert(u::diag::check_deployment<WithVision<u::kGemma3_4B>>());
static_assert(u::diag::check_deployment<WithVision<u::kGemma3_12B>>());
static_assert(u::diag::check_deployment<WithVision<u::kGemma3_27B>>());
// The encoder adds its bytes to the budget and nothing to the text model's layout.
static_assert(u::kBudgetOf<WithVision<u::kGemma3_4B>>.need(u::Pool::Vram) ==
              u::kBudgetOf<Gemma4B>.need(u::Pool::Vram) + u::vision_budget(WithVision<u::kGemma3_4B>::kConfig).weights +
                  u::vision_budget(WithVision<u::kGemma3_4B>::kConfig).activations);
static_assert(u::kLayoutOf<WithVision<u::kGemma3_4B>>.weight_bytes() == u::kLayoutOf<Gemma4B>.weight_bytes());
// 27 layers of 1152 x 1152 (q, k, v, out) and 1152 x 4304 (fc1, fc2) weights at
// F16, and the 4B's projection: 0.84 GB, the size of llama.cpp's F16 mmproj.
static_assert(u::vision_budget(WithVision<u::kGemma3_4B>::kConfig).weights / 1000000 == 839);
static_assert(u::diag::check_deployment<Gemma27BQ8Head>());
static_assert(u::kLayoutOf<Gemma27BQ8Head>.view().weight(u::Role::LmHead).format == u::Format::Q8_0);
static_assert(u::kLayoutOf<Gemma27BQ8Head>.view().weight(u::Role::OutputNorm).role == u::Role::OutputNorm);
static_assert(u::kLayoutOf<Gemma27B>.view().weight(u::Role::LmHead).role == u::Role::Embedding);
static_assert(u::diag::check_deployment<Gemma270M>());
static_assert(u::diag::check_deployment<Gemma1B>());
static_assert(u::diag::check_deployment<Gemma4B>());
static_assert(u::diag::check_deployment<Gemma12B>());
static_assert(u::diag::check_deployment<Gemma27B>());

// llama-quantize's Q4_K_M for Gemma 3 (quant/scheme.hpp): attn_v and ffn_down
// Q6_K in the layers its use_more_bits picks, written out here by hand from
// its rule (i < n/8, i >= 7n/8, (i - n/8) % 3 == 2) for the 4B's 34 layers and
// the 27B's 62; every other matrix Q4_K; the tied embedding Q6_K.
template <const u::ModelDims& M>
struct KMix { static constexpr u::DeploymentConfig kConfig = u::make_deployment(M, u::schemes::kQ4_K_M, 8192); };
template <class D, size_t N>
constexpr bool q6_k_layers_are(const uint32_t (&expected)[N]) {
  const auto L = u::kLayoutOf<D>.view();
  for (uint32_t l = 0; l < D::kConfig.model.layers; ++l) {
    const bool more = std::find(std::begin(expected), std::end(expected), l) != std::end(expected);
    const u::Format want = more ? u::Format::Q6_K : u::Format::Q4_K;
    if (L.weight(u::Role::AttnV, int(l)).format != want || L.weight(u::Role::FfnDown, int(l)).format != want) return false;
    for (u::Role r : {u::Role::AttnQ, u::Role::AttnK, u::Role::AttnOut, u::Role::FfnGate, u::Role::FfnUp})
      if (L.weight(r, int(l)).format != u::Format::Q4_K) return false;
  }
  return L.weight(u::Role::Embedding).format == u::Format::Q6_K && L.weight(u::Role::LmHead).role == u::Role::Embedding;
}
constexpr uint32_t kQ6KLayers4B[] = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 29, 30, 31, 32, 33};
constexpr uint32_t kQ6KLayers27B[] = {0,  1,  2,  3,  4,  5,  6,  9,  12, 15, 18, 21, 24, 27, 30,
                                      33, 36, 39, 42, 45, 48, 51, 54, 55, 56, 57, 58, 59, 60, 61};
static_assert(u::diag::check_deployment<KMix<u::kGemma3_4B>>());
static_assert(u::diag::check_deployment<KMix<u::kGemma3_27B>>());
static_assert(q6_k_layers_are<KMix<u::kGemma3_4B>>(kQ6KLayers4B));
static_assert(q6_k_layers_are<KMix<u::kGemma3_27B>>(kQ6KLayers27B));
// Q6_K over rows that are not whole superblocks falls back to Q8_0, as
// llama-quantize does: the 1B's 1152-wide rows.
struct Gemma1BQ6K { static constexpr u::DeploymentConfig kConfig = u::make_deployment(u::kGemma3_1B, u::schemes::kQ6_K, 8192); };
static_assert(u::diag::check_deployment<Gemma1BQ6K>());
static_assert(u::kLayoutOf<Gemma1BQ6K>.view().weight(u::Role::AttnQ, 0).format == u::Format::Q8_0);
static_assert(u::kLayoutOf<Gemma1BQ6K>.view().weight(u::Role::FfnDown, 0).format == u::Format::Q6_K);  // 6912 = 27 x 256

// llama-quantize's Q3_K_M on the 27B (62 layers): Q3_K, attn_output Q4_K,
// attn_v Q5_K in layers 0-1 and Q4_K after, ffn_down Q5_K in the first
// sixteenth (0-2) and Q4_K after. Its IQ4_XS on the 1B (4 query heads a KV
// head, rows of 1152): IQ4_NL for the hidden state's readers, attn_v Q5_K
// falling back to Q5_1, attn_output IQ4_XS, ffn_down Q5_K in the first eighth (0-2).
template <const u::ModelDims& M, const u::Scheme& S>
struct MixOn { static constexpr u::DeploymentConfig kConfig = u::make_deployment(M, S, 8192); };
using Q3KM27B = MixOn<u::kGemma3_27B, u::schemes::kQ3_K_M>;
static_assert(u::diag::check_deployment<Q3KM27B>());
static_assert(u::kLayoutOf<Q3KM27B>.view().weight(u::Role::AttnQ, 5).format == u::Format::Q3_K);
static_assert(u::kLayoutOf<Q3KM27B>.view().weight(u::Role::AttnOut, 5).format == u::Format::Q4_K);
static_assert(u::kLayoutOf<Q3KM27B>.view().weight(u::Role::AttnV, 1).format == u::Format::Q5_K);
static_assert(u::kLayoutOf<Q3KM27B>.view().weight(u::Role::AttnV, 2).format == u::Format::Q4_K);
static_assert(u::kLayoutOf<Q3KM27B>.view().weight(u::Role::FfnDown, 2).format == u::Format::Q5_K);
static_assert(u::kLayoutOf<Q3KM27B>.view().weight(u::Role::FfnDown, 3).format == u::Format::Q4_K);
using IQ4XS1B = MixOn<u::kGemma3_1B, u::schemes::kIQ4_XS>;
static_assert(u::diag::check_deployment<IQ4XS1B>());
static_assert(u::kLayoutOf<IQ4XS1B>.view().weight(u::Role::AttnQ, 0).format == u::Format::IQ4_NL);
static_assert(u::kLayoutOf<IQ4XS1B>.view().weight(u::Role::AttnV, 7).format == u::Format::Q5_1);
static_assert(u::kLayoutOf<IQ4XS1B>.view().weight(u::Role::AttnOut, 7).format == u::Format::IQ4_XS);
static_assert(u::kLayoutOf<IQ4XS1B>.view().weight(u::Role::FfnDown, 2).format == u::Format::Q5_K);
static_assert(u::kLayoutOf<IQ4XS1B>.view().weight(u::Role::FfnDown, 3).format == u::Format::IQ4_XS);

// The K mixes on the 1B (hidden 1152 = 4.5 superblocks, 26 layers) and the
// 270M (640 = 2.5, 18 layers), written out by hand from llama.cpp's
// src/llama-quant.cpp (llama_tensor_get_type_impl, tensor_type_fallback):
// attn_q, attn_k, attn_v, ffn_gate and ffn_up read the hidden state, so Q4_K
// falls back to Q5_0 (Q5_K_M: Q5_K to Q5_1) and attn_v's Q6_K in the
// use_more_bits layers to Q8_0; attn_output (heads * head_dim = 1024 columns)
// and ffn_down (6912 = 27 x 256, 2048 = 8 x 256) keep the K-quants, ffn_down
// Q6_K in those layers; the tied embedding takes the output's rule, Q8_0 for
// rows that are not whole superblocks.
template <const u::ModelDims& M, const u::Scheme& S>
struct KMixOf { static constexpr u::DeploymentConfig kConfig = u::make_deployment(M, S, 8192); };
struct MixFormats {
  u::Format hidden_readers, k_quant;  // attn_q/k/gate/up (and attn_v elsewhere); attn_output, ffn_down
};
template <class D, size_t N>
constexpr bool mix_layers_are(const uint32_t (&more_bits)[N], MixFormats f) {
  const auto L = u::kLayoutOf<D>.view();
  for (uint32_t l = 0; l < D::kConfig.model.layers; ++l) {
    const bool more = std::find(std::begin(more_bits), std::end(more_bits), l) != std::end(more_bits);
    for (u::Role r : {u::Role::AttnQ, u::Role::AttnK, u::Role::FfnGate, u::Role::FfnUp})
      if (L.weight(r, int(l)).format != f.hidden_readers) return false;
    if (L.weight(u::Role::AttnV, int(l)).format != (more ? u::Format::Q8_0 : f.hidden_readers)) return false;
    if (L.weight(u::Role::AttnOut, int(l)).format != f.k_quant) return false;
    if (L.weight(u::Role::FfnDown, int(l)).format != (more ? u::Format::Q6_K : f.k_quant)) return false;
  }
  return L.weight(u::Role::Embedding).format == u::Format::Q8_0 && L.weight(u::Role::LmHead).role == u::Role::Embedding;
}
constexpr uint32_t kMoreBitsLayers1B[] = {0, 1, 2, 5, 8, 11, 14, 17, 20, 22, 23, 24, 25};  // n = 26
constexpr uint32_t kMoreBitsLayers270M[] = {0, 1, 4, 7, 10, 13, 15, 16, 17};              // n = 18
using Gemma1BQ4KM = KMixOf<u::kGemma3_1B, u::schemes::kQ4_K_M>;
using Gemma1BQ5KM = KMixOf<u::kGemma3_1B, u::schemes::kQ5_K_M>;
using Gemma270MQ4KM = KMixOf<u::kGemma3_270M, u::schemes::kQ4_K_M>;
using Gemma270MQ5KM = KMixOf<u::kGemma3_270M, u::schemes::kQ5_K_M>;
static_assert(u::diag::check_deployment<Gemma1BQ4KM>());
static_assert(u::diag::check_deployment<Gemma1BQ5KM>());
static_assert(u::diag::check_deployment<Gemma270MQ4KM>());
static_assert(u::diag::check_deployment<Gemma270MQ5KM>());
static_assert(mix_layers_are<Gemma1BQ4KM>(kMoreBitsLayers1B, {u::Format::Q5_0, u::Format::Q4_K}));
static_assert(mix_layers_are<Gemma1BQ5KM>(kMoreBitsLayers1B, {u::Format::Q5_1, u::Format::Q5_K}));
static_assert(mix_layers_are<Gemma270MQ4KM>(kMoreBitsLayers270M, {u::Format::Q5_0, u::Format::Q4_K}));
static_assert(mix_layers_are<Gemma270MQ5KM>(kMoreBitsLayers270M, {u::Format::Q5_1, u::Format::Q5_K}));
// The all-Q4_K scheme on the 1B falls back too (schemes::kQ4_K).
using Gemma1BQ4K = KMixOf<u::kGemma3_1B, u::schemes::kQ4_K>;
static_assert(u::diag::check_deployment<Gemma1BQ4K>());
static_assert(u::kLayoutOf<Gemma1BQ4K>.view().weight(u::Role::FfnUp, 3).format == u::Format::Q5_0);
static_assert(u::kLayoutOf<Gemma1BQ4K>.view().weight(u::Role::AttnOut, 3).format == u::Format::Q4_K);
