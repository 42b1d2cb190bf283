// unicorn/vision/kernels.hpp — the typed specialization constants of the image
// encoder's own shaders (shaders/vision_*.comp), as engine/kernels.hpp holds
// the text model's: field i is the shader's `constant_id = i`, of the same name
// in capitals (tests/kernel/spirv_contract_tests.cpp checks both). The encoder's
// products use engine/kernels.hpp's Linear and LinearCoop.
#pragma once

#include <boost/hana/define_struct.hpp>
#include <cstdint>

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

inline constexpr uint32_t kVisionPatchesBindings = 2, kVisionLayerNormBindings = 6,
                          kVisionAttentionBindings = 3, kVisionGeluBindings = 2,
                          kVisionPoolBindings = 3;

}  // namespace unicorn::kernels
