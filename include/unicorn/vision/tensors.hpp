// unicorn/vision/tensors.hpp — the image encoder's weights as the host hands
// them over: a table from tensor name to bytes, shape and format, whoever read
// them (a Hugging Face safetensors file, an mmproj GGUF). Names are Hugging
// Face's Gemma3ForConditionalGeneration names without the leading "model."
// (vision_tower.*, multi_modal_projector.*); shapes are outermost first, as
// Hugging Face's. expected_vision_tensors lists what an encoder of given
// dimensions needs; VisionEncoder (vision/encoder.hpp) checks a table against it.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/config/vision_dims.hpp"
#include "unicorn/quant/formats.hpp"

namespace unicorn::vision {

struct HostTensor {
  Format format;                     // F32, F16 or BF16; the layers' products also Q8_0 (ggml's blocks)
  std::vector<uint64_t> shape;       // outermost first
  std::span<const std::byte> bytes;  // row-major; read during the upload only
};
using HostTensors = std::map<std::string, HostTensor, std::less<>>;

// The tensors' names.
namespace names {
inline constexpr std::string_view kPatchWeight = "vision_tower.embeddings.patch_embedding.weight";
inline constexpr std::string_view kPatchBias = "vision_tower.embeddings.patch_embedding.bias";
inline constexpr std::string_view kPosition = "vision_tower.embeddings.position_embedding.weight";
inline constexpr std::string_view kPostNormWeight = "vision_tower.post_layernorm.weight";
inline constexpr std::string_view kPostNormBias = "vision_tower.post_layernorm.bias";
inline constexpr std::string_view kProjection = "multi_modal_projector.mm_input_projection_weight";
inline constexpr std::string_view kSoftNorm = "multi_modal_projector.mm_soft_emb_norm.weight";
// A layer's tensor: leaf such as "self_attn.q_proj.weight", "layer_norm1.bias".
inline std::string layer(uint32_t l, std::string_view leaf) {
  return "vision_tower.encoder.layers." + std::to_string(l) + "." + std::string(leaf);
}
}  // namespace names

struct ExpectedTensor {
  std::string name;
  std::vector<uint64_t> shape;
};

// Every tensor an encoder of dims v feeding a text model of text_hidden needs.
inline std::vector<ExpectedTensor> expected_vision_tensors(const VisionDims& v, uint32_t text_hidden) {
  const uint64_t H = v.hidden, F = v.ffn, P = v.patch;
  std::vector<ExpectedTensor> t = {
      {std::string(names::kPatchWeight), {H, 3, P, P}},
      {std::string(names::kPatchBias), {H}},
      {std::string(names::kPosition), {v.patches(), H}},
      {std::string(names::kPostNormWeight), {H}},
      {std::string(names::kPostNormBias), {H}},
      {std::string(names::kProjection), {H, text_hidden}},
      {std::string(names::kSoftNorm), {H}},
  };
  for (uint32_t l = 0; l < v.layers; ++l) {
    for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      t.push_back({names::layer(l, std::string("self_attn.") + p + ".weight"), {H, H}});
      t.push_back({names::layer(l, std::string("self_attn.") + p + ".bias"), {H}});
    }
    for (const char* n : {"layer_norm1", "layer_norm2"}) {
      t.push_back({names::layer(l, std::string(n) + ".weight"), {H}});
      t.push_back({names::layer(l, std::string(n) + ".bias"), {H}});
    }
    t.push_back({names::layer(l, "mlp.fc1.weight"), {F, H}});
    t.push_back({names::layer(l, "mlp.fc1.bias"), {F}});
    t.push_back({names::layer(l, "mlp.fc2.weight"), {H, F}});
    t.push_back({names::layer(l, "mlp.fc2.bias"), {H}});
  }
  return t;
}

inline std::string shape_text(std::span<const uint64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Bytes per element of the formats the encoder takes.
inline uint32_t vision_element_bytes(Format f) {
  switch (f) {
    case Format::F32: return 4;
    case Format::F16:
    case Format::BF16: return 2;
    default:
      throw Error("vision: the image encoder takes F32, F16 or BF16 tensors, not " +
                  std::string(format_name(f)));
  }
}

// One element as float: norms, biases and position embeddings go to the device in fp32.
inline float vision_element(const HostTensor& t, uint64_t i) {
  if (t.format == Format::F32) {
    float v;
    std::memcpy(&v, t.bytes.data() + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, t.bytes.data() + 2 * i, 2);
  if (t.format == Format::BF16) return std::bit_cast<float>(uint32_t(h) << 16);
  // IEEE half: sign, 5 exponent bits, 10 mantissa bits.
  const uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  const float sub = float(mant) * (1.0f / 16777216.0f);  // 2^-24 per unit
  return sign ? -sub : sub;
}

}  // namespace unicorn::vision
