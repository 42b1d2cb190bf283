// unicorn/vision/from_weights.hpp — the encoder's host table (vision/tensors.hpp)
// from the VisionWeights a reader made of a file (model/vision_weights.hpp: an
// mmproj GGUF, or a Hugging Face directory): mmproj names to Hugging Face's,
// ggml's dims reversed to Hugging Face's shapes, the same bytes. Two tensors
// are converted on the host: an mmproj's soft-embedding norm, stored as 1 + w
// (the encoder's pool kernel applies 1 + w itself), and a Q8_0 projector,
// made fp32 (the encoder stores the projector transposed, across its blocks).
#pragma once

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/model/vision_weights.hpp"
#include "unicorn/vision/tensors.hpp"

namespace unicorn::vision {

// The table and the bytes of the tensors converted for it; the others point
// into the file's mapping, which must outlive the table's use (the upload).
struct WeightTable {
  HostTensors tensors;
  std::vector<std::vector<std::byte>> converted;
};

// The Hugging Face name of an mmproj tensor name (vision_tensor_specs' names).
inline std::string hf_name_of(std::string_view gguf) {
  const auto ends = [&](std::string_view s) { return gguf.ends_with(s); };
  const std::string leaf = ends(".weight") ? "weight" : "bias";
  if (gguf.starts_with("v.patch_embd.")) return "vision_tower.embeddings.patch_embedding." + leaf;
  if (gguf == "v.position_embd.weight") return std::string(names::kPosition);
  if (gguf.starts_with("v.post_ln.")) return "vision_tower.post_layernorm." + leaf;
  if (gguf == "mm.input_projection.weight") return std::string(names::kProjection);
  if (gguf == "mm.soft_emb_norm.weight") return std::string(names::kSoftNorm);
  if (gguf.starts_with("v.blk.")) {
    const size_t dot = gguf.find('.', 6);
    const uint32_t layer = uint32_t(std::stoul(std::string(gguf.substr(6, dot - 6))));
    const std::string_view stem = gguf.substr(dot + 1, gguf.rfind('.') - dot - 1);
    static constexpr std::pair<std::string_view, std::string_view> kStems[] = {
        {"ln1", "layer_norm1"},          {"ln2", "layer_norm2"},          {"attn_q", "self_attn.q_proj"},
        {"attn_k", "self_attn.k_proj"},  {"attn_v", "self_attn.v_proj"},  {"attn_out", "self_attn.out_proj"},
        {"ffn_up", "mlp.fc1"},           {"ffn_down", "mlp.fc2"}};
    for (const auto& [from, to] : kStems)
      if (stem == from) return names::layer(layer, std::string(to) + "." + leaf);
  }
  throw Error("vision: no encoder tensor corresponds to '" + std::string(gguf) + "'");
}

inline WeightTable weight_table(const VisionWeights& w) {
  WeightTable out;
  const auto f32_bytes = [&](const std::vector<float>& v) -> std::span<const std::byte> {
    std::vector<std::byte>& b = out.converted.emplace_back(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  for (const VisionTensor& t : w.tensors) {
    HostTensor h{t.format, std::vector<uint64_t>(t.dims.rbegin(), t.dims.rend()), t.data};
    const std::string name = hf_name_of(t.name);
    if (name == names::kSoftNorm && w.soft_norm_stores_one_plus_w) {
      std::vector<float> v(t.dims[0]);
      for (size_t i = 0; i < v.size(); ++i) v[i] = vision_element(h, i) - 1.0f;
      h = {Format::F32, h.shape, f32_bytes(v)};
    } else if (name == names::kProjection && t.format == Format::Q8_0) {
      // ggml's blocks { f16 d; int8 q[32] }: x = d * q, exact in fp32.
      std::vector<float> v(t.data.size() / 34 * 32);
      for (size_t b = 0; b < v.size() / 32; ++b) {
        const HostTensor scale{Format::F16, {1}, t.data.subspan(34 * b, 2)};
        const float d = vision_element(scale, 0);
        for (size_t i = 0; i < 32; ++i) v[32 * b + i] = d * float(int8_t(t.data[34 * b + 2 + i]));
      }
      h = {Format::F32, h.shape, f32_bytes(v)};
    }
    out.tensors.emplace(name, std::move(h));
  }
  return out;
}

}  // namespace unicorn::vision
