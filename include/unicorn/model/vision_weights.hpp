// unicorn/model/vision_weights.hpp — Gemma 3's image encoder as a file holds
// it: its VisionDims and a host-side table of its tensors (name, shape, format,
// bytes), whichever file it came from (an mmproj GGUF: model/vision_from_mmproj.hpp;
// a Hugging Face directory: model/vision_from_hf.hpp), and the checks of it
// against the text model it feeds and against a compiled deployment.
//
// Shapes are ggml's (ne[0] innermost, the safetensors shape reversed), in the
// order llama.cpp's loader reads them (tools/mtmd/clip.cpp, load_tensors):
//   v.patch_embd.weight      [patch, patch, 3, hidden]   the patch convolution
//   v.patch_embd.bias        [hidden]
//   v.position_embd.weight   [hidden, patches]
//   v.blk.N.ln1|ln2.*        [hidden]                    LayerNorm weight and bias
//   v.blk.N.attn_q|k|v|out.weight [hidden, hidden], .bias [hidden]
//   v.blk.N.ffn_up.weight    [hidden, ffn], .bias [ffn]  (fc1)
//   v.blk.N.ffn_down.weight  [ffn, hidden], .bias [hidden] (fc2)
//   v.post_ln.*              [hidden]
//   mm.input_projection.weight [text hidden, hidden]     soft tokens = x @ W
//   mm.soft_emb_norm.weight  [hidden]                    RMSNorm: 1 + w in an mmproj, w in HF
#pragma once

#include <array>
#include <cstdint>
#include <iomanip>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/config/dims.hpp"
#include "unicorn/config/vision_dims.hpp"
#include "unicorn/config/vision_hparams.hpp"
#include "unicorn/quant/formats.hpp"

namespace unicorn {

// What a tensor is to the encoder, which decides the formats it may come in.
enum class VisionTensorKind : uint8_t {
  Vector,     // LayerNorm and RMSNorm weights, biases
  Embedding,  // the patch convolution and the position embedding (llama.cpp writes them F32)
  Matrix,     // q, k, v, out, fc1, fc2 and the input projection
};

struct VisionTensorSpec {
  std::string name;            // the mmproj GGUF name
  int layer;                   // -1 outside the blocks
  std::vector<uint64_t> dims;  // ggml order
  VisionTensorKind kind;
};

// Every tensor of an encoder of dims `v` feeding a text model of `text_hidden`,
// in llama.cpp's order.
inline std::vector<VisionTensorSpec> vision_tensor_specs(const VisionDims& v, uint32_t text_hidden) {
  using K = VisionTensorKind;
  const uint64_t h = v.hidden;
  std::vector<VisionTensorSpec> s = {
      {"v.patch_embd.weight", -1, {v.patch, v.patch, 3, h}, K::Embedding},
      {"v.patch_embd.bias", -1, {h}, K::Vector},
      {"v.position_embd.weight", -1, {h, v.patches()}, K::Embedding},
  };
  for (uint32_t l = 0; l < v.layers; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    const int L = int(l);
    for (const char* stem : {"ln1"}) {
      s.push_back({b + stem + ".weight", L, {h}, K::Vector});
      s.push_back({b + stem + ".bias", L, {h}, K::Vector});
    }
    for (const char* stem : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      s.push_back({b + stem + ".weight", L, {h, h}, K::Matrix});
      s.push_back({b + stem + ".bias", L, {h}, K::Vector});
    }
    s.push_back({b + "ln2.weight", L, {h}, K::Vector});
    s.push_back({b + "ln2.bias", L, {h}, K::Vector});
    s.push_back({b + "ffn_up.weight", L, {h, v.ffn}, K::Matrix});
    s.push_back({b + "ffn_up.bias", L, {v.ffn}, K::Vector});
    s.push_back({b + "ffn_down.weight", L, {v.ffn, h}, K::Matrix});
    s.push_back({b + "ffn_down.bias", L, {h}, K::Vector});
  }
  s.push_back({"v.post_ln.weight", -1, {h}, K::Vector});
  s.push_back({"v.post_ln.bias", -1, {h}, K::Vector});
  s.push_back({"mm.input_projection.weight", -1, {text_hidden, h}, K::Matrix});
  s.push_back({"mm.soft_emb_norm.weight", -1, {h}, K::Vector});
  return s;
}

// The formats the encoder reads a tensor of this kind in: what llama.cpp's
// converter and Google's files write (F32, F16, BF16; Q8_0 for matrices whose
// rows are whole blocks, ffn_down of the official 4304-wide rows is F16 there).
constexpr bool vision_format_supported(VisionTensorKind kind, Format f) {
  if (f == Format::F32 || f == Format::F16 || f == Format::BF16) return true;
  return kind == VisionTensorKind::Matrix && f == Format::Q8_0;
}

struct VisionTensor {
  std::string name;  // the mmproj GGUF name
  int layer;
  std::vector<uint64_t> dims;  // ggml order
  VisionTensorKind kind;
  Format format;
  uint64_t bytes;
  std::span<const std::byte> data;  // in the file's mapping, alive as long as the file
  std::string file_name;            // the name the file gives it (an HF name, or a legacy mmproj's)
};

struct VisionWeights {
  VisionDims dims;
  uint32_t projection_dim = 0;  // the text hidden size the projector maps to
  std::array<float, 3> image_mean{}, image_std{};
  // An mmproj stores the soft-embedding norm as 1 + w (llama.cpp's converter);
  // a Hugging Face directory as w. The encoder multiplies by 1 + w either way.
  bool soft_norm_stores_one_plus_w = true;
  std::string source;                 // the file or directory, for messages
  std::vector<VisionTensor> tensors;  // vision_tensor_specs order

