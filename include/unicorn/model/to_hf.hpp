// unicorn/model/to_hf.hpp — ModelDims (and an image encoder's VisionDims) as a
// Hugging Face config.json, so that the scripts which train or check a model in
// transformers take its dimensions from the engine instead of repeating them
// (`unicorn-convert --random NAME --hf-config FILE`; tools/train_demo/train.py,
// tests/model/make_golden.py, tests/vision/make_golden.py). The inverse of
// dims_from_hf (model/from_hf.hpp) for every built-in ModelDims, which a test pins.
#pragma once

#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "unicorn/config/dims.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/config/vision_dims.hpp"
#include "unicorn/config/vision_hparams.hpp"

namespace unicorn {

namespace detail {
// A float as the shortest decimal that reads back as it (1e-06, not
// 9.999999974752427e-07), the way config.json files spell them.
inline double shortest_decimal(float f) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof(text) - 1, f).ptr;
  *end = '\0';
  return std::strtod(text, nullptr);
}
}  // namespace detail

// Layer types and RoPE are written in both of transformers' spellings: the
// official releases' (rope_theta, rope_local_base_freq, rope_scaling,
// sliding_window_pattern) and the newer per-layer-type one (layer_types,
// rope_parameters), which the reader (io/hf_config.hpp) prefers.
inline nlohmann::json hf_text_config(const ModelDims& d) {
  using nlohmann::json;
  json c = json::object();
  c["architectures"] = json::array({"Gemma3ForCausalLM"});
  c["model_type"] = "gemma3_text";
  c[hf_key("hidden")] = d.hidden;
  c[hf_key("layers")] = d.layers;
  c[hf_key("heads")] = d.heads;
  c[hf_key("kv_heads")] = d.kv_heads;
  c[hf_key("head_dim")] = d.head_dim;
  c[hf_key("ffn")] = d.ffn;
  c[hf_key("vocab")] = d.vocab;
  c[hf_key("sliding_window")] = d.sliding_window;
  c[hf_key("query_pre_attn_scalar")] = detail::shortest_decimal(d.query_pre_attn_scalar);
  c[hf_key("rms_eps")] = detail::shortest_decimal(d.rms_eps);
  c[hf_key("max_context")] = d.max_context;
  c["hidden_activation"] = kHfHiddenActivation;
  c["tie_word_embeddings"] = true;
  json types = json::array();
  for (uint32_t l = 0; l < d.layers; ++l)
    types.push_back(d.layer_kind(l) == AttentionKind::Global ? "full_attention" : "sliding_attention");
  c["layer_types"] = types;
  c["sliding_window_pattern"] = d.global_every;
  const double global_theta = detail::shortest_decimal(d.rope_theta_global);
  const double local_theta = detail::shortest_decimal(d.rope_theta_local);
  const double factor = detail::shortest_decimal(d.rope_scale_global);
  const bool scaled = d.rope_scale_global != 1.f;
  c[hf_key("rope_theta_global")] = global_theta;
  c[hf_key("rope_theta_local")] = local_theta;
  c["rope_scaling"] = scaled ? json{{"rope_type", "linear"}, {"factor", factor}} : json(nullptr);
  json full = {{"rope_type", scaled ? "linear" : "default"}, {"rope_theta", global_theta}};
  if (scaled) full["factor"] = factor;
  c["rope_parameters"] = {{"full_attention", full},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", local_theta}}}};
  return c;
}

// An image encoder beside the text model's keys, as a Gemma3ForConditionalGeneration's
// config.json holds it: "vision_config" (a SiglipVisionConfig) and the top-level
// mm_tokens_per_image. The inverse of vision_dims_from_hf_config
// (model/vision_from_hf.hpp), which a test pins for every built-in encoder.
inline void add_hf_vision_config(nlohmann::json& config, const VisionDims& v) {
  nlohmann::json vision = {{"model_type", "siglip_vision_model"},
                           {"hidden_act", kHfVisionActivation},
                           {"num_channels", 3},
                           {"vision_use_head", false}};
  vision[vision_hparam("image_size").hf] = v.image_size;
  vision[vision_hparam("patch").hf] = v.patch;
  vision[vision_hparam("layers").hf] = v.layers;
  vision[vision_hparam("hidden").hf] = v.hidden;
  vision[vision_hparam("heads").hf] = v.heads;
  vision[vision_hparam("ffn").hf] = v.ffn;
  vision[vision_hparam("layer_norm_eps").hf] = detail::shortest_decimal(v.layer_norm_eps);
  config[kHfVisionConfigKey] = vision;
  config[vision_hparam("tokens_per_image").hf] = v.tokens_per_image;
}

}  // namespace unicorn
