// unicorn/engine/kernels.hpp — the typed specialization constants of every shader.
//
// One Hana struct per shader; field i is the shader's `constant_id = i`
// (see gpu/kernel.hpp). Dimensions reach the shaders only through these, so
// the same SPIR-V module serves every model size.
#pragma once

#include <boost/hana/define_struct.hpp>
#include <cstdint>
#include <string>

#include "unicorn/quant/formats.hpp"

namespace unicorn::kernels {

struct Embed {
  BOOST_HANA_DEFINE_STRUCT(Embed, (uint32_t, hidden), (float, scale));
};
struct RmsNorm {
  BOOST_HANA_DEFINE_STRUCT(RmsNorm, (uint32_t, dim), (float, eps), (uint32_t, accumulate),
                           (uint32_t, row_set));
};
struct Linear {  // matmul
  BOOST_HANA_DEFINE_STRUCT(Linear, (uint32_t, in_features), (uint32_t, out_features),
                           (uint32_t, row_set));
};
struct MatVec {
  BOOST_HANA_DEFINE_STRUCT(MatVec, (uint32_t, in_features), (uint32_t, out_features),
                           (uint32_t, row_set), (uint32_t, rows_per_subgroup));
};
// Output rows each matvec subgroup computes: x is loaded once for all of them.
inline constexpr uint32_t kMatVecRows = 2;
struct Rope {
  BOOST_HANA_DEFINE_STRUCT(Rope, (uint32_t, heads), (uint32_t, head_dim), (float, theta),
                           (float, scale));
};
struct KvStore {
  BOOST_HANA_DEFINE_STRUCT(KvStore, (uint32_t, kv_heads), (uint32_t, head_dim), (uint32_t, slots));
};
struct Attention {
  BOOST_HANA_DEFINE_STRUCT(Attention, (uint32_t, heads), (uint32_t, kv_heads),
                           (uint32_t, head_dim), (uint32_t, slots), (uint32_t, window),
                           (float, scale));
};
struct Geglu {
  BOOST_HANA_DEFINE_STRUCT(Geglu, (uint32_t, ffn));
};
struct Sample {
  BOOST_HANA_DEFINE_STRUCT(Sample, (uint32_t, vocab));
};
struct Convert {
  BOOST_HANA_DEFINE_STRUCT(Convert, (uint32_t, source_type), (float, add));
};

// Module names of the per-format variants, as cmake/UnicornShaders.cmake names them.
inline std::string variant(const char* kernel, Format f) {
  std::string name = std::string(kernel) + "_";
  for (char c : format_name(f)) name += char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return name;
}

// Binding counts, per shader (its `layout(binding = i)` declarations).
inline constexpr uint32_t kEmbedBindings = 3, kRmsNormBindings = 4, kLinearBindings = 4,
                          kRopeBindings = 2, kKvStoreBindings = 5, kAttentionBindings = 5,
                          kGegluBindings = 3, kSampleBindings = 4, kConvertBindings = 2;

}  // namespace unicorn::kernels
