// unicorn/quant/scheme.hpp — which block format each weight tensor uses.
//
// A scheme is a structural value. Norm weights are always F32 (they are tiny and
// llama.cpp writes them so). The LM head is tied to the embedding (Gemma 3): by
// default it reads the embedding tensor in the embedding's format; a scheme may
// instead keep a quantized copy for the output projection only
// (`with_lm_head`), made from the embedding at load time — the LM head is read
// whole for every token, the embedding only row by row.
//
// The embedding's format is the scheme's default, not a fixed part of it: a
// tied embedding is read by kernels for every format (the gather and the LM
// head's products), so an engine holds a file's token_embd in whatever format
// the file has (`takes_embedding`; EngineCore::hold_embedding_as lays the
// engine out again before loading). llama-quantize keeps it at Q6_K in its
// Q4_0 files, Google's QAT files at F16: one engine runs both.
//
// Mixed schemes are llama-quantize's _M files: attn_v and ffn_down take more
// bits in some layers (`more_bits_layer`), and a K-quant falls back to a
// 32-element format for a matrix whose rows are not whole 256-element
// superblocks. format_of() is the one rule, read by the layout, the loader's
// checks and unicorn-convert alike.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "unicorn/quant/formats.hpp"

namespace unicorn {

// llama-quantize's choice of the layers whose attn_v and ffn_down get more bits
// in its _M mixes (llama.cpp src/llama-quant.cpp, use_more_bits in
// llama_tensor_get_type_impl): the first and last eighth of the layers, and
// every third layer between them.
constexpr bool more_bits_layer(uint32_t layer, uint32_t layers) {
  const int i = int(layer), n = int(layers);
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// The layers whose attn_v or ffn_down a mix writes with more bits, by
// llama-quantize's rules (llama_tensor_get_type_impl): its _M mixes' choice
// (more_bits_layer), or the first `count` layers (Q4_K_S's attn_v: 4; Q3_K_M's: 2),
// or those below layers / `count` (Q4_K_S's ffn_down: the first eighth;
// Q3_K_M's: the first sixteenth).
struct MoreBitsLayers {
  enum class Rule : uint8_t { UseMoreBits, First, FirstPart };
  Rule rule = Rule::UseMoreBits;
  uint32_t count = 0;
  constexpr bool has(uint32_t layer, uint32_t layers) const {
    switch (rule) {
      case Rule::UseMoreBits: return more_bits_layer(layer, layers);
      case Rule::First: return layer < count;
      case Rule::FirstPart: return layer < layers / count;
    }
    return false;
  }
  constexpr uint32_t in(uint32_t layers) const {  // how many of `layers` it picks
    uint32_t n = 0;
    for (uint32_t l = 0; l < layers; ++l) n += has(l, layers);
    return n;
  }
  constexpr bool operator==(const MoreBitsLayers&) const = default;
};
namespace more_bits {
inline constexpr MoreBitsLayers kUseMoreBits{};
constexpr MoreBitsLayers first(uint32_t n) { return {MoreBitsLayers::Rule::First, n}; }
constexpr MoreBitsLayers first_part(uint32_t of) { return {MoreBitsLayers::Rule::FirstPart, of}; }
}  // namespace more_bits

// The format llama-quantize writes instead of a K-quant for a matrix whose rows
// (`cols` elements) are not whole superblocks (llama.cpp src/llama-quant.cpp,
// tensor_type_fallback): Q4_K becomes Q5_0, Q5_K Q5_1, Q6_K Q8_0, and F16
// where the rows are not whole 32-element blocks either. (The 1B's and 270M's
// K files: their 1152- and 640-wide rows.)
constexpr Format k_quant_fallback(Format f, uint64_t cols) {
  if (!is_k_quant(f) || cols % 256 == 0) return f;
  if (cols % 32 != 0) return Format::F16;
  return f == Format::Q4_K ? Format::Q5_0 : f == Format::Q5_K ? Format::Q5_1 : Format::Q8_0;
}

struct Scheme {
  Format embedding;   // token_embd: gathered per token, and read whole as the LM head
  Format attention;   // attn_q, attn_k, attn_v, attn_output
  Format ffn;         // ffn_gate, ffn_up, ffn_down
  Format kv_cache;    // F16 by default; F32 for reference checks
  Format lm_head = embedding;  // the output projection; another format: a separate copy
  // attn_v and ffn_down in the layers their MoreBitsLayers pick (the _M
  // mixes': more_bits_layer); by default the same as the others.
  Format attn_v_more_bits = attention;
  Format ffn_down_more_bits = ffn;
  MoreBitsLayers attn_v_layers{}, ffn_down_layers{};

  constexpr bool separate_lm_head() const { return lm_head != embedding; }
  // The formats of the layers' matrices: attention, FFN, and the more-bits layers' attn_v and ffn_down.
  constexpr std::array<Format, 4> layer_matrix_formats() const {
    return {attention, ffn, attn_v_more_bits, ffn_down_more_bits};
  }
  // Whether some layers' attn_v or ffn_down differ from the rest.
  constexpr bool mixed() const { return attn_v_more_bits != attention || ffn_down_more_bits != ffn; }
  // Whether an engine of this scheme holds a file's embedding in `format`:
  // any format, where the LM head reads the embedding itself; only its own
  // where the LM head is a copy (made from a float embedding at load).
  constexpr bool takes_embedding(Format format) const { return format == embedding || !separate_lm_head(); }
  // This scheme with the (tied) embedding, and the LM head that reads it, in `format`.
  constexpr Scheme with_embedding(Format format) const {
    Scheme s = *this;
    if (!separate_lm_head()) s.lm_head = format;
    s.embedding = format;
    return s;
  }
  // This scheme with the LM head read from a `format` copy of the embedding.
  constexpr Scheme with_lm_head(Format format) const {
    Scheme s = *this;
    s.lm_head = format;
    return s;
  }
  constexpr bool operator==(const Scheme&) const = default;
};

// The kinds of weight matrix a scheme assigns formats to (norms are F32).
enum class WeightKind { Embedding, LmHead, AttnQ, AttnK, AttnV, AttnOut, FfnGate, FfnUp, FfnDown };

// The format `s` stores a matrix of kind `k` in, in `layer` of `layers`
// (layer: -1 for the embedding and LM head), its rows `cols` elements long.
constexpr Format format_of(const Scheme& s, WeightKind k, int layer, uint32_t layers, uint64_t cols) {
  const auto more_in = [&](const MoreBitsLayers& m) { return layer >= 0 && m.has(uint32_t(layer), layers); };
  Format f = s.ffn;
  switch (k) {
    case WeightKind::Embedding: f = s.embedding; break;
    case WeightKind::LmHead: f = s.lm_head; break;
    case WeightKind::AttnQ:
    case WeightKind::AttnK:
    case WeightKind::AttnOut: f = s.attention; break;
    case WeightKind::AttnV: f = more_in(s.attn_v_layers) ? s.attn_v_more_bits : s.attention; break;
    case WeightKind::FfnGate:
    case WeightKind::FfnUp: f = s.ffn; break;
    case WeightKind::FfnDown: f = more_in(s.ffn_down_layers) ? s.ffn_down_more_bits : s.ffn; break;
  }
  return k_quant_fallback(f, cols);
}

namespace schemes {
// Every weight in one format, F16 KV cache: llama.cpp's `--outtype` files.
constexpr Scheme all(Format f, Format kv = Format::F16) { return {f, f, f, kv}; }
inline constexpr Scheme kF32 = all(Format::F32, Format::F32);  // reference checks
inline constexpr Scheme kF16 = all(Format::F16);
inline constexpr Scheme kBF16 = all(Format::BF16);
inline constexpr Scheme kQ8_0 = all(Format::Q8_0);
inline constexpr Scheme kQ4_0 = all(Format::Q4_0);
// ggml's older 32-element formats with a min (Q4_1, Q5_1) or a fifth bit
// (Q5_0, Q5_1): llama-quantize's Q4_1, Q5_0 and Q5_1 files (--pure), and the
// K mixes' fallbacks. From GGUF files, or quantized from safetensors at load as
// ggml's reference quantizers do (shaders/convert.comp).
inline constexpr Scheme kQ4_1 = all(Format::Q4_1);
inline constexpr Scheme kQ5_0 = all(Format::Q5_0);
inline constexpr Scheme kQ5_1 = all(Format::Q5_1);
// All matrices in one K-quant (Q4_K, Q6_K: llama.cpp's Q4_K_M mix; Q5_K: Q5_K_M's); for
// kernel and model tests. Only from GGUF files: the loader does not quantize to them.
inline constexpr Scheme kQ4_K = all(Format::Q4_K);
inline constexpr Scheme kQ5_K = all(Format::Q5_K);
inline constexpr Scheme kQ6_K = all(Format::Q6_K);
// llama-quantize's K mixes for Gemma 3 (llama.cpp src/llama-quant.cpp,
// llama_tensor_get_type_impl; Gemma 3 ties its output to token_embd, which
// therefore takes the output's rule: Q6_K). Q4_K_M: Q4_K, with Q6_K for attn_v
// and ffn_down in the more_bits_layer()s. Q5_K_M: the same over Q5_K. Q6_K:
// every matrix Q6_K.
inline constexpr Scheme kQ4_K_M{.embedding = Format::Q6_K, .attention = Format::Q4_K, .ffn = Format::Q4_K,
                                .kv_cache = Format::F16, .lm_head = Format::Q6_K,
                                .attn_v_more_bits = Format::Q6_K, .ffn_down_more_bits = Format::Q6_K};
inline constexpr Scheme kQ5_K_M{.embedding = Format::Q6_K, .attention = Format::Q5_K, .ffn = Format::Q5_K,
                                .kv_cache = Format::F16, .lm_head = Format::Q6_K,
                                .attn_v_more_bits = Format::Q6_K, .ffn_down_more_bits = Format::Q6_K};
// llama-quantize's _S mixes: Q4_K_S is Q4_K with Q5_K for attn_v in the first
// 4 layers and ffn_down in the first eighth; Q5_K_S every matrix Q5_K. Both
// keep the tied embedding at Q6_K (the output's rule). Read from llama-quantize
// --dry-run on files of every official shape (notes/file_types.md).
inline constexpr Scheme kQ4_K_S{.embedding = Format::Q6_K, .attention = Format::Q4_K, .ffn = Format::Q4_K,
                                .kv_cache = Format::F16, .lm_head = Format::Q6_K,
                                .attn_v_more_bits = Format::Q5_K, .ffn_down_more_bits = Format::Q5_K,
                                .attn_v_layers = more_bits::first(4), .ffn_down_layers = more_bits::first_part(8)};
inline constexpr Scheme kQ5_K_S = all(Format::Q5_K).with_embedding(Format::Q6_K);
// llama-quantize's Q4_0 and Q5_0 made with an importance matrix (--imatrix,
// as most Q4_0 files people download are): the first eighth of the layers'
// ffn_down in Q4_1 / Q5_1 (llama.cpp src/llama-quant.cpp: a guard against the
// first ffn_down layers going wrong), the embedding at Q6_K.
inline constexpr Scheme kQ4_0_IMatrix{.embedding = Format::Q6_K, .attention = Format::Q4_0, .ffn = Format::Q4_0,
                                      .kv_cache = Format::F16, .lm_head = Format::Q6_K,
                                      .attn_v_more_bits = Format::Q4_0, .ffn_down_more_bits = Format::Q4_1,
                                      .ffn_down_layers = more_bits::first_part(8)};
inline constexpr Scheme kQ5_0_IMatrix{.embedding = Format::Q6_K, .attention = Format::Q5_0, .ffn = Format::Q5_0,
                                      .kv_cache = Format::F16, .lm_head = Format::Q6_K,
                                      .attn_v_more_bits = Format::Q5_0, .ffn_down_more_bits = Format::Q5_1,
                                      .ffn_down_layers = more_bits::first_part(8)};
// Google's official QAT GGUF releases: Q4_0 weights, F16 embedding.
inline constexpr Scheme kQ4_0_QAT{Format::F16, Format::Q4_0, Format::Q4_0, Format::F16};
// The same file, with the LM head from a Q8_0 copy of the F16 embedding.
inline constexpr Scheme kQ4_0_QAT_Q8Head = kQ4_0_QAT.with_lm_head(Format::Q8_0);
}  // namespace schemes

// The schemes that have a name: what unicorn_add_engine's QUANT takes, and what
// messages call a file's or an engine's formats. The names are llama.cpp's
// file types (llama-quantize's, and `--outtype`'s), but Q4_0_QAT: Google's QAT
// releases (Q4_0 matrices, F16 embedding).
struct NamedScheme {
  std::string_view name;
  Scheme scheme;
};
inline constexpr NamedScheme kNamedSchemes[] = {
    {"Q4_0_QAT", schemes::kQ4_0_QAT}, {"Q4_K_M", schemes::kQ4_K_M}, {"Q5_K_M", schemes::kQ5_K_M},
    {"Q4_K_S", schemes::kQ4_K_S},     {"Q5_K_S", schemes::kQ5_K_S},
    {"Q4_0_imatrix", schemes::kQ4_0_IMatrix}, {"Q5_0_imatrix", schemes::kQ5_0_IMatrix},
    {"Q6_K", schemes::kQ6_K},         {"Q8_0", schemes::kQ8_0},     {"Q4_0", schemes::kQ4_0},
    {"Q4_1", schemes::kQ4_1},         {"Q5_0", schemes::kQ5_0},     {"Q5_1", schemes::kQ5_1},
    {"Q4_K", schemes::kQ4_K},         {"Q5_K", schemes::kQ5_K},     {"BF16", schemes::kBF16},
    {"F16", schemes::kF16},           {"F32", schemes::kF32},
};
// llama-quantize's file types as it lays them out for Gemma 3, and llama.cpp's
// LLAMA_FTYPE for each (general.file_type): what unicorn-convert --type writes.
// Read from llama-quantize --dry-run on files of every official shape
// (notes/file_types.md). Its Q4_0, Q4_1, Q5_0 and Q5_1 keep the tied embedding
// at Q6_K (Q8_0 for the 270M's and 1B's rows: k_quant_fallback); its --pure
// writes every matrix in the one format (`all`).
// The _imatrix entries are the layouts llama-quantize gives Q4_0 and Q5_0 with
// --imatrix (read from its source: a dry run needs no importance matrix for
// the others, and these are not in its table).
struct LlamaFileType {
  std::string_view name;
  Scheme scheme;
  uint32_t ftype;
  bool imatrix = false;  // the layout of llama-quantize --imatrix
};
inline constexpr LlamaFileType kLlamaFileTypes[] = {
    {"F32", schemes::kF32, 0},
    {"F16", schemes::kF16, 1},
    {"BF16", schemes::kBF16, 32},
    {"Q8_0", schemes::kQ8_0, 7},
    {"Q4_0", schemes::kQ4_0.with_embedding(Format::Q6_K), 2},
    {"Q4_1", schemes::kQ4_1.with_embedding(Format::Q6_K), 3},
    {"Q5_0", schemes::kQ5_0.with_embedding(Format::Q6_K), 8},
    {"Q5_1", schemes::kQ5_1.with_embedding(Format::Q6_K), 9},
    {"Q4_K_S", schemes::kQ4_K_S, 14},
    {"Q4_K_M", schemes::kQ4_K_M, 15},
    {"Q5_K_S", schemes::kQ5_K_S, 16},
    {"Q5_K_M", schemes::kQ5_K_M, 17},
    {"Q6_K", schemes::kQ6_K, 18},
    {"Q4_0_imatrix", schemes::kQ4_0_IMatrix, 2, true},
    {"Q5_0_imatrix", schemes::kQ5_0_IMatrix, 8, true},
};

// A scheme's name, whatever its KV cache; "" for one without.
constexpr std::string_view scheme_name(Scheme s) {
  for (const NamedScheme& n : kNamedSchemes) {
    Scheme t = n.scheme;
    t.kv_cache = s.kv_cache;
    if (t == s) return n.name;
  }
  return "";
}
// The scheme of a name, with a `kv` KV cache (F16 or F32); nullopt for a name not in the table.
constexpr std::optional<Scheme> named_scheme(std::string_view name, Format kv) {
  for (const NamedScheme& n : kNamedSchemes)
    if (n.name == name) {
      Scheme s = n.scheme;
      s.kv_cache = kv;
      return s;
    }
  return std::nullopt;
}

constexpr bool is_kv_format(Format f) { return f == Format::F16 || f == Format::F32; }

}  // namespace unicorn
