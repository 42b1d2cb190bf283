// unicorn/vision/kernels.hpp — the typed specialization constants of the image
// encoder's own shaders (shaders/vision_*.comp), as engine/kernels.hpp holds
// the text model's: field i is the shader's `constant_id = i`, of the same name
// in capitals (tests/kernel/spirv_contract_tests.cpp checks both). The encoder's
// products use engine/kernels.hpp's Linear and LinearCoop.
#pragma once

#include <boost/hana/define_struct.hpp>
#include <cstdint>

#include "unicorn/engine/kernels.hpp"

namespace unicorn::kernels {

// vision_patches: the im2col of the patch embedding.
struct VisionPatches {
  BOOST_HANA_DEFINE_STRUCT(VisionPatches, (uint32_t, image), (uint32_t, patch));
};
// vision_layernorm: LayerNorm with weight and bias, after the residual add
// x += y + y_bias where accumulate is 1. threads: a power of two.
struct VisionLayerNorm {
  BOOST_HANA_DEFINE_STRUCT(VisionLayerNorm, (uint32_t, dim), (float, eps), (uint32_t, accumulate),
                           (uint32_t, threads));
};
// vision_attention: bidirectional attention over all patches, q/k/v biases
// added on load; keys per shared tile, query rows (threads) per workgroup.
struct VisionAttention {
  BOOST_HANA_DEFINE_STRUCT(VisionAttention, (uint32_t, patches), (uint32_t, heads),
                           (uint32_t, head_dim), (float, scale), (uint32_t, keys), (uint32_t, rows));
};
// vision_attention_coop: vision_attention on the tensor units (fp16 operands,
// fp32 sums): heads padded to pad_dim, rows / tm subgroups of tm query rows,
// keys per shared tile; the cooperative-matrix shape and subgroup size
// (gpu::DeviceInfo) and the workgroup they make.
struct VisionAttentionCoop {
  BOOST_HANA_DEFINE_STRUCT(VisionAttentionCoop, (uint32_t, patches), (uint32_t, heads), (uint32_t, head_dim),
                           (uint32_t, pad_dim), (float, scale), (uint32_t, rows), (uint32_t, keys), (uint32_t, tm),
                           (uint32_t, tn), (uint32_t, tk), (uint32_t, subgroup_size), (uint32_t, threads));
};
// vision_gelu: h = gelu_tanh(h + bias) in place.
struct VisionGelu {
  BOOST_HANA_DEFINE_STRUCT(VisionGelu, (uint32_t, dim), (uint32_t, rows));
};
// vision_pool: average pool of the patch grid, then RMSNorm with (1 + w).
// threads: a power of two.
struct VisionPool {
  BOOST_HANA_DEFINE_STRUCT(VisionPool, (uint32_t, dim), (uint32_t, per_side), (uint32_t, pool),
                           (float, eps), (uint32_t, threads));
};

// Threads of the row kernels (vision_layernorm, vision_pool): 64, a power of
// two for their reductions; a 1,152-wide row is 18 elements a thread.
inline constexpr uint32_t kVisionRowThreads = 64;
// vision_attention's tile: 64 query rows a workgroup (a thread each), keys
// staged 32 at a time (32 x head_dim floats of k and of v: 18 KiB at 72 dims).
inline constexpr uint32_t kVisionAttentionRows = 64, kVisionAttentionKeys = 32;

// Workgroups of the element-wise kernels (vision_patches, vision_gelu): one
// per 256 elements, at most 65,535 (what every device takes in x); past that
// each thread walks the elements a grid apart.
constexpr uint32_t vision_elementwise_groups(uint64_t elements) {
  const uint64_t g = (elements + 255) / 256;
  return uint32_t(g < 65535 ? g : 65535);
}
// Shared memory of vision_attention's key and value tiles (bytes).
constexpr uint32_t vision_attention_shared_bytes(uint32_t head_dim) { return 2 * kVisionAttentionKeys * head_dim * 4; }

// vision_attention_coop's tile: 4 subgroups of tm rows, 32 keys (two tn-wide
// score matrices a subgroup). At 72 dims padded to 80 with 16 x 16 x 16
// matrices: 31 KiB of shared memory.
inline constexpr uint32_t kVisionAttentionCoopGroups = 4, kVisionAttentionCoopKeys = 32;
// A head dim rounded up to whole tn- and tk-wide matrices and 8-element units.
constexpr uint32_t vision_attention_coop_pad(uint32_t head_dim, uint32_t tn, uint32_t tk) {
  uint32_t pad = head_dim;
  while (pad % tn || pad % tk || pad % 8) ++pad;
  return pad;
}
// Its shared memory (shaders/vision_attention_coop.comp): fp16 rows of Q
// (rows), K and V (keys each), pad / 8 + 1 16-byte units a row; per tm rows a
// tm x (keys / 4 + 1) unit score region; the lanes' partials and the rows'
// rescaling.
constexpr uint32_t vision_attention_coop_shared_bytes(uint32_t pad, uint32_t rows, uint32_t keys,
                                                      uint32_t subgroup_size, uint32_t tm) {
  return 16 * ((rows + 2 * keys) * (pad / 8 + 1) + rows * (keys / 4 + 1)) + 4 * (rows / tm * subgroup_size + rows);
}
// Whether the kernel takes this head dim on a device's matrices: whole 8-element
// units of a head, at most 16 output and 4 score accumulators a subgroup, an
// even share of a tile's keys for each of a row's subgroup_size / tm lanes,
// accumulators of at most 8 elements an invocation, and its shared memory.
constexpr bool vision_attention_coop_fits(uint32_t head_dim, uint32_t tm, uint32_t tn, uint32_t tk,
                                          uint32_t subgroup_size, uint32_t max_shared_bytes) {
  if (!tm || !tn || !tk || head_dim % 8 || subgroup_size % tm) return false;
  const uint32_t pad = vision_attention_coop_pad(head_dim, tn, tk), keys = kVisionAttentionCoopKeys;
  const uint32_t rows = kVisionAttentionCoopGroups * tm, lanes_per_row = subgroup_size / tm;
  return pad / tn <= 16 && keys % tn == 0 && keys % tk == 0 && keys / tn <= 4 && keys % 8 == 0 &&
         keys % (2 * lanes_per_row) == 0 && tm * tn <= 8 * subgroup_size &&
         vision_attention_coop_shared_bytes(pad, rows, keys, subgroup_size, tm) <= max_shared_bytes;
}
static_assert(vision_attention_coop_pad(72, 16, 16) == 80 && vision_attention_coop_fits(72, 16, 16, 16, 32, 48 * 1024),
              "SigLIP So400m's 72-dim heads fit the tile on 16 x 16 x 16 matrices");

inline constexpr uint32_t kVisionPatchesBindings = 2, kVisionLayerNormBindings = 6,
                          kVisionAttentionBindings = 3, kVisionAttentionCoopBindings = 3, kVisionGeluBindings = 2,
                          kVisionPoolBindings = 3;

// The encoder's shaders as typed handles (engine/kernels.hpp's Shader).
inline constexpr Shader<VisionPatches> kVisionPatches{spirv::Module::vision_patches, kVisionPatchesBindings};
inline constexpr Shader<VisionLayerNorm> kVisionLayerNorm{spirv::Module::vision_layernorm, kVisionLayerNormBindings};
inline constexpr Shader<VisionAttention> kVisionAttention{spirv::Module::vision_attention, kVisionAttentionBindings};
inline constexpr Shader<VisionAttentionCoop> kVisionAttentionCoop{spirv::Module::vision_attention_coop,
                                                                  kVisionAttentionCoopBindings};
inline constexpr Shader<VisionGelu> kVisionGelu{spirv::Module::vision_gelu, kVisionGeluBindings};
inline constexpr Shader<VisionPool> kVisionPool{spirv::Module::vision_pool, kVisionPoolBindings};

}  // namespace unicorn::kernels
