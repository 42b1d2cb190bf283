// unicorn/config/vision_hparams.hpp — the one table of the image encoder's
// hyperparameters: each VisionDims field with its key in llama.cpp's mmproj GGUF
// (clip.vision.*), its key in a Hugging Face config.json and transformers'
// default for it, as config/hparams.hpp does for the text model.
//
// Read by model/vision_from_mmproj.hpp and model/vision_from_hf.hpp, written by
// unicorn-convert --mmproj (tools/convert.cpp). Tests spell the keys out on
// purpose: they are independent witnesses of the file formats.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

#include "unicorn/base/error.hpp"
#include "unicorn/config/vision_dims.hpp"

namespace unicorn {

struct VisionHparam {
  std::string_view field;  // VisionDims member
  // llama.cpp's mmproj key (tools/mtmd/clip-impl.h). tokens_per_image has none:
  // the file gives the pooling factor (kClipScaleFactorKey) instead.
  std::string_view gguf;
  // config.json key: under "vision_config", except mm_tokens_per_image (top level).
  std::string_view hf;
  double hf_default;  // transformers' SiglipVisionConfig / Gemma3Config default
  double min, max;    // what a file may say at all (check_vision_dims_in_range)
};

// The projector's RMSNorm takes the vision LayerNorm's epsilon in transformers
// (Gemma3MultiModalProjector) and in llama.cpp (one key for both), so
// soft_norm_eps has the same keys as layer_norm_eps.
inline constexpr VisionHparam kVisionHparams[] = {
    // field             GGUF key                                      config.json key          default  min    max
    {"image_size",       "clip.vision.image_size",                    "image_size",            224,     1,     1 << 14},
    {"patch",            "clip.vision.patch_size",                    "patch_size",            16,      1,     1 << 12},
    {"layers",           "clip.vision.block_count",                   "num_hidden_layers",     12,      1,     1024},
    {"hidden",           "clip.vision.embedding_length",              "hidden_size",           768,     1,     65536},
    {"heads",            "clip.vision.attention.head_count",          "num_attention_heads",   12,      1,     1024},
    {"ffn",              "clip.vision.feed_forward_length",           "intermediate_size",     3072,    1,     1 << 20},
    {"tokens_per_image", "",                                          "mm_tokens_per_image",   256,     1,     1 << 20},
    {"layer_norm_eps",   "clip.vision.attention.layer_norm_epsilon",  "layer_norm_eps",        1e-6,    1e-12, 1e-2},
    {"soft_norm_eps",    "clip.vision.attention.layer_norm_epsilon",  "layer_norm_eps",        1e-6,    1e-12, 1e-2},
};

// mmproj keys with no VisionDims field of their own (clip-impl.h's KEY_* names).
inline constexpr std::string_view kClipArchitecture = "clip";           // general.architecture
inline constexpr std::string_view kClipFileType = "mmproj";             // general.type
inline constexpr std::string_view kClipHasVisionKey = "clip.has_vision_encoder";
inline constexpr std::string_view kClipProjectorTypeKey = "clip.projector_type";
inline constexpr std::string_view kClipProjectorGemma3 = "gemma3";
inline constexpr std::string_view kClipProjectionDimKey = "clip.vision.projection_dim";  // = text hidden
inline constexpr std::string_view kClipImageMeanKey = "clip.vision.image_mean";          // 3 floats
inline constexpr std::string_view kClipImageStdKey = "clip.vision.image_std";
inline constexpr std::string_view kClipUseGeluKey = "clip.use_gelu";  // true: GELU-tanh, else llama.cpp runs gelu_quick
// Patches per side pooled into one soft token; absent means 4 (every Gemma 3
// size), and llama.cpp's converter writes it only where it differs.
inline constexpr std::string_view kClipScaleFactorKey = "clip.vision.projector.scale_factor";
inline constexpr uint32_t kClipDefaultScaleFactor = 4;
// Gemma3ImageProcessor normalises with mean 0.5 and std 0.5 per channel (pixels
// to [-1, 1]); the image path (image/) does exactly that.
inline constexpr float kGemma3ImageMean = 0.5f, kGemma3ImageStd = 0.5f;
// config.json: the top level's vision part and the activation SigLIP must use.
inline constexpr std::string_view kHfVisionConfigKey = "vision_config";
inline constexpr std::string_view kHfVisionActivation = "gelu_pytorch_tanh";

constexpr size_t vision_hparam_index(std::string_view field) {
  for (size_t i = 0; i < std::size(kVisionHparams); ++i)
    if (kVisionHparams[i].field == field) return i;
  return std::size(kVisionHparams);
}
// A VisionDims field's row at compile time: a misspelt field does not compile.
consteval const VisionHparam& vision_hparam(std::string_view field) {
  const size_t i = vision_hparam_index(field);
  if (i == std::size(kVisionHparams)) throw "unicorn: no such hyperparameter in kVisionHparams";
  return kVisionHparams[i];
}

// Throws naming the first field of `v` that is not finite or lies outside its
// row's [min, max], by the key it comes from in `source`.
inline void check_vision_dims_in_range(const VisionDims& v, const std::string& source, bool gguf) {
  namespace hana = boost::hana;
  hana::for_each(hana::accessors<VisionDims>(), [&](auto pair) {
    const auto value = hana::second(pair)(v);
    if constexpr (std::is_arithmetic_v<decltype(value)>) {  // every field but the name
      const std::string_view field = hana::to<char const*>(hana::first(pair));
      const VisionHparam& h = kVisionHparams[vision_hparam_index(field)];
      const double x = static_cast<double>(value);
      if (std::isfinite(x) && x >= h.min && x <= h.max) return;
      const std::string_view key = !gguf ? h.hf : h.gguf.empty() ? kClipScaleFactorKey : h.gguf;
      std::ostringstream text;
      text << std::setprecision(10) << source << ": " << key << " gives " << field << " = " << x
           << "; a Gemma 3 image encoder's is a finite number from " << h.min << " to " << h.max;
      throw Error(text.str());
    }
  });
}

namespace detail {
consteval bool vision_hparams_cover_vision_dims() {
  namespace hana = boost::hana;
  bool all = true;
  hana::for_each(hana::accessors<VisionDims>(), [&](auto pair) {
    const std::string_view field = hana::to<char const*>(hana::first(pair));
    all = all && (field == "name" || vision_hparam_index(field) < std::size(kVisionHparams));
  });
  return all && std::size(kVisionHparams) + 1 == decltype(hana::length(hana::accessors<VisionDims>()))::value;
}
static_assert(vision_hparams_cover_vision_dims(),
              "unicorn: kVisionHparams must have one row per VisionDims field (but name)");
}  // namespace detail

}  // namespace unicorn
