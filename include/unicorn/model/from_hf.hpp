// unicorn/model/from_hf.hpp — a Hugging Face config.json as ModelDims.
//
// Shared by the loader (which compares the result with the compiled engine),
// unicorn-convert (which writes the GGUF hyperparameters from it) and
// unicorn-model-dims (which gives unicorn_add_engine the engine to compile).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "unicorn/base/error.hpp"
#include "unicorn/config/dims.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/io/hf_config.hpp"

namespace unicorn {

// Fields config.json does not carry (the name) are taken from `base`.
inline ModelDims dims_from_hf(const io::HfTextConfig& c, const ModelDims& base,
                              const std::string& source) {
  ModelDims d = base;
  d.hidden = c.hidden_size;
  d.layers = c.num_hidden_layers;
  d.heads = c.num_attention_heads;
  d.kv_heads = c.num_key_value_heads;
  d.head_dim = c.head_dim;
  d.ffn = c.intermediate_size;
  // Multimodal checkpoints add 64 image soft-token rows past the text vocabulary.
  d.vocab = c.multimodal && c.vocab_size == kHfMultimodalVocab ? kGemma3TextVocab : c.vocab_size;
  d.sliding_window = c.sliding_window;
  d.rope_theta_local = c.rope_theta_local;
  d.rope_theta_global = c.rope_theta_global;
  d.rope_scale_global = c.rope_scaling_factor_global;
  d.query_pre_attn_scalar = c.query_pre_attn_scalar;
  d.rms_eps = c.rms_norm_eps;
  d.max_context = uint32_t(std::min<uint64_t>(c.max_position_embeddings, UINT32_MAX));
  // Layer kinds: the engine supports "every Nth layer is global".
  uint32_t first_global = 0;
  for (size_t i = 0; i < c.layer_is_sliding.size() && !first_global; ++i)
    if (!c.layer_is_sliding[i]) first_global = uint32_t(i + 1);
  d.global_every = first_global ? first_global : d.layers + 1;
  for (size_t i = 0; i < c.layer_is_sliding.size(); ++i)
    if (c.layer_is_sliding[i] == ((i + 1) % d.global_every == 0))
      throw Error(source + ": layer " + std::to_string(i) + " breaks the every-" +
                  std::to_string(d.global_every) +
                  "th-layer-global pattern, which is the only one this engine supports");
  check_dims_in_range(d, source, /*gguf=*/false);
  return d;
}

}  // namespace unicorn
