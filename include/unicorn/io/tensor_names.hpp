// unicorn/io/tensor_names.hpp — Gemma 3 tensor names: llama.cpp's GGUF names
// and Hugging Face's, in both directions.
//
//   token_embd.weight          <-> <p>embed_tokens.weight
//   output_norm.weight         <-> <p>norm.weight
//   output.weight              <-> lm_head.weight (absent when embeddings are tied)
//   blk.N.attn_norm.weight     <-> <p>layers.N.input_layernorm.weight
//   blk.N.attn_q|k|v.weight    <-> <p>layers.N.self_attn.q_proj|k_proj|v_proj.weight
//   blk.N.attn_output.weight   <-> <p>layers.N.self_attn.o_proj.weight
//   blk.N.attn_q_norm|k_norm   <-> <p>layers.N.self_attn.q_norm|k_norm
//   blk.N.post_attention_norm  <-> <p>layers.N.post_attention_layernorm
//   blk.N.ffn_norm             <-> <p>layers.N.pre_feedforward_layernorm
//   blk.N.ffn_gate|up|down     <-> <p>layers.N.mlp.gate_proj|up_proj|down_proj
//   blk.N.post_ffw_norm        <-> <p>layers.N.post_feedforward_layernorm
// where the HF text prefix <p> is "model." (Gemma3ForCausalLM),
// "language_model.model." (multimodal, transformers < 4.52) or
// "model.language_model." (multimodal, newer). Vision tensors ("vision_tower.",
// "multi_modal_projector.", with or without a leading "model.") are skipped:
// this engine runs the text model only.
//
// Conventions that differ between the two files of the same weights:
//  - Shapes: GGUF dims list ne[0] first, the innermost (contiguous) dimension;
//    safetensors shapes list the outermost first. A Linear weight of HF shape
//    [out, in] therefore has GGUF dims [in, out] with identical bytes
//    (gguf_dims_from_hf_shape()).
//  - RMSNorm weights: Gemma computes x * (1 + w). HF stores w; llama.cpp's
//    converter stores 1 + w (gguf_norm_stores_one_plus_w()), so a loader that
//    reads safetensors must add 1 to reach the GGUF convention.
//  - llama.cpp's converter may also trim token_embd rows to the tokenizer's
//    vocabulary (262144) where config.json says 262208: compare shapes, not
//    vocab_size, when checking token_embd.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/base/error.hpp"

namespace unicorn::io {

enum class HfTensorKind {
  Text,     // part of the Gemma 3 text model: maps to a GGUF name
  Vision,   // vision tower or multimodal projector: skipped by this engine
  Unknown,  // neither: a different architecture or a corrupt checkpoint
};

// Which HF naming a reverse mapping should produce.
enum class HfLayout {
  CausalLM,          // model.layers.N..., lm_head.weight
  MultimodalLegacy,  // language_model.model.layers.N..., language_model.lm_head.weight
  Multimodal,        // model.language_model.layers.N..., lm_head.weight
};

namespace detail {

struct NamePair {
  std::string_view gguf;
  std::string_view hf;
};

// Per-layer suffixes after "blk.N." / "<p>layers.N.".
inline constexpr NamePair kLayerNames[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
};

// Model-level names after the text prefix <p>.
inline constexpr NamePair kModelNames[] = {
    {"token_embd.weight", "embed_tokens.weight"},
    {"output_norm.weight", "norm.weight"},
};

// Longest first: "model.language_model." must win over "model.".
inline constexpr std::string_view kHfTextPrefixes[] = {
    "model.language_model.", "language_model.model.", "model."};
inline constexpr std::string_view kHfLmHeadNames[] = {"lm_head.weight",
                                                      "language_model.lm_head.weight"};
inline constexpr std::string_view kHfVisionPrefixes[] = {
    "vision_tower.", "multi_modal_projector.", "model.vision_tower.",
    "model.multi_modal_projector."};

inline constexpr uint32_t kMaxLayerIndex = 99999;

inline std::string_view hf_text_prefix(HfLayout layout) {
  switch (layout) {
    case HfLayout::CausalLM: return "model.";
    case HfLayout::MultimodalLegacy: return "language_model.model.";
    case HfLayout::Multimodal: return "model.language_model.";
  }
  return "model.";
}

// Parses "N." at the front of `s` (canonical decimal: no sign, no leading
// zeros) and drops it; nullopt if `s` does not start that way.
inline std::optional<uint32_t> take_layer_index(std::string_view& s) {
  const size_t dot = s.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 5) return std::nullopt;
  if (dot > 1 && s[0] == '0') return std::nullopt;
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + dot, n);
  if (ec != std::errc() || end != s.data() + dot || n > kMaxLayerIndex) return std::nullopt;
  s.remove_prefix(dot + 1);
  return n;
}

