// unicorn/config/dims.hpp — Gemma 3 text-model dimensions as compile-time values.
//
// A ModelDims is a constexpr value, not a template argument: its name is a
// std::string_view, whose members are private, so the type is not structural.
// A deployment carries it inside a type instead (a struct with a static
// constexpr DeploymentConfig kConfig: config/deployment.hpp), and every field reaches
// the shaders as a specialization constant, never as a template parameter of
// kernel code (STYLE.md: instantiate per code shape, not per size).
// The loader checks a file's hyperparameters field by field against it, using
// the Hana field list below, and names the first key that differs.
#pragma once

#include <boost/hana/define_struct.hpp>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace unicorn {

enum class AttentionKind : uint8_t { Local, Global };

struct ModelDims {
  BOOST_HANA_DEFINE_STRUCT(ModelDims,
    (std::string_view, name),
    (uint32_t, hidden),            // d_model
    (uint32_t, layers),
    (uint32_t, heads),             // query heads
    (uint32_t, kv_heads),          // key/value heads (GQA: heads % kv_heads == 0)
    (uint32_t, head_dim),
    (uint32_t, ffn),               // GeGLU intermediate size
    (uint32_t, vocab),
    (uint32_t, sliding_window),    // local layers attend to the last `sliding_window` positions
    (uint32_t, global_every),      // layer l is global iff (l + 1) % global_every == 0 (Gemma 3: 6)
    (float, rope_theta_local),
    (float, rope_theta_global),
    (float, rope_scale_global),    // linear RoPE scaling factor on global layers (1 = none)
    (float, query_pre_attn_scalar),// attention scores are scaled by 1/sqrt(this)
    (float, rms_eps),
    (uint32_t, max_context));

  constexpr AttentionKind layer_kind(uint32_t layer) const {
    return (layer + 1) % global_every == 0 ? AttentionKind::Global : AttentionKind::Local;
  }
  // RoPE's base and linear scaling on a layer of this kind (local layers are
  // never scaled).
  constexpr float rope_theta(AttentionKind kind) const {
    return kind == AttentionKind::Global ? rope_theta_global : rope_theta_local;
  }
  constexpr float rope_scale(AttentionKind kind) const {
    return kind == AttentionKind::Global ? rope_scale_global : 1.0f;
  }
  constexpr uint32_t q_dim() const { return heads * head_dim; }
  constexpr uint32_t kv_dim() const { return kv_heads * head_dim; }
  constexpr uint32_t global_layers() const { return layers / global_every; }
};

// What sets one Gemma 3 apart from another; the rest is the family's (below).
struct Gemma3Shape {
  uint32_t hidden, layers, heads, kv_heads, head_dim, ffn;
  uint32_t vocab = 262144;  // the released tokenizer's
  uint32_t sliding_window;
  uint32_t global_every = 6;  // five sliding-window layers, then a global one
  float rope_scale_global = 1.f;
  float query_pre_attn_scalar;
  uint32_t max_context;
};

// A Gemma 3 of this shape: RoPE bases 10,000 (local) and 1,000,000 (global) and
// RMSNorm's epsilon 1e-6, as every released config.json has them.
constexpr ModelDims gemma3(std::string_view name, const Gemma3Shape& s) {
  return {.name = name, .hidden = s.hidden, .layers = s.layers, .heads = s.heads, .kv_heads = s.kv_heads,
          .head_dim = s.head_dim, .ffn = s.ffn, .vocab = s.vocab, .sliding_window = s.sliding_window,
          .global_every = s.global_every, .rope_theta_local = 10000.f, .rope_theta_global = 1000000.f,
          .rope_scale_global = s.rope_scale_global, .query_pre_attn_scalar = s.query_pre_attn_scalar,
          .rms_eps = 1e-6f, .max_context = s.max_context};
}

// Official Gemma 3 sizes (text part), from Google's released config.json files.
// The multimodal checkpoints (4B and up) declare vocab_size 262208: the 64 ids past
// 262144 are image soft tokens with no text use; llama.cpp's GGUF files, and this
// engine, keep the 262144 text rows.
inline constexpr ModelDims kGemma3_270M = gemma3("gemma3-270m", {.hidden = 640, .layers = 18, .heads = 4,
    .kv_heads = 1, .head_dim = 256, .ffn = 2048, .sliding_window = 512, .query_pre_attn_scalar = 256.f,
    .max_context = 32768});

inline constexpr ModelDims kGemma3_1B = gemma3("gemma3-1b", {.hidden = 1152, .layers = 26, .heads = 4,
    .kv_heads = 1, .head_dim = 256, .ffn = 6912, .sliding_window = 512, .query_pre_attn_scalar = 256.f,
    .max_context = 32768});

