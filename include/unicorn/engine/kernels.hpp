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
                           (uint32_t, row_set), (uint32_t, chain));
};
struct Linear {  // matmul
  BOOST_HANA_DEFINE_STRUCT(Linear, (uint32_t, in_features), (uint32_t, out_features),
                           (uint32_t, row_set));
};
// matmul_coop: Linear's constants, then the cooperative-matrix shape and the
// subgroup size (gpu::DeviceInfo), which together fix its subgroup grid.
struct LinearCoop {
  BOOST_HANA_DEFINE_STRUCT(LinearCoop, (uint32_t, in_features), (uint32_t, out_features),
                           (uint32_t, row_set), (uint32_t, tm), (uint32_t, tn), (uint32_t, tk),
                           (uint32_t, subgroup_size));
};
// Output tile of one matmul_coop workgroup (tokens and rows alike).
inline constexpr uint32_t kLinearCoopTile = 128;
struct MatVec {
  BOOST_HANA_DEFINE_STRUCT(MatVec, (uint32_t, in_features), (uint32_t, out_features),
                           (uint32_t, row_set), (uint32_t, rows_per_subgroup));
};
// Output rows each matvec subgroup computes: x is loaded once for all of them.
// More rows reuse x more but leave fewer subgroups in flight; measured on the
// H100 with Gemma 3 27B Q4_0 (tools/matvec_sweep.sh), tg64: 1 row 49.8 t/s,
// 2 rows 58.1 t/s (4 and 8 rows, measured only with this kernel's predecessor,
// were slower there than 1 and 2).
inline constexpr uint32_t kMatVecRows = 2;
struct AttnPrep {  // q/k norm + RoPE + KV cache write
  BOOST_HANA_DEFINE_STRUCT(AttnPrep, (uint32_t, heads), (uint32_t, kv_heads), (uint32_t, head_dim),
                           (uint32_t, slots), (float, theta), (float, scale), (float, eps));
};
struct Attention {
  BOOST_HANA_DEFINE_STRUCT(Attention, (uint32_t, heads), (uint32_t, kv_heads),
                           (uint32_t, head_dim), (uint32_t, slots), (uint32_t, window),
                           (float, scale));
};
struct Geglu {
  BOOST_HANA_DEFINE_STRUCT(Geglu, (uint32_t, ffn));
};
struct LogitsMax {
  BOOST_HANA_DEFINE_STRUCT(LogitsMax, (uint32_t, vocab), (uint32_t, parts));
};
struct Sample {
  BOOST_HANA_DEFINE_STRUCT(Sample, (uint32_t, vocab), (uint32_t, parts));
};
// Workgroups logits_max splits a row into (their maxima feed the sampler).
inline constexpr uint32_t kLogitParts = 128;
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
inline constexpr uint32_t kEmbedBindings = 3, kRmsNormBindings = 6, kLinearBindings = 4,
                          kAttnPrepBindings = 8, kAttentionBindings = 5, kGegluBindings = 3,
                          kLogitsMaxBindings = 4, kSampleBindings = 5, kConvertBindings = 2;

}  // namespace unicorn::kernels
