// unicorn/diag.hpp — compile-time checks that explain themselves.
//
// Each check is a named template whose arguments carry the numbers involved,
// so the compiler's "required from here" line shows them, and whose
// static_assert sentence starts with "unicorn:" and says what to change.
// check_deployment<D>() instantiates every check for a deployment type.
#pragma once

#include <cstdint>

#include "unicorn/deployment.hpp"
#include "unicorn/layout/layout.hpp"

namespace unicorn::diag {

template <uint32_t heads, uint32_t kv_heads>
struct query_heads_not_a_multiple_of_kv_heads {
  static_assert(kv_heads > 0 && heads % kv_heads == 0,
                "unicorn: grouped-query attention needs the query heads to be a multiple of the "
                "key/value heads; fix `heads` or `kv_heads` in the ModelDims");
  static constexpr bool ok = true;
};

template <uint32_t head_dim, uint32_t max_head_dim>
struct head_dim_unsupported {
  static_assert(head_dim % 2 == 0 && head_dim <= max_head_dim,
                "unicorn: head_dim must be even (RoPE rotates pairs) and at most 256 (the "
                "attention kernel keeps a query head in shared memory)");
  static constexpr bool ok = true;
};

template <uint32_t row_elems, uint32_t block_elems>
struct row_not_whole_blocks {
  static_assert(row_elems % block_elems == 0,
                "unicorn: a block-quantized tensor's rows must hold whole 32-element blocks; "
                "pick F16/BF16/F32 for this role or a model whose hidden, heads*head_dim and "
                "ffn sizes are multiples of 32");
  static constexpr bool ok = true;
};

template <uint32_t kv_format>
struct kv_cache_format_unsupported {
  static_assert(kv_format == uint32_t(Format::F16) || kv_format == uint32_t(Format::F32),
                "unicorn: the KV cache must be F16 or F32 (no attention kernel reads a block "
                "format); set the scheme's kv_cache to Format::F16, or Format::F32 for reference "
                "checks");
  static constexpr bool ok = true;
};

template <uint32_t context, uint32_t model_context>
struct context_longer_than_model {
  static_assert(context >= 1 && context <= model_context,
                "unicorn: max_context must be between 1 and the model's trained context "
                "(ModelDims::max_context); lower the deployment's max_context");
  static constexpr bool ok = true;
};

template <uint32_t chunk, uint32_t context>
struct prefill_chunk_out_of_range {
  static_assert(chunk >= 1 && chunk <= context,
                "unicorn: prefill_chunk must be between 1 and max_context tokens");
  static constexpr bool ok = true;
};

template <uint32_t activation, uint64_t bytes_needed, uint64_t bytes_available>
struct activation_exceeds_binding {
  static_assert(bytes_needed <= bytes_available,
                "unicorn: an activation buffer of one prefill chunk exceeds the 128 MiB every "
                "Vulkan device can bind; lower prefill_chunk");
  static constexpr bool ok = true;
};

template <Deployment D>
constexpr bool check_deployment() {
  constexpr DeploymentConfig c = D::kConfig;
  constexpr ModelDims m = D::kConfig.model;
  static_assert(query_heads_not_a_multiple_of_kv_heads<m.heads, m.kv_heads>::ok);
  static_assert(head_dim_unsupported<m.head_dim, 256>::ok);
  static_assert(row_not_whole_blocks<m.hidden, format_info(c.scheme.attention).block_elems>::ok);
  static_assert(row_not_whole_blocks<m.q_dim(), format_info(c.scheme.attention).block_elems>::ok);
  static_assert(row_not_whole_blocks<m.hidden, format_info(c.scheme.ffn).block_elems>::ok);
  static_assert(row_not_whole_blocks<m.ffn, format_info(c.scheme.ffn).block_elems>::ok);
  static_assert(row_not_whole_blocks<m.hidden, format_info(c.scheme.embedding).block_elems>::ok);
  static_assert(kv_cache_format_unsupported<uint32_t(c.scheme.kv_cache)>::ok);
  static_assert(context_longer_than_model<c.max_context, m.max_context>::ok);
  static_assert(prefill_chunk_out_of_range<c.prefill_chunk, c.max_context>::ok);
  constexpr auto& L = kLayoutOf<D>;
  static_assert(activation_exceeds_binding<uint32_t(Act::Gate), L.activations[size_t(Act::Gate)].bytes,
                                           kMaxBindingBytes>::ok);
  static_assert(activation_exceeds_binding<uint32_t(Act::Q), L.activations[size_t(Act::Q)].bytes,
                                           kMaxBindingBytes>::ok);
  return true;
}

}  // namespace unicorn::diag
