// unicorn/config/vision_dims.hpp — Gemma 3's image encoder (SigLIP) and its
// projector as compile-time values, beside the text model's ModelDims.
//
// An image of image_size² pixels is cut into (image_size / patch)² patches, each
// embedded by a patch×patch convolution plus a learned position; `layers`
// pre-norm transformer blocks (LayerNorm with bias, bidirectional attention with
// biased q/k/v/o, a GELU-tanh MLP with biases) and a final LayerNorm follow. The
// projector average-pools the patch grid to tokens_per_image soft tokens
// (pool = patches per side / tokens per side), RMS-normalises them (weight 1 + w,
// as Gemma's norms) and maps them linearly to the text model's hidden size.
// Field names follow transformers' SiglipVisionConfig; llama.cpp's mmproj GGUF
// stores them as clip.vision.* keys.
#pragma once

#include <boost/hana/define_struct.hpp>
#include <cstdint>
#include <string_view>

namespace unicorn {

struct VisionDims {
  BOOST_HANA_DEFINE_STRUCT(VisionDims,
    (std::string_view, name),
    (uint32_t, image_size),        // pixels per side of the square input
    (uint32_t, patch),             // pixels per side of a patch (conv kernel and stride)
    (uint32_t, layers),
    (uint32_t, hidden),
    (uint32_t, heads),
    (uint32_t, ffn),               // MLP intermediate size
    (uint32_t, tokens_per_image),  // soft tokens the projector makes of one image
    (float, layer_norm_eps),
    (float, soft_norm_eps));       // the projector's RMSNorm (transformers gives it the vision layer_norm_eps)

  constexpr uint32_t patches_per_side() const { return image_size / patch; }
  constexpr uint32_t patches() const { return patches_per_side() * patches_per_side(); }
  constexpr uint32_t tokens_per_side() const {
    uint32_t s = 0;
    while ((s + 1) * (s + 1) <= tokens_per_image) ++s;
    return s;
  }
  // Patches per side averaged into one soft token (4 for Gemma 3: 64 -> 16).
  constexpr uint32_t pool() const { return patches_per_side() / tokens_per_side(); }
  constexpr uint32_t head_dim() const { return hidden / heads; }
  // Inputs of the patch embedding: one patch's pixels, 3 channels.
  constexpr uint32_t patch_inputs() const { return 3 * patch * patch; }
};

// The encoder of every Gemma 3 vision-language size (4B, 12B, 27B): the same
// SigLIP So400m/14 at 896 pixels, from Google's released config.json files.
inline constexpr VisionDims kGemma3Siglip{
    .name = "gemma3-siglip", .image_size = 896, .patch = 14, .layers = 27, .hidden = 1152,
    .heads = 16, .ffn = 4304, .tokens_per_image = 256, .layer_norm_eps = 1e-6f,
    .soft_norm_eps = 1e-6f};

// A tiny encoder of the same architecture for tests (tests/vision): 64 pixels,
// 16×16 patches of 4, pooled 4×4 into 16 soft tokens, for kGemma3Tiny's text model.
inline constexpr VisionDims kGemma3SiglipTiny{
    .name = "gemma3-siglip-tiny", .image_size = 64, .patch = 4, .layers = 2, .hidden = 64,
    .heads = 4, .ffn = 128, .tokens_per_image = 16, .layer_norm_eps = 1e-6f,
    .soft_norm_eps = 1e-6f};

// The architecture's invariants, checked for every deployment that names an
// encoder (config/deployment.hpp), with messages that name it.
constexpr bool patches_tile_image(const VisionDims& v) {
  return v.patch > 0 && v.image_size % v.patch == 0;
}
constexpr bool tokens_pool_patches(const VisionDims& v) {
  const uint32_t s = v.tokens_per_side();
  return s > 0 && s * s == v.tokens_per_image && v.patches_per_side() % s == 0;
}
constexpr bool vision_heads_divide(const VisionDims& v) {
  return v.heads > 0 && v.hidden % v.heads == 0;
}

}  // namespace unicorn
