// unicorn/model/vision_from_hf.hpp — the image encoder of a Hugging Face
// Gemma3ForConditionalGeneration directory as VisionWeights: config.json's
// "vision_config" (a SiglipVisionConfig; keys and defaults from
// config/vision_hparams.hpp) and top-level mm_tokens_per_image, the text
// model's hidden size (io/hf_config.hpp), preprocessor_config.json's
// image_mean and image_std where the directory has one, and the
// vision_tower.* and multi_modal_projector.* tensors (io/vision_tensor_names.hpp).
//
// safetensors data is used where it lies: a tensor's ggml dims are its shape
// reversed with the same bytes, F32, F16 or BF16. The soft-embedding norm is
// HF's w (VisionWeights::soft_norm_stores_one_plus_w is false).
#pragma once

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "unicorn/base/error.hpp"
#include "unicorn/config/vision_hparams.hpp"
#include "unicorn/io/hf_config.hpp"
#include "unicorn/io/json_file.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/io/tensor_names.hpp"
#include "unicorn/io/vision_tensor_names.hpp"
#include "unicorn/model/vision_from_mmproj.hpp"
#include "unicorn/model/vision_weights.hpp"

namespace unicorn {

// The vision part of a parsed config.json (`root`, named `source` in messages);
// throws when it has none or it is not Gemma 3's SigLIP.
inline VisionWeights vision_dims_from_hf_config(const nlohmann::json& root, const std::string& source) {
  const io::HfTextConfig text = io::parse_hf_config_json(root, source);
  const io::detail::HfFields top(root, "", source);
  const auto vision = top.try_object(kHfVisionConfigKey);
  if (!vision)
    throw Error(source + ": no '" + std::string(kHfVisionConfigKey) +
                "': a text-only checkpoint has no image encoder");
  if (const auto t = vision->try_string("model_type"); t && *t != "siglip_vision_model")
    vision->fail("model_type", "is '" + *t + "', not Gemma 3's 'siglip_vision_model'");
  if (const auto act = vision->try_string("hidden_act"); act && *act != kHfVisionActivation)
    vision->fail("hidden_act", "is '" + *act + "'; Gemma 3's SigLIP uses '" + std::string(kHfVisionActivation) + "'");
  if (const auto c = vision->try_uint("num_channels", UINT32_MAX); c && *c != 3)
    vision->fail("num_channels", "is " + std::to_string(*c) + "; the encoder reads RGB images (3)");

  VisionWeights w;
  w.source = source;
  VisionDims& v = w.dims;
  const auto u32 = [&](const VisionHparam& h) { return vision->u32(h.hf, uint32_t(h.hf_default)); };
  v.image_size = u32(vision_hparam("image_size"));
  v.patch = u32(vision_hparam("patch"));
  v.layers = u32(vision_hparam("layers"));
  v.hidden = u32(vision_hparam("hidden"));
  v.heads = u32(vision_hparam("heads"));
  v.ffn = u32(vision_hparam("ffn"));
  constexpr const VisionHparam& kTokens = vision_hparam("tokens_per_image");
  v.tokens_per_image = top.u32(kTokens.hf, uint32_t(kTokens.hf_default));
  constexpr const VisionHparam& kEps = vision_hparam("layer_norm_eps");
  v.layer_norm_eps = vision->f32(kEps.hf, kEps.hf_default);
  v.soft_norm_eps = v.layer_norm_eps;  // Gemma3MultiModalProjector's RMSNorm takes it
  check_vision_dims_in_range(v, source, /*gguf=*/false);
  detail::check_vision_invariants(v, source);
  v.name = detail::vision_dims_name(v);
  w.projection_dim = text.hidden_size;
  w.image_mean.fill(kGemma3ImageMean);
  w.image_std.fill(kGemma3ImageStd);
  w.soft_norm_stores_one_plus_w = false;
  return w;
}

// The encoder of the directory `dir` whose safetensors `st` holds.
inline VisionWeights vision_from_hf(const std::filesystem::path& dir, const io::SafetensorsModel& st) {
  const auto config = dir / "config.json";
  VisionWeights w = vision_dims_from_hf_config(io::read_json_file(config), config.string());
  w.source = dir.string();
  // The image processor's normalisation, where the directory says it.
  const auto pre = dir / "preprocessor_config.json";
  std::error_code ec;
  if (std::filesystem::is_regular_file(pre, ec)) {
    const nlohmann::json p = io::read_json_file(pre);
    for (const auto& [key, gemma] : {std::pair{"image_mean", kGemma3ImageMean}, std::pair{"image_std", kGemma3ImageStd}}) {
      const auto it = p.is_object() ? p.find(key) : p.end();
      if (it == p.end()) continue;
      bool ok = it->is_array() && it->size() == 3;
      for (size_t i = 0; ok && i < 3; ++i) ok = (*it)[i].is_number() && std::fabs((*it)[i].get<double>() - gemma) <= 1e-6;
      if (!ok)
        throw Error(pre.string() + ": '" + key + "' is " + it->dump() + "; Gemma 3's image processor uses " +
                    std::to_string(gemma) + " for each of the 3 channels, and so does this engine");
    }
  }

  std::map<std::string, detail::FoundTensor, std::less<>> found;
  for (const io::SafeTensor& t : st.tensors()) {
    if (io::classify_hf_tensor(t.name) != io::HfTensorKind::Vision) continue;
    const auto name = io::hf_vision_to_gguf_name(t.name);
    if (!name) continue;  // a SigLIP pooling head
    Format f;
    if (t.dtype == "F32") f = Format::F32;
    else if (t.dtype == "F16") f = Format::F16;
    else if (t.dtype == "BF16") f = Format::BF16;
    else throw Error(t.file + ": tensor '" + t.name + "' is " + t.dtype + "; the image encoder reads F32, F16 or BF16");
    found[*name] = {io::gguf_dims_from_hf_shape(t.shape), f, t.data, t.name};
  }
  detail::take_vision_tensors(w, [&](const std::string& name) -> const detail::FoundTensor* {
    const auto it = found.find(name);
    return it == found.end() ? nullptr : &it->second;
  });
  return w;
}

}  // namespace unicorn
