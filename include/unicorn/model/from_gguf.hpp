// unicorn/model/from_gguf.hpp — a GGUF file's header as ModelDims and Scheme.
//
// Shared by the loader (engine/weight_file.hpp compares the dims with the
// compiled engine), the generator's choice among compiled engines, and
// unicorn-model-dims (which gives unicorn_add_engine(<t> GGUF file) the
// engine to compile for a file).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/config/dims.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/layout/layout.hpp"
#include "unicorn/quant/scheme.hpp"

namespace unicorn {

// The query scale a GGUF file implies, which no key carries: llama.cpp's gemma3
// loader takes hidden / heads for the 62-layer 27B and head_dim otherwise.
// Every official size has it; a checkpoint with another query_pre_attn_scalar
// (the test models' 24) runs differently from its GGUF (unicorn-convert says so).
constexpr float gguf_query_pre_attn_scalar(const ModelDims& d) {
  return d.layers == kGemma3_27B.layers && d.heads ? float(d.hidden / d.heads) : float(d.head_dim);
}

// The file's dimensions. What a GGUF file does not say is taken from `base`:
// llama.cpp's gemma3 loader fixes the local RoPE base (10000), the layer
// pattern (every 6th layer global) and the query scale, so the loader takes
// them from the compiled engine (config/hparams.hpp says more).
ModelDims dims_from_gguf(const io::GgufFile& g, const ModelDims& base);

// The file's dimensions as llama.cpp runs it, for an engine compiled from the
// file alone: the layer pattern and local RoPE base from the file where it
// has them (unicorn-convert writes them), else llama.cpp's 6 and 10000; the
// query scale by llama.cpp's rule (hidden / heads for the 62-layer 27B, else
// head_dim), which no key carries.
ModelDims dims_from_gguf(const io::GgufFile& g);

namespace detail {

// A weight matrix of a model, as a scheme's rule sees it, and the format a file has for it.
struct FileMatrix {
  std::string name;  // GGUF name
  WeightKind kind;
  int layer;  // -1: the embedding
  uint64_t cols;
  Format format;
};

WeightKind weight_kind(Role r);

// Every matrix of a model of dims `m` with the file's format for it (a
// missing tensor, or one of a type the engine does not run, is an error).
std::vector<FileMatrix> file_matrices(const io::GgufFile& g, const ModelDims& m);

// The first matrix whose format `s` does not give it, or nullptr.
inline const FileMatrix* first_outside(const std::vector<FileMatrix>& ms, const Scheme& s, MixShape shape) {
  for (const FileMatrix& x : ms)
    if (format_of(s, x.kind, x.layer, shape, x.cols) != x.format) return &x;
  return nullptr;
}

}  // namespace detail

// The scheme a GGUF file's tensor types follow, for a model of dims `m`, with
// a `kv` KV cache: a named scheme (quant/scheme.hpp) where one gives every
// matrix the file's format, else one built from the formats themselves
// (format_of's rule: a format for the embedding, the attention and the FFN
// matrices, attn_v and ffn_down with their own in llama-quantize's layers, and
// K-quant fallbacks). A file whose formats follow no such rule is an error
// that names the first tensor breaking the nearest one.
Scheme scheme_from_gguf(const io::GgufFile& g, const ModelDims& m, Format kv = Format::F16);

}  // namespace unicorn

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn {

UNICORN_DECL ModelDims dims_from_gguf(const io::GgufFile& g, const ModelDims& base) {
  const std::string arch = g.try_string(kGgufArchitectureKey).value_or("(none)");
  if (arch != kGgufArchitecture)
    throw Error(g.name() + ": " + std::string(kGgufArchitectureKey) + " is '" + arch +
                "'; this engine runs Gemma 3 ('" + std::string(kGgufArchitecture) + "') files");
  ModelDims d = base;
  d.hidden = g.get_u32(gguf_key("hidden"));
  d.layers = g.get_u32(gguf_key("layers"));
  d.heads = g.get_u32(gguf_key("heads"));
  d.kv_heads = g.get_u32(gguf_key("kv_heads"));
  d.head_dim = g.try_u32(gguf_key("head_dim")).value_or(d.heads ? d.hidden / d.heads : 0);
  d.ffn = g.get_u32(gguf_key("ffn"));
  d.sliding_window = g.get_u32(gguf_key("sliding_window"));
  d.rope_theta_global = g.try_f32(gguf_key("rope_theta_global")).value_or(1e6f);
  d.rope_scale_global = g.try_f32(gguf_key("rope_scale_global")).value_or(1.0f);
  d.rms_eps = g.get_f32(gguf_key("rms_eps"));
  d.max_context = g.get_u32(gguf_key("max_context"));
  const io::GgufTensor* embd = g.find_tensor("token_embd.weight");
  if (!embd || embd->dims.size() != 2)
    throw Error(g.name() + ": tensor 'token_embd.weight' is missing or not 2-D");
  if (embd->dims[1] > UINT32_MAX)
    throw Error(g.name() + ": token_embd.weight has " + std::to_string(embd->dims[1]) + " rows, more than any vocabulary");
  d.vocab = uint32_t(embd->dims[1]);
  check_dims_in_range(d, g.name(), /*gguf=*/true);
  // Keys with no ModelDims field of their own that still change what runs.
  if (const auto v = g.try_u32(kGgufValueLengthKey); v && *v != d.head_dim)
    throw Error(g.name() + ": " + std::string(kGgufValueLengthKey) + " is " + std::to_string(*v) + " but " +
                std::string(gguf_key("head_dim")) + " is " + std::to_string(d.head_dim) +
                ": Gemma 3's values have the keys' length");
  if (const auto t = g.try_string(kGgufRopeScalingTypeKey); t && *t != "linear" && *t != "none")
    throw Error(g.name() + ": " + std::string(kGgufRopeScalingTypeKey) + " is '" + *t +
                "'; this engine scales RoPE linearly, as Gemma 3 does ('linear' or 'none')");
  if (const auto q = g.try_u32("general.quantization_version"); q && *q != kGgufQuantizationVersion)
    throw Error(g.name() + ": general.quantization_version is " + std::to_string(*q) + "; this engine reads version " +
                std::to_string(kGgufQuantizationVersion) + " block layouts (llama.cpp's since 2023)");
  // A vocabulary in the file must have a row of the embedding per token, as
  // llama.cpp requires: ids past the rows would read beyond the table.
  if (const io::GgufValue* tokens = g.find("tokenizer.ggml.tokens"); tokens && tokens->array())
    if (tokens->array()->size() != embd->dims[1])
      throw Error(g.name() + ": tokenizer.ggml.tokens lists " + std::to_string(tokens->array()->size()) +
                  " tokens but token_embd.weight has " + std::to_string(embd->dims[1]) +
                  " rows: the vocabulary and the embedding disagree");
  return d;
}

UNICORN_DECL ModelDims dims_from_gguf(const io::GgufFile& g) {
  ModelDims base{};
  base.global_every = g.try_u32(hparam("global_every").gguf).value_or(6);
  base.rope_theta_local = g.try_f32(hparam("rope_theta_local").gguf).value_or(10000.f);
  base.query_pre_attn_scalar = float(hparam("query_pre_attn_scalar").hf_default);  // llama.cpp's rule below
  ModelDims d = dims_from_gguf(g, base);
  d.query_pre_attn_scalar = gguf_query_pre_attn_scalar(d);
  return d;
}

}  // namespace unicorn

