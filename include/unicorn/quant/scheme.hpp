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

// What the mixes' rules read of a model: its layers, and how many query heads
// share each KV head (llama-quantize's n_gqa).
struct MixShape {
  uint32_t layers;
  uint32_t gqa;
};

// The layers whose attn_v or ffn_down a mix writes with more bits, by
// llama-quantize's rules (llama_tensor_get_type_impl): its _M mixes' choice
// (more_bits_layer), or the first `count` layers (Q4_K_S's attn_v: 4; Q3_K_M's: 2),
// or those below layers / `count` (Q4_K_S's ffn_down: the first eighth;
// Q3_K_M's: the first sixteenth), or every layer where 4 or more query heads
// share a KV head (IQ4_NL's and IQ4_XS's attn_v: the 270M and 1B).
struct MoreBitsLayers {
  enum class Rule : uint8_t { UseMoreBits, First, FirstPart, AllWhereGqa4 };
  Rule rule = Rule::UseMoreBits;
  uint32_t count = 0;
  constexpr bool has(uint32_t layer, MixShape m) const {
    switch (rule) {
      case Rule::UseMoreBits: return more_bits_layer(layer, m.layers);
      case Rule::First: return layer < count;
      case Rule::FirstPart: return layer < m.layers / count;
      case Rule::AllWhereGqa4: return m.gqa >= 4;
    }
    return false;
  }
  constexpr uint32_t in(MixShape m) const {  // how many of the layers it picks
    uint32_t n = 0;
    for (uint32_t l = 0; l < m.layers; ++l) n += has(l, m);
    return n;
  }
  constexpr bool operator==(const MoreBitsLayers&) const = default;
};
namespace more_bits {
inline constexpr MoreBitsLayers kUseMoreBits{};
constexpr MoreBitsLayers first(uint32_t n) { return {MoreBitsLayers::Rule::First, n}; }
constexpr MoreBitsLayers first_part(uint32_t of) { return {MoreBitsLayers::Rule::FirstPart, of}; }
inline constexpr MoreBitsLayers kAllWhereGqa4{MoreBitsLayers::Rule::AllWhereGqa4};
}  // namespace more_bits

// The format llama-quantize writes instead of a K-quant for a matrix whose rows
// (`cols` elements) are not whole superblocks (llama.cpp src/llama-quant.cpp,
// tensor_type_fallback): Q2_K and Q3_K become Q4_0, Q4_K Q5_0, Q5_K Q5_1,
// Q6_K Q8_0, IQ4_XS IQ4_NL, and F16 where the rows are not whole 32-element
// blocks either. (The 1B's and 270M's K files: their 1152- and 640-wide rows.)
constexpr Format k_quant_fallback(Format f, uint64_t cols) {
  if (!has_superblocks(f) || cols % 256 == 0) return f;
  if (cols % 32 != 0) return Format::F16;
  switch (f) {
    case Format::Q2_K:
    case Format::Q3_K: return Format::Q4_0;
    case Format::Q4_K: return Format::Q5_0;
    case Format::Q5_K: return Format::Q5_1;
    case Format::IQ4_XS: return Format::IQ4_NL;
    default: return Format::Q8_0;  // Q6_K
  }
}

struct Scheme {
  Format embedding;   // token_embd: gathered per token, and read whole as the LM head
  Format attention;   // attn_q, attn_k, attn_v, attn_output
  Format ffn;         // ffn_gate, ffn_up, ffn_down
  Format kv_cache;    // F16 by default; F32 for reference checks
  Format lm_head = embedding;  // the output projection; another format: a separate copy
  // attn_v, attn_output and ffn_down: by default the attention's and the FFN's
  // format (llama-quantize's Q2_K and Q3_K mixes give them more bits than
  // attn_q, attn_k, ffn_gate and ffn_up).
  Format attn_v = attention;
  Format attn_output = attention;
  Format ffn_down = ffn;
  // attn_v and ffn_down in the layers their MoreBitsLayers pick (the _M
  // mixes': more_bits_layer); by default the same as in the others.
  Format attn_v_more_bits = attn_v;
  Format ffn_down_more_bits = ffn_down;
  MoreBitsLayers attn_v_layers{}, ffn_down_layers{};

