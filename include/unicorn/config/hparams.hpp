// unicorn/config/hparams.hpp — the one table of Gemma 3 hyperparameters: each
// ModelDims field with its GGUF key, its Hugging Face config.json key and
// transformers' default for it.
//
// Every reader and writer of these keys takes them from here: the GGUF loader
// (engine/loader.hpp, dims_from_gguf), config.json parsing (io/hf_config.hpp),
// the load-time mismatch messages (engine/loader.hpp, check_dims),
// unicorn-convert (tools/convert.cpp, tools/gguf_metadata.hpp) and, through
// unicorn-model-dims (tools/model_dims.cpp), unicorn_add_engine at configure time.
// Tests spell the keys out on purpose: they are independent witnesses of the
// file formats.
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

#include "unicorn/config/dims.hpp"

namespace unicorn {

struct Hparam {
  std::string_view field;  // ModelDims member
  // llama.cpp's gemma3.* key. "" when a GGUF file has none: the vocabulary is
  // token_embd.weight's row count, and llama.cpp fixes the query scale.
  std::string_view gguf;
  // config.json key, under "text_config" in multimodal checkpoints. The layer
  // pattern and the rope scaling are structured (io/hf_config.hpp reads them):
  // their entries name where they are, for messages.
  std::string_view hf;
  double hf_default;  // transformers' Gemma3TextConfig default, for a key config.json omits
  // The values a file may give at all, whatever engine runs it (a finite value
  // in [min, max]): what a file says outside them is refused by name before it
  // is compared with an engine or compiled into one (check_dims_in_range).
  double min, max;
};

// The GGUF loader reads every key below that has one except
// sliding_window_pattern and rope.freq_base_swa: llama.cpp's gemma3 loader
// fixes the layer pattern (every 6th layer global) and the local RoPE base
// (10000), so a file's values of those, like its query scale, are taken from
// the compiled engine. unicorn-convert writes them anyway, for what differs.
inline constexpr Hparam kHparams[] = {
    // field                 GGUF key                                    config.json key            default  min    max
    {"hidden",               "gemma3.embedding_length",                  "hidden_size",             2304,    1,     65536},
    {"layers",               "gemma3.block_count",                       "num_hidden_layers",       26,      1,     1024},
    {"heads",                "gemma3.attention.head_count",              "num_attention_heads",     8,       1,     1024},
    {"kv_heads",             "gemma3.attention.head_count_kv",           "num_key_value_heads",     4,       1,     1024},
    {"head_dim",             "gemma3.attention.key_length",              "head_dim",                256,     1,     1024},
    {"ffn",                  "gemma3.feed_forward_length",               "intermediate_size",       9216,    1,     1 << 20},
    {"vocab",                "",                                         "vocab_size",              262208,  1,     1 << 24},
    {"sliding_window",       "gemma3.attention.sliding_window",          "sliding_window",          4096,    1,     1 << 24},
    {"global_every",         "gemma3.attention.sliding_window_pattern",  "sliding_window_pattern / layer_types", 6, 1, 1025},
    {"rope_theta_local",     "gemma3.rope.freq_base_swa",                "rope_local_base_freq",    10000,   1,     1e12},
    {"rope_theta_global",    "gemma3.rope.freq_base",                    "rope_theta",              1000000, 1,     1e12},
    {"rope_scale_global",    "gemma3.rope.scaling.factor",               "rope_scaling.factor",     1,       1,     1024},
    {"query_pre_attn_scalar", "",                                        "query_pre_attn_scalar",   256,     1,     1 << 20},
    {"rms_eps",              "gemma3.attention.layer_norm_rms_epsilon",  "rms_norm_eps",            1e-6,    1e-12, 1e-2},
    {"max_context",          "gemma3.context_length",                    "max_position_embeddings", 131072,  1,     1 << 24},
};

// GGUF keys with no ModelDims field of their own.
inline constexpr std::string_view kGgufArchitectureKey = "general.architecture";
inline constexpr std::string_view kGgufArchitecture = "gemma3";  // the prefix of the keys above
inline constexpr std::string_view kGgufValueLengthKey = "gemma3.attention.value_length";  // = head_dim
inline constexpr std::string_view kGgufRopeScalingTypeKey = "gemma3.rope.scaling.type";   // "linear"
// Where a GGUF file's vocabulary size comes from, for messages.
inline constexpr std::string_view kGgufVocabSource = "token_embd.weight rows";
// transformers' default activation; every Gemma 3 uses it.
inline constexpr std::string_view kHfHiddenActivation = "gelu_pytorch_tanh";
// Multimodal checkpoints declare this vocab_size: the 64 ids past the text
// vocabulary are image soft tokens, which llama.cpp's files and this engine drop.
inline constexpr uint32_t kHfMultimodalVocab = 262208;
inline constexpr uint32_t kGemma3TextVocab = 262144;

// The index of a ModelDims field's row, or the table's size for a name not in
// it. (Compile-time lookups compare indices, not pointers: GCC 12 under
// -fsanitize=undefined cannot fold a comparison of &kHparams[i] with nullptr.)
constexpr size_t hparam_index(std::string_view field) {
  for (size_t i = 0; i < std::size(kHparams); ++i)
    if (kHparams[i].field == field) return i;
  return std::size(kHparams);
}
// The row of a ModelDims field, or nullptr (at run time) for a name not in the table.
constexpr const Hparam* find_hparam(std::string_view field) {
  const size_t i = hparam_index(field);
  return i < std::size(kHparams) ? &kHparams[i] : nullptr;
}
// The same at compile time: a misspelt field does not compile.
consteval const Hparam& hparam(std::string_view field) {
  const size_t i = hparam_index(field);
  if (i == std::size(kHparams)) throw "unicorn: no such hyperparameter in kHparams";
  return kHparams[i];
}
consteval std::string_view gguf_key(std::string_view field) {
  if (hparam(field).gguf.empty()) throw "unicorn: this hyperparameter has no GGUF key";
  return hparam(field).gguf;
}
consteval std::string_view hf_key(std::string_view field) { return hparam(field).hf; }

// A GGUF file's general.quantization_version: llama.cpp's GGML_QNT_VERSION, the
// block layouts this engine's kernels read. Another version is another layout.
inline constexpr uint32_t kGgufQuantizationVersion = 2;

// Throws naming the first field of `d` that is not finite or lies outside its
// row's [min, max], by the key it comes from in `source` (GGUF or config.json).
// A value outside every Gemma 3's range is refused here, before it is compared
// with an engine: comparisons with inf or NaN hold or fail by accident.
inline void check_dims_in_range(const ModelDims& d, const std::string& source, bool gguf) {
  namespace hana = boost::hana;
  hana::for_each(hana::accessors<ModelDims>(), [&](auto pair) {
    const auto value = hana::second(pair)(d);
    if constexpr (std::is_arithmetic_v<decltype(value)>) {  // every field but the name
      const std::string_view field = hana::to<char const*>(hana::first(pair));
      const Hparam& h = *find_hparam(field);
      const double v = static_cast<double>(value);
      if (std::isfinite(v) && v >= h.min && v <= h.max) return;
      const std::string_view key = !gguf ? h.hf : field == "vocab" ? kGgufVocabSource : h.gguf;
      std::ostringstream text;
      text << std::setprecision(10) << source << ": " << key << " is " << v << "; a Gemma 3 model's is a finite number from " << h.min
           << " to " << h.max;
      throw Error(text.str());
    }
  });
}

namespace detail {
// One row per ModelDims field but its name (Hana's list of the fields).
consteval bool hparams_cover_model_dims() {
  namespace hana = boost::hana;
  bool all = true;
  hana::for_each(hana::accessors<ModelDims>(), [&](auto pair) {
    const std::string_view field = hana::to<char const*>(hana::first(pair));
    all = all && (field == "name" || hparam_index(field) < std::size(kHparams));
  });
  return all && std::size(kHparams) + 1 == decltype(hana::length(hana::accessors<ModelDims>()))::value;
}
static_assert(hparams_cover_model_dims(), "unicorn: kHparams must have one row per ModelDims field (but name)");
}  // namespace detail

}  // namespace unicorn