namespace unicorn::detail {

UNICORN_DECL WeightKind weight_kind(Role r) {
  switch (r) {
    case Role::AttnQ: return WeightKind::AttnQ;
    case Role::AttnK: return WeightKind::AttnK;
    case Role::AttnV: return WeightKind::AttnV;
    case Role::AttnOut: return WeightKind::AttnOut;
    case Role::FfnGate: return WeightKind::FfnGate;
    case Role::FfnUp: return WeightKind::FfnUp;
    case Role::FfnDown: return WeightKind::FfnDown;
    default: return WeightKind::Embedding;
  }
}

UNICORN_DECL std::vector<FileMatrix> file_matrices(const io::GgufFile& g, const ModelDims& m) {
  std::vector<FileMatrix> out;
  const DeploymentConfig c = make_deployment(m, schemes::kF32);
  for_each_tensor(c, [&](const TensorShape& t, int layer, Arena arena) {
    if (arena != Arena::Weights || t.rows == 1 || t.role == Role::LmHead) return;
    TensorSlot slot{};
    slot.role = t.role;
    slot.layer = layer;
    const std::string name = slot.gguf_name();
    const io::GgufTensor* f = g.find_tensor(name);
    if (!f) throw Error(g.name() + ": tensor '" + name + "' is missing");
    const FormatInfo* info = find_format(f->ggml_type);
    if (!info)
      throw Error(g.name() + ": tensor '" + name + "' has ggml type " + std::to_string(f->ggml_type) +
                  ", a format this engine does not run");
    out.push_back({name, weight_kind(t.role), layer, t.cols, info->format});
  });
  return out;
}

}  // namespace unicorn::detail