  constexpr bool separate_lm_head() const { return lm_head != embedding; }
  // The formats of the layers' matrices.
  constexpr std::array<Format, 7> layer_matrix_formats() const {
    return {attention, ffn, attn_v_more_bits, ffn_down_more_bits, attn_v, attn_output, ffn_down};
  }
  // Whether some layers' matrices differ from the attention's or the FFN's format.
  constexpr bool mixed() const {
    return attn_v != attention || attn_output != attention || ffn_down != ffn || attn_v_more_bits != attn_v ||
           ffn_down_more_bits != ffn_down;
  }
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

// The format `s` stores a matrix of kind `k` in, in `layer` of a model of
// `shape` (layer: -1 for the embedding and LM head), its rows `cols` elements long.
constexpr Format format_of(const Scheme& s, WeightKind k, int layer, MixShape shape, uint64_t cols) {
  const auto more_in = [&](const MoreBitsLayers& m) { return layer >= 0 && m.has(uint32_t(layer), shape); };
  Format f = s.ffn;
  switch (k) {
    case WeightKind::Embedding: f = s.embedding; break;
    case WeightKind::LmHead: f = s.lm_head; break;
    case WeightKind::AttnQ:
    case WeightKind::AttnK: f = s.attention; break;
    case WeightKind::AttnOut: f = s.attn_output; break;
    case WeightKind::AttnV: f = more_in(s.attn_v_layers) ? s.attn_v_more_bits : s.attn_v; break;
    case WeightKind::FfnGate:
    case WeightKind::FfnUp: f = s.ffn; break;
    case WeightKind::FfnDown: f = more_in(s.ffn_down_layers) ? s.ffn_down_more_bits : s.ffn_down; break;
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
// llama-quantize's IQ4_NL and IQ4_XS mixes: every matrix in the one format
// (IQ4_XS falls back to IQ4_NL where rows are not whole superblocks: the
// 270M's and 1B's), with Q5_K for ffn_down in the first eighth of the layers
// and for attn_v where 4 or more query heads share a KV head (the 270M and
// 1B: Q5_1 there, their rows' fallback); the embedding at Q6_K. No importance
// matrix is needed for these (llama-quantize asks for one only below 4 bits);
// with one (--imatrix, as most IQ4 files people download are made) the first
// eighth of ffn_down stays IQ4 (the _IMatrix schemes).
constexpr Scheme iq4_mix(Format f, bool imatrix) {
  Scheme s{.embedding = Format::Q6_K, .attention = f, .ffn = f, .kv_cache = Format::F16, .lm_head = Format::Q6_K,
           .attn_v_more_bits = Format::Q5_K, .attn_v_layers = more_bits::kAllWhereGqa4};
  if (!imatrix) s.ffn_down_more_bits = Format::Q5_K, s.ffn_down_layers = more_bits::first_part(8);
  return s;
}
inline constexpr Scheme kIQ4_NL = iq4_mix(Format::IQ4_NL, false);
inline constexpr Scheme kIQ4_XS = iq4_mix(Format::IQ4_XS, false);
inline constexpr Scheme kIQ4_NL_IMatrix = iq4_mix(Format::IQ4_NL, true);
inline constexpr Scheme kIQ4_XS_IMatrix = iq4_mix(Format::IQ4_XS, true);
// llama-quantize's 2- and 3-bit K mixes (Q2_K_S needs an importance matrix
// in llama-quantize; the layout is the same with one):
//   Q2_K: Q2_K, with Q3_K for attn_v, attn_output and ffn_down, attn_v Q4_K
//         where 4 or more query heads share a KV head;
//   Q2_K_S: Q2_K, with attn_v Q4_K likewise and ffn_down Q4_K in the first eighth;
//   Q3_K_S: every matrix Q3_K;
//   Q3_K_M: Q3_K, with Q4_K for attn_v, attn_output and ffn_down, Q5_K for
//           attn_v in the first 2 layers and ffn_down in the first sixteenth;
//   Q3_K_L: Q3_K, with Q5_K for attn_v, attn_output and ffn_down.
// The embedding at Q6_K; rows that are not whole superblocks take Q4_0 for
// Q2_K and Q3_K (k_quant_fallback).
inline constexpr Scheme kQ2_K{.embedding = Format::Q6_K, .attention = Format::Q2_K, .ffn = Format::Q2_K,
                              .kv_cache = Format::F16, .lm_head = Format::Q6_K, .attn_v = Format::Q3_K,
                              .attn_output = Format::Q3_K, .ffn_down = Format::Q3_K, .attn_v_more_bits = Format::Q4_K,
                              .attn_v_layers = more_bits::kAllWhereGqa4};
inline constexpr Scheme kQ2_K_S{.embedding = Format::Q6_K, .attention = Format::Q2_K, .ffn = Format::Q2_K,
                                .kv_cache = Format::F16, .lm_head = Format::Q6_K,
                                .attn_v_more_bits = Format::Q4_K, .ffn_down_more_bits = Format::Q4_K,
                                .attn_v_layers = more_bits::kAllWhereGqa4, .ffn_down_layers = more_bits::first_part(8)};
inline constexpr Scheme kQ3_K_S = all(Format::Q3_K).with_embedding(Format::Q6_K);
inline constexpr Scheme kQ3_K_M{.embedding = Format::Q6_K, .attention = Format::Q3_K, .ffn = Format::Q3_K,
                                .kv_cache = Format::F16, .lm_head = Format::Q6_K, .attn_v = Format::Q4_K,
                                .attn_output = Format::Q4_K, .ffn_down = Format::Q4_K,
                                .attn_v_more_bits = Format::Q5_K, .ffn_down_more_bits = Format::Q5_K,
                                .attn_v_layers = more_bits::first(2), .ffn_down_layers = more_bits::first_part(16)};
inline constexpr Scheme kQ3_K_L{.embedding = Format::Q6_K, .attention = Format::Q3_K, .ffn = Format::Q3_K,
                                .kv_cache = Format::F16, .lm_head = Format::Q6_K, .attn_v = Format::Q5_K,
                                .attn_output = Format::Q5_K, .ffn_down = Format::Q5_K};
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
    {"IQ4_NL", schemes::kIQ4_NL},     {"IQ4_XS", schemes::kIQ4_XS},
    {"IQ4_NL_imatrix", schemes::kIQ4_NL_IMatrix}, {"IQ4_XS_imatrix", schemes::kIQ4_XS_IMatrix},
    {"Q2_K", schemes::kQ2_K},         {"Q2_K_S", schemes::kQ2_K_S}, {"Q3_K_S", schemes::kQ3_K_S},
    {"Q3_K_M", schemes::kQ3_K_M},     {"Q3_K_L", schemes::kQ3_K_L},
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
// The _imatrix entries are the layouts llama-quantize gives Q4_0, Q5_0, IQ4_NL
// and IQ4_XS with --imatrix (read from its source: a dry run needs no
// importance matrix for these, and shows the layouts without one).
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
    {"Q2_K", schemes::kQ2_K, 10},
    {"Q2_K_S", schemes::kQ2_K_S, 21},
    {"Q3_K_S", schemes::kQ3_K_S, 11},
    {"Q3_K_M", schemes::kQ3_K_M, 12},
    {"Q3_K_L", schemes::kQ3_K_L, 13},
    {"IQ4_NL", schemes::kIQ4_NL, 25},
    {"IQ4_XS", schemes::kIQ4_XS, 30},
    {"Q6_K", schemes::kQ6_K, 18},
    {"Q4_0_imatrix", schemes::kQ4_0_IMatrix, 2, true},
    {"Q5_0_imatrix", schemes::kQ5_0_IMatrix, 8, true},
    {"IQ4_NL_imatrix", schemes::kIQ4_NL_IMatrix, 25, true},
    {"IQ4_XS_imatrix", schemes::kIQ4_XS_IMatrix, 30, true},
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