inline constexpr ModelDims kGemma3_4B = gemma3("gemma3-4b", {.hidden = 2560, .layers = 34, .heads = 8,
    .kv_heads = 4, .head_dim = 256, .ffn = 10240, .sliding_window = 1024, .rope_scale_global = 8.f,
    .query_pre_attn_scalar = 256.f, .max_context = 131072});

inline constexpr ModelDims kGemma3_12B = gemma3("gemma3-12b", {.hidden = 3840, .layers = 48, .heads = 16,
    .kv_heads = 8, .head_dim = 256, .ffn = 15360, .sliding_window = 1024, .rope_scale_global = 8.f,
    .query_pre_attn_scalar = 256.f, .max_context = 131072});

// 27B scales queries by hidden/heads = 168, not head_dim = 128.
inline constexpr ModelDims kGemma3_27B = gemma3("gemma3-27b", {.hidden = 5376, .layers = 62, .heads = 32,
    .kv_heads = 16, .head_dim = 128, .ffn = 21504, .sliding_window = 1024, .rope_scale_global = 8.f,
    .query_pre_attn_scalar = 168.f, .max_context = 131072});

// Tiny Gemma 3-architecture configs for tests. kGemma3Tiny has two global layers,
// a window shorter than the golden prompt, GQA, linear RoPE scaling and a
// query_pre_attn_scalar that differs from head_dim, so every branch is exercised.
inline constexpr ModelDims kGemma3Tiny = gemma3("gemma3-tiny", {.hidden = 96, .layers = 6, .heads = 4,
    .kv_heads = 2, .head_dim = 32, .ffn = 192, .vocab = 512, .sliding_window = 16, .global_every = 3,
    .rope_scale_global = 8.f, .query_pre_attn_scalar = 24.f, .max_context = 256});

// kGemma3TinyK: every matrix's rows whole 256-element superblocks (hidden,
// heads * head_dim and ffn multiples of 256), for the K-quant model tests
// (tests/model/kquant_model_tests.cpp); a sliding and a global layer.
inline constexpr ModelDims kGemma3TinyK = gemma3("gemma3-tiny-k", {.hidden = 256, .layers = 2, .heads = 4,
    .kv_heads = 2, .head_dim = 64, .ffn = 512, .vocab = 512, .sliding_window = 16, .global_every = 2,
    .rope_scale_global = 8.f, .query_pre_attn_scalar = 64.f, .max_context = 256});

// kGemma3TinyKFallback: kGemma3TinyK with a hidden size of 5 blocks of 32, not
// whole superblocks (as the 1B's 1152 and the 270M's 640), so llama-quantize's
// K mixes fall back to Q5_0 / Q5_1 / Q8_0 for the matrices that read the
// hidden state (quant/scheme.hpp, k_quant_fallback); for the model tests.
inline constexpr ModelDims kGemma3TinyKFallback = gemma3("gemma3-tiny-k-fallback", {.hidden = 160, .layers = 2,
    .heads = 4, .kv_heads = 2, .head_dim = 64, .ffn = 512, .vocab = 512, .sliding_window = 16,
    .global_every = 2, .rope_scale_global = 8.f, .query_pre_attn_scalar = 64.f, .max_context = 256});

// The built-in demo model (models/gemma3-demo.gguf): a small Gemma 3 with the real
// 262144-token vocabulary, trained by tools/train_demo/train.py, whose DIMS must match
// these. Five sliding-window layers and one global layer, as Gemma 3 interleaves them;
// the window is shorter than the training windows, so it matters.
inline constexpr ModelDims kGemma3Demo = gemma3("gemma3-demo", {.hidden = 192, .layers = 6, .heads = 4,
    .kv_heads = 1, .head_dim = 64, .ffn = 768, .sliding_window = 128, .query_pre_attn_scalar = 64.f,
    .max_context = 1024});
// The demo model's draft (speculative decoding: deployments::Gemma3_Demo_Speculative):
// kGemma3Demo's tokenizer and context with a third of its weights (nearly all
// of them the 262144 x 64 embedding, which is also the LM head): one
// sliding-window layer of the demo's window, then one global.
// tools/train_demo/train.py --model draft trains it as it trains the demo;
// `unicorn-convert --random gemma3-demo-draft` writes random weights in its shapes.
inline constexpr ModelDims kGemma3DemoDraft = gemma3("gemma3-demo-draft", {.hidden = 64, .layers = 2,
    .heads = 2, .kv_heads = 1, .head_dim = 32, .ffn = 256, .sliding_window = 128, .global_every = 2,
    .query_pre_attn_scalar = 32.f, .max_context = 1024});

// Invariants of the whole Gemma 3 family (STYLE.md rule 4): checked for every
// deployment, with messages that name the model.
constexpr bool heads_divide(const ModelDims& m) { return m.kv_heads > 0 && m.heads % m.kv_heads == 0; }
constexpr bool head_dim_even(const ModelDims& m) { return m.head_dim % 2 == 0; }

}  // namespace unicorn