// The GGUF name of a text tensor, or nullopt when `hf` is not one.
inline std::optional<std::string> hf_text_to_gguf(std::string_view hf) {
  for (const auto name : kHfLmHeadNames)
    if (hf == name) return std::string("output.weight");
  for (const auto prefix : kHfTextPrefixes) {
    if (!hf.starts_with(prefix)) continue;
    std::string_view rest = hf.substr(prefix.size());
    for (const auto& p : kModelNames)
      if (rest == p.hf) return std::string(p.gguf);
    if (!rest.starts_with("layers.")) return std::nullopt;
    rest.remove_prefix(7);
    const auto layer = take_layer_index(rest);
    if (!layer) return std::nullopt;
    for (const auto& p : kLayerNames)
      if (rest == p.hf) return "blk." + std::to_string(*layer) + "." + std::string(p.gguf);
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace detail

inline HfTensorKind classify_hf_tensor(std::string_view hf_name) {
  if (detail::hf_text_to_gguf(hf_name)) return HfTensorKind::Text;
  for (const auto prefix : detail::kHfVisionPrefixes)
    if (hf_name.starts_with(prefix)) return HfTensorKind::Vision;
  return HfTensorKind::Unknown;
}

// The GGUF name of an HF tensor; nullopt for vision/projector tensors (skip
// them). Throws unicorn::Error for a name that is neither (use
// classify_hf_tensor() to ask without throwing).
inline std::optional<std::string> hf_to_gguf_name(std::string_view hf_name) {
  if (auto gguf = detail::hf_text_to_gguf(hf_name)) return gguf;
  if (classify_hf_tensor(hf_name) == HfTensorKind::Vision) return std::nullopt;
  throw Error("unknown tensor '" + std::string(hf_name) +
              "': not a Gemma 3 text or vision tensor");
}

// The HF name of a GGUF tensor in the given layout. Throws unicorn::Error for a
// name outside the Gemma 3 text model.
inline std::string gguf_to_hf_name(std::string_view gguf_name,
                                   HfLayout layout = HfLayout::CausalLM) {
  const std::string prefix(detail::hf_text_prefix(layout));
  if (gguf_name == "output.weight")
    return layout == HfLayout::MultimodalLegacy ? "language_model.lm_head.weight"
                                                : "lm_head.weight";
  for (const auto& p : detail::kModelNames)
    if (gguf_name == p.gguf) return prefix + std::string(p.hf);
  std::string_view rest = gguf_name;
  if (rest.starts_with("blk.")) {
    rest.remove_prefix(4);
    if (const auto layer = detail::take_layer_index(rest))
      for (const auto& p : detail::kLayerNames)
        if (rest == p.gguf)
          return prefix + "layers." + std::to_string(*layer) + "." + std::string(p.hf);
  }
  throw Error("unknown tensor '" + std::string(gguf_name) + "': not a Gemma 3 GGUF tensor name");
}

// True for the RMSNorm weights that llama.cpp's converter stores as 1 + w.
inline bool gguf_norm_stores_one_plus_w(std::string_view gguf_name) {
  return gguf_name.ends_with("norm.weight");
}

// GGUF dims (ne[0] innermost) of a tensor with HF/safetensors shape (outermost first).
inline std::vector<uint64_t> gguf_dims_from_hf_shape(std::span<const uint64_t> hf_shape) {
  return {hf_shape.rbegin(), hf_shape.rend()};
}

}  // namespace unicorn::io