namespace unicorn {

UNICORN_DECL Scheme scheme_from_gguf(const io::GgufFile& g, const ModelDims& m, Format kv) {
  if (g.find_tensor("output.weight"))
    throw Error(g.name() + ": tensor 'output.weight' is a separate output matrix; Gemma 3 ties its output "
                "to token_embd, and so does this engine");
  const std::vector<detail::FileMatrix> ms = detail::file_matrices(g, m);
  for (const NamedScheme& n : kNamedSchemes) {
    Scheme s = n.scheme;
    s.kv_cache = kv;
    if (!detail::first_outside(ms, s, mix_shape(m))) return s;
  }
  // Each field's candidates: the formats its matrices have, and the K-quants
  // whose fallback over those matrices' rows gives one of them.
  enum Field { Embedding, Attention, Ffn, AttnVMore, FfnDownMore, kFields };
  std::vector<Format> candidates[kFields];
  const auto add = [&](Field f, Format format, uint64_t cols) {
    const auto push = [&](Format x) {
      if (std::find(candidates[f].begin(), candidates[f].end(), x) == candidates[f].end()) candidates[f].push_back(x);
    };
    push(format);  // the file's own format first, then the superblock formats that fall back to it
    for (const FormatInfo& i : kFormats)
      if (k_quant_fallback(i.format, cols) == format) push(i.format);
  };
  for (const detail::FileMatrix& x : ms) {
    const bool more = x.layer >= 0 && more_bits_layer(uint32_t(x.layer), m.layers);
    switch (x.kind) {
      case WeightKind::Embedding: add(Embedding, x.format, x.cols); break;
      case WeightKind::AttnV: add(more ? AttnVMore : Attention, x.format, x.cols); break;
      case WeightKind::FfnDown: add(more ? FfnDownMore : Ffn, x.format, x.cols); break;
      case WeightKind::FfnGate:
      case WeightKind::FfnUp: add(Ffn, x.format, x.cols); break;
      default: add(Attention, x.format, x.cols); break;
    }
  }
  Scheme nearest{};
  const detail::FileMatrix* nearest_miss = nullptr;
  size_t nearest_at = 0;
  for (Format e : candidates[Embedding])
    for (Format a : candidates[Attention])
      for (Format f : candidates[Ffn]) {
        const std::vector<Format> vs = candidates[AttnVMore].empty() ? std::vector{a} : candidates[AttnVMore];
        const std::vector<Format> ds = candidates[FfnDownMore].empty() ? std::vector{f} : candidates[FfnDownMore];
        for (Format v : vs)
          for (Format d : ds) {
            const Scheme s{.embedding = e, .attention = a, .ffn = f, .kv_cache = kv, .lm_head = e,
                           .attn_v_more_bits = v, .ffn_down_more_bits = d};
            const detail::FileMatrix* miss = detail::first_outside(ms, s, mix_shape(m));
            if (!miss) return s;
            const size_t at = size_t(miss - ms.data());
            if (!nearest_miss || at > nearest_at) nearest = s, nearest_miss = miss, nearest_at = at;
          }
      }
  if (!nearest_miss) throw Error(g.name() + ": no weight matrices");
  throw Error(g.name() + ": tensor '" + nearest_miss->name + "' is " + std::string(format_name(nearest_miss->format)) +
              " where the nearest scheme the engine has (embedding " + std::string(format_name(nearest.embedding)) +
              ", attention " + std::string(format_name(nearest.attention)) + ", ffn " +
              std::string(format_name(nearest.ffn)) + ", attn_v / ffn_down with more bits " +
              std::string(format_name(nearest.attn_v_more_bits)) + " / " +
              std::string(format_name(nearest.ffn_down_more_bits)) + " in llama-quantize's layers) gives " +
              std::string(format_name(format_of(nearest, nearest_miss->kind, nearest_miss->layer, mix_shape(m),
                                                nearest_miss->cols))) +
              ": the file's mix of formats is not one this engine's schemes express (quant/scheme.hpp)");
}

}  // namespace unicorn

#endif  // UNICORN_DEFINE_HERE