  const VisionTensor& tensor(std::string_view name) const {
    for (const VisionTensor& t : tensors)
      if (t.name == name) return t;
    throw Error(source + ": no image encoder tensor '" + std::string(name) + "'");
  }
  uint64_t bytes() const {
    uint64_t n = 0;
    for (const VisionTensor& t : tensors) n += t.bytes;
    return n;
  }
};

namespace detail {

inline std::string dims_text(std::span<const uint64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// The family's invariants (config/vision_dims.hpp) of dims a file gave,
// as errors naming the file.
inline void check_vision_invariants(const VisionDims& v, const std::string& source) {
  if (!patches_tile_image(v))
    throw Error(source + ": the image size " + std::to_string(v.image_size) + " is not a whole number of " +
                std::to_string(v.patch) + "-pixel patches");
  if (!vision_heads_divide(v))
    throw Error(source + ": the encoder's hidden size " + std::to_string(v.hidden) + " is not a multiple of its " +
                std::to_string(v.heads) + " attention heads");
  if (!tokens_pool_patches(v))
    throw Error(source + ": " + std::to_string(v.tokens_per_image) + " soft tokens per image are not a square grid that " +
                std::to_string(v.patches_per_side()) + " patches per side pool into evenly");
}

// A tensor a file holds, as a reader finds it.
struct FoundTensor {
  std::vector<uint64_t> dims;  // ggml order
  Format format;
  std::span<const std::byte> data;
  std::string file_name;
};

// Fills w.tensors from `find(name)` (nullptr when absent) by the spec table;
// each tensor must be there, of its shape and in a format the encoder reads.
template <class Find>
void take_vision_tensors(VisionWeights& w, Find&& find) {
  for (VisionTensorSpec& s : vision_tensor_specs(w.dims, w.projection_dim)) {
    const FoundTensor* t = find(s.name);
    if (t == nullptr)
      throw Error(w.source + ": tensor '" + s.name + "' is missing (a Gemma 3 image encoder of " +
                  std::to_string(w.dims.layers) + " layers has it)");
    if (t->dims != s.dims)
      throw Error(w.source + ": tensor '" + t->file_name + "' has shape " + dims_text(t->dims) +
                  " (ggml order); an encoder of hidden " + std::to_string(w.dims.hidden) + ", feed-forward " +
                  std::to_string(w.dims.ffn) + ", " + std::to_string(w.dims.patches()) + " patches of " +
                  std::to_string(w.dims.patch) + " pixels and projection " + std::to_string(w.projection_dim) +
                  " needs " + dims_text(s.dims));
    if (!vision_format_supported(s.kind, t->format))
      throw Error(w.source + ": tensor '" + t->file_name + "' is " + std::string(format_name(t->format)) +
                  "; the image encoder reads F32, F16, BF16" +
                  (s.kind == VisionTensorKind::Matrix ? " or Q8_0" : "") + " there");
    uint64_t elems = 1;
    for (uint64_t d : s.dims) elems *= d;
    w.tensors.push_back({std::move(s.name), s.layer, std::move(s.dims), s.kind, t->format,
                         row_bytes(t->format, elems), t->data, t->file_name});
  }
}

}  // namespace detail

// The file against the text model it is to feed: the projector maps into the
// text model's hidden size, and one image's tokens with <start_of_image> and
// <end_of_image> fit the text model's context.
inline void check_vision_fits_text(const VisionWeights& w, const ModelDims& text) {
  if (w.projection_dim != text.hidden)
    throw Error(w.source + ": the projector maps to " + std::to_string(w.projection_dim) +
                " (clip.vision.projection_dim), but the text model " + std::string(text.name) + "'s hidden size is " +
                std::to_string(text.hidden) + ": this image encoder belongs to another model");
  if (uint64_t{w.dims.tokens_per_image} + 2 > text.max_context)
    throw Error(w.source + ": an image takes " + std::to_string(w.dims.tokens_per_image) +
                " soft tokens and two markers, more than the text model's context of " +
                std::to_string(text.max_context));
}

// The file against the encoder a deployment was compiled for, field by field
// by the key the file gives it (the run-time witness of DeploymentConfig::vision).
inline void check_vision_fits(const VisionWeights& w, const VisionDims& compiled, bool gguf = true) {
  const auto num = [](double x) {
    std::ostringstream text;
    text << std::setprecision(9) << x;
    std::string s = text.str();
    if (s.find('.') == std::string::npos) return s;
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  };
  const auto compare = [&](std::string_view field, double file, double engine) {
    if (file == engine) return;
    const VisionHparam& h = kVisionHparams[vision_hparam_index(field)];
    const std::string_view key = !gguf ? h.hf : h.gguf.empty() ? kClipScaleFactorKey : h.gguf;
    throw Error(w.source + ": " + std::string(key) + " gives " + std::string(field) + " = " + num(file) +
                ", but this engine was compiled for " + std::string(compiled.name) + " with " + num(engine));
  };
  const VisionDims& f = w.dims;
  compare("image_size", f.image_size, compiled.image_size);
  compare("patch", f.patch, compiled.patch);
  compare("layers", f.layers, compiled.layers);
  compare("hidden", f.hidden, compiled.hidden);
  compare("heads", f.heads, compiled.heads);
  compare("ffn", f.ffn, compiled.ffn);
  compare("tokens_per_image", f.tokens_per_image, compiled.tokens_per_image);
  compare("layer_norm_eps", f.layer_norm_eps, compiled.layer_norm_eps);
  compare("soft_norm_eps", f.soft_norm_eps, compiled.soft_norm_eps);
}

}  // namespace unicorn
