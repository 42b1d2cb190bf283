// unicorn/model/vision_from_mmproj.hpp — llama.cpp's mmproj GGUF for Gemma 3
// (what its converter writes and Google's QAT repositories ship beside each
// model) as VisionWeights: general.architecture "clip", clip.projector_type
// "gemma3", the clip.vision.* keys of config/vision_hparams.hpp and the v.* and
// mm.* tensors of model/vision_weights.hpp.
//
// Files written by llama.cpp's older Gemma 3 script name fc1 ffn_down and fc2
// ffn_up; llama.cpp's loader swaps them back where ffn_down's rows are
// `hidden` long (clip.cpp, is_ffn_swapped), and so does this reader.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/config/vision_dims.hpp"
#include "unicorn/config/vision_hparams.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/model/vision_weights.hpp"

namespace unicorn {

namespace detail {

// A name for dims read from a file: the official encoder's where they are its.
inline std::string_view vision_dims_name(const VisionDims& v) {
  for (const VisionDims* known : {&kGemma3Siglip, &kGemma3SiglipTiny}) {
    VisionDims k = *known;
    k.name = v.name;
    if (k.image_size == v.image_size && k.patch == v.patch && k.layers == v.layers && k.hidden == v.hidden &&
        k.heads == v.heads && k.ffn == v.ffn && k.tokens_per_image == v.tokens_per_image)
      return known->name;
  }
  return "siglip";
}

inline std::array<float, 3> image_norm(const io::GgufFile& g, std::string_view key, float gemma) {
  const std::vector<float> v = g.get_f32_array(key);
  if (v.size() != 3) throw Error(g.name() + ": " + std::string(key) + " has " + std::to_string(v.size()) + " values, not 3 (R, G, B)");
  for (float x : v)
    if (!(std::fabs(x - gemma) <= 1e-6f))
      throw Error(g.name() + ": " + std::string(key) + " holds " + std::to_string(x) + "; Gemma 3's image processor uses " +
                  std::to_string(gemma) + " for every channel, and so does this engine");
  return {v[0], v[1], v[2]};
}

}  // namespace detail

inline VisionWeights vision_from_mmproj(const io::GgufFile& g) {
  const std::string& file = g.name();
  const std::string arch = g.try_string(kGgufArchitectureKey).value_or("(none)");
  if (arch != kClipArchitecture)
    throw Error(file + ": general.architecture is '" + arch + "', not '" + std::string(kClipArchitecture) +
                "': not an mmproj file" + (arch == kGgufArchitecture ? " (a Gemma 3 text model: give it as the model)" : ""));
  if (!g.try_bool(kClipHasVisionKey).value_or(false))
    throw Error(file + ": " + std::string(kClipHasVisionKey) + " is not true: this mmproj has no image encoder");
  std::string projector = g.try_string(kClipProjectorTypeKey).value_or("");
  if (projector.empty()) projector = g.try_string("clip.vision.projector_type").value_or("(none)");
  if (projector != kClipProjectorGemma3)
    throw Error(file + ": the projector type (" + std::string(kClipProjectorTypeKey) + ") is '" + projector +
                "', not Gemma 3's '" + std::string(kClipProjectorGemma3) + "': an mmproj of another model");
  if (!g.try_bool(kClipUseGeluKey).value_or(false))
    throw Error(file + ": " + std::string(kClipUseGeluKey) +
                " is not true, so llama.cpp would run its MLP with quick GELU; Gemma 3's SigLIP uses GELU-tanh");

  VisionWeights w;
  w.source = file;
  VisionDims& v = w.dims;
  v.image_size = g.get_u32(vision_hparam("image_size").gguf);
  v.patch = g.get_u32(vision_hparam("patch").gguf);
  v.layers = g.get_u32(vision_hparam("layers").gguf);
  v.hidden = g.get_u32(vision_hparam("hidden").gguf);
  v.heads = g.get_u32(vision_hparam("heads").gguf);
  v.ffn = g.get_u32(vision_hparam("ffn").gguf);
  v.layer_norm_eps = g.get_f32(vision_hparam("layer_norm_eps").gguf);
  v.soft_norm_eps = v.layer_norm_eps;
  const uint32_t scale = g.try_u32(kClipScaleFactorKey).value_or(kClipDefaultScaleFactor);
  if (scale == 0 || v.patch == 0 || (v.image_size / v.patch) % scale != 0)
    throw Error(file + ": " + std::string(kClipScaleFactorKey) + " = " + std::to_string(scale) +
                " does not divide the " + std::to_string(v.patch ? v.image_size / v.patch : 0) + " patches per side");
  const uint64_t side = v.image_size / v.patch / scale;
  v.tokens_per_image = uint32_t(std::min<uint64_t>(side * side, UINT32_MAX));
  check_vision_dims_in_range(v, file, /*gguf=*/true);
  detail::check_vision_invariants(v, file);
  v.name = detail::vision_dims_name(v);

  w.projection_dim = g.get_u32(kClipProjectionDimKey);
  if (w.projection_dim == 0 || w.projection_dim > hparam("hidden").max)
    throw Error(file + ": " + std::string(kClipProjectionDimKey) + " = " + std::to_string(w.projection_dim) +
                " is not a Gemma 3 text model's hidden size");
  w.image_mean = detail::image_norm(g, kClipImageMeanKey, kGemma3ImageMean);
  w.image_std = detail::image_norm(g, kClipImageStdKey, kGemma3ImageStd);
  w.soft_norm_stores_one_plus_w = true;

  // Every v.* and mm.* tensor must be one the encoder has: a tensor of a layer
  // past block_count says the file's keys and tensors disagree.
  const auto specs = vision_tensor_specs(v, w.projection_dim);
  for (const io::GgufTensor& t : g.tensors()) {
    bool known = false;
    for (const auto& s : specs) known = known || s.name == t.name;
    if (!known)
      throw Error(file + ": tensor '" + t.name + "' is no part of a Gemma 3 image encoder of " +
                  std::to_string(v.layers) + " layers (clip.vision.block_count)");
  }
  std::vector<detail::FoundTensor> found;
  found.reserve(g.tensors().size());
  for (const io::GgufTensor& t : g.tensors()) {
    const FormatInfo* f = find_format(t.ggml_type);
    if (f == nullptr || !t.known_type)
      throw Error(file + ": tensor '" + t.name + "' is " + std::string(io::ggml_type_name(t.ggml_type)) +
                  "; the image encoder reads F32, F16, BF16 or Q8_0");
    found.push_back({t.dims, f->format, t.data, t.name});
  }
  const auto index_of = [&](std::string_view name) -> detail::FoundTensor* {
    for (size_t i = 0; i < g.tensors().size(); ++i)
      if (g.tensors()[i].name == name) return &found[i];
    return nullptr;
  };
  // The older naming: fc1 ([hidden, ffn]) under ffn_down, fc2 under ffn_up.
  for (uint32_t l = 0; l < v.layers && v.hidden != v.ffn; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    detail::FoundTensor* up = index_of(b + "ffn_up.weight");
    detail::FoundTensor* down = index_of(b + "ffn_down.weight");
    detail::FoundTensor* up_bias = index_of(b + "ffn_up.bias");
    detail::FoundTensor* down_bias = index_of(b + "ffn_down.bias");
    if (up && down && up_bias && down_bias && !down->dims.empty() && !up->dims.empty() &&
        down->dims[0] == v.hidden && up->dims[0] == v.ffn) {
      std::swap(*up, *down);
      std::swap(*up_bias, *down_bias);
    }
  }
  detail::take_vision_tensors(w, [&](const std::string& name) -> const detail::FoundTensor* { return index_of(name); });
  return w;
}

}  // namespace unicorn
