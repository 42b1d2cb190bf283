// unicorn/io/vision_tensor_names.hpp — the names of Gemma 3's image encoder
// (SigLIP) and projector tensors: llama.cpp's mmproj GGUF names and Hugging
// Face's.
//
//   v.patch_embd.weight|bias        <-> <v>embeddings.patch_embedding.weight|bias
//   v.position_embd.weight          <-> <v>embeddings.position_embedding.weight
//   v.blk.N.ln1.weight|bias         <-> <v>encoder.layers.N.layer_norm1.weight|bias
//   v.blk.N.attn_q|k|v.weight|bias  <-> <v>encoder.layers.N.self_attn.q_proj|k_proj|v_proj...
//   v.blk.N.attn_out.weight|bias    <-> <v>encoder.layers.N.self_attn.out_proj...
//   v.blk.N.ln2.weight|bias         <-> <v>encoder.layers.N.layer_norm2...
//   v.blk.N.ffn_up.weight|bias      <-> <v>encoder.layers.N.mlp.fc1...
//   v.blk.N.ffn_down.weight|bias    <-> <v>encoder.layers.N.mlp.fc2...
//   v.post_ln.weight|bias           <-> <v>post_layernorm.weight|bias
//   mm.input_projection.weight      <-> <m>mm_input_projection_weight
//   mm.soft_emb_norm.weight         <-> <m>mm_soft_emb_norm.weight
// where <v> is "vision_tower." with "vision_model." after it (the official
// releases) or not (transformers 5's files), and "model." before it or not
// (transformers >= 4.52); <m> is "multi_modal_projector." or
// "model.multi_modal_projector.". A SigLIP pooling head (<v>head.*, only where
// vision_use_head is set) is no part of Gemma 3 and is skipped.
//
// Layouts (model/vision_weights.hpp has the shapes): GGUF dims are the
// safetensors shape reversed with the same bytes (io/tensor_names.hpp), for the
// 4-D patch convolution too; mm.input_projection.weight is HF's [vision hidden,
// text hidden] parameter, used transposed by both (x @ W), not a Linear.
// llama.cpp's converter stores the soft-embedding norm as 1 + w; HF stores w.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "unicorn/base/error.hpp"
#include "unicorn/io/tensor_names.hpp"

namespace unicorn::io {

namespace detail {

// Per-layer stems after "v.blk.N." / "<v>encoder.layers.N." (each with .weight and .bias).
inline constexpr NamePair kVisionLayerStems[] = {
    {"ln1", "layer_norm1"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_out", "self_attn.out_proj"},
    {"ln2", "layer_norm2"},
    {"ffn_up", "mlp.fc1"},
    {"ffn_down", "mlp.fc2"},
};
// Whole-tower names after "<v>".
inline constexpr NamePair kVisionTowerNames[] = {
    {"v.patch_embd.weight", "embeddings.patch_embedding.weight"},
    {"v.patch_embd.bias", "embeddings.patch_embedding.bias"},
    {"v.position_embd.weight", "embeddings.position_embedding.weight"},
    {"v.post_ln.weight", "post_layernorm.weight"},
    {"v.post_ln.bias", "post_layernorm.bias"},
};
// Projector names after "<m>".
inline constexpr NamePair kProjectorNames[] = {
    {"mm.input_projection.weight", "mm_input_projection_weight"},
    {"mm.soft_emb_norm.weight", "mm_soft_emb_norm.weight"},
};

// Longest first.
inline constexpr std::string_view kHfVisionTowerPrefixes[] = {
    "model.vision_tower.vision_model.", "vision_tower.vision_model.", "model.vision_tower.", "vision_tower."};
inline constexpr std::string_view kHfProjectorPrefixes[] = {"model.multi_modal_projector.",
                                                            "multi_modal_projector."};

}  // namespace detail

// The GGUF name of a Hugging Face vision tower or projector tensor; nullopt
// for one this engine skips (a SigLIP pooling head). Throws unicorn::Error for
// a vision-prefixed name that is no part of Gemma 3's encoder, and for a name
// outside the vision tower and projector.
inline std::optional<std::string> hf_vision_to_gguf_name(std::string_view hf) {
  for (const auto prefix : detail::kHfProjectorPrefixes)
    if (hf.starts_with(prefix)) {
      const std::string_view rest = hf.substr(prefix.size());
      for (const auto& p : detail::kProjectorNames)
        if (rest == p.hf) return std::string(p.gguf);
      throw Error("unknown tensor '" + std::string(hf) + "': not a Gemma 3 projector tensor");
    }
  for (const auto prefix : detail::kHfVisionTowerPrefixes) {
    if (!hf.starts_with(prefix)) continue;
    std::string_view rest = hf.substr(prefix.size());
    if (rest.starts_with("head.")) return std::nullopt;
    for (const auto& p : detail::kVisionTowerNames)
      if (rest == p.hf) return std::string(p.gguf);
    if (rest.starts_with("encoder.layers.")) {
      rest.remove_prefix(15);
      if (const auto layer = detail::take_layer_index(rest))
        for (const auto& p : detail::kVisionLayerStems)
          for (const std::string_view end : {".weight", ".bias"})
            if (rest.size() == p.hf.size() + end.size() && rest.starts_with(p.hf) && rest.ends_with(end))
              return "v.blk." + std::to_string(*layer) + "." + std::string(p.gguf) + std::string(end);
    }
    throw Error("unknown tensor '" + std::string(hf) + "': not a Gemma 3 (SigLIP) vision tower tensor");
  }
  throw Error("tensor '" + std::string(hf) + "' is not in the vision tower or the multimodal projector");
}

// True for the tensor llama.cpp's converter stores as 1 + w (Gemma's RMSNorm
// weight); the SigLIP LayerNorms are stored as they are.
inline bool mmproj_norm_stores_one_plus_w(std::string_view gguf_name) {
  return gguf_name == "mm.soft_emb_norm.weight";
}

}  // namespace unicorn::io
