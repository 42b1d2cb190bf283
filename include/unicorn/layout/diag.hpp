// unicorn/layout/diag.hpp — compile-time checks that explain themselves.
//
// Each check is a named template whose arguments carry the numbers involved,
// so the compiler's "required from here" line shows them, and whose
// static_assert sentence starts with "unicorn:" and says what to change.
// check_deployment<D>() instantiates every check for a deployment type.
//
// Placement checks (check_placement<D>) run in a fixed order and stop at the
// first failure, so each misplacement gets one message: a CPU path; an NPU
// placement on a machine without an NPU; a tensor kind the NPU could not run;
// a pool overflow (NpuSram included, before the next check); NPU kernels not
// built. The numbers are bytes: pool totals from kBudgetOf<D>, capacities
// from the deployment's hardware profile.
//
// A deployment with an image encoder (DeploymentConfig::vision) is checked for
// the encoder's invariants (config/vision_dims.hpp), for one image's tokens
// against the context and the prefill chunk, and for its bytes
// (layout/vision_budget.hpp) in the placement: a pool that only the encoder
// makes overflow gets a sentence of its own. The projector maps into
// model.hidden by construction, so its output always fits the text model.
//
// A deployment with a draft (DeploymentConfig::draft, speculative decoding) is
// checked as a pair (check_pair<D>): the two models share one vocabulary; the
// draft drafts for one stream and has no draft of its own, and follows the
// model's positions through its own context; the verify pass's draft_max + 1
// rows fit the model's passes; what the draft rewinds fits its sliding-window
// ring; the draft passes every check of its own; and the pair's bytes fit the
// model's hardware together (a pool only the draft makes overflow gets a
// sentence of its own).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "unicorn/config/deployment.hpp"
#include "unicorn/layout/budget.hpp"
#include "unicorn/layout/layout.hpp"
#include "unicorn/layout/vision_budget.hpp"

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

// role: the tensor's Role; format: its ggml type (the arguments name them).
template <uint32_t role, uint32_t format, uint64_t row_elems, uint32_t block_elems>
struct row_not_whole_blocks {
  static_assert(row_elems % block_elems == 0,
                "unicorn: a block-quantized tensor's rows must hold whole blocks of its format "
                "(32 elements; 256 for the K-quants and IQ4_XS); pick another format for this role "
                "or a model whose hidden, heads*head_dim and ffn sizes are multiples of the block");
  static constexpr bool ok = true;
};
// The first weight tensor of a layout whose rows are not whole blocks of its
// format, or the tensor count.
template <class Layout>
constexpr size_t first_tensor_not_whole_blocks(const Layout& L) {
  for (size_t i = 0; i < L.tensors.size(); ++i)
    if (L.tensors[i].cols % format_info(L.tensors[i].format).block_elems) return i;
  return L.tensors.size();
}

template <uint32_t kv_format>
struct kv_cache_format_unsupported {
  static_assert(kv_format == uint32_t(Format::F16) || kv_format == uint32_t(Format::F32),
                "unicorn: the KV cache must be F16 or F32 (no attention kernel reads a block "
                "format); set the scheme's kv_cache to Format::F16, or Format::F32 for reference "
                "checks");
  static constexpr bool ok = true;
};

template <uint32_t embedding_format, uint32_t lm_head_format>
struct lm_head_copy_unsupported {
  static_assert((embedding_format == uint32_t(Format::F16) || embedding_format == uint32_t(Format::BF16) ||
                 embedding_format == uint32_t(Format::F32)) &&
                    (lm_head_format == uint32_t(Format::Q8_0) || lm_head_format == uint32_t(Format::Q4_0) ||
                     lm_head_format == uint32_t(Format::F16)),
                "unicorn: a separate LM head is quantized from the embedding when loading, so the "
                "embedding must be F16, BF16 or F32 and the LM head Q8_0, Q4_0 or F16 (template "
                "arguments: embedding format, LM head format, as ggml type numbers)");
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

// A batched decode step has one token row per stream: the activations hold
// prefill_chunk rows and the logits logit_rows (layout.hpp).
template <uint32_t streams, uint32_t step_rows>
struct streams_out_of_range {
  static_assert(streams >= 1 && streams <= step_rows,
                "unicorn: streams must be between 1 and the rows of one step (template arguments: "
                "streams, min(prefill_chunk, logit rows)); lower streams or raise prefill_chunk");
  static constexpr bool ok = true;
};

template <uint32_t activation, uint64_t bytes_needed, uint64_t bytes_available>
struct activation_exceeds_binding {
  static_assert(bytes_needed <= bytes_available,
                "unicorn: an activation buffer of one prefill chunk exceeds the 128 MiB every "
                "Vulkan device can bind; lower prefill_chunk");
  static constexpr bool ok = true;
};

// --- the image encoder (DeploymentConfig::vision) ---

template <uint32_t image_size, uint32_t patch>
struct vision_patches_do_not_tile_image {
  static_assert(patch > 0 && image_size % patch == 0,
                "unicorn: the image encoder cuts its image_size x image_size input into patch x patch "
                "squares, so image_size must be a multiple of patch; fix `image_size` or `patch` in the "
                "VisionDims");
  static constexpr bool ok = true;
};

constexpr uint32_t isqrt(uint32_t n) {
  uint32_t s = 0;
  while ((s + 1) * (s + 1) <= n) ++s;
  return s;
}
template <uint32_t tokens_per_image, uint32_t patches_per_side>
struct vision_tokens_do_not_pool_patches {
  static_assert(isqrt(tokens_per_image) > 0 && isqrt(tokens_per_image) * isqrt(tokens_per_image) == tokens_per_image &&
                    patches_per_side % isqrt(tokens_per_image) == 0,
                "unicorn: the projector average-pools the square grid of patches into a square grid of "
                "soft tokens, so tokens_per_image must be a square (256 = 16 x 16 for Gemma 3) whose side "
                "divides the patches per side, image_size / patch (template arguments: tokens_per_image, "
                "patches per side); fix `tokens_per_image` in the VisionDims");
  static constexpr bool ok = true;
};

template <uint32_t hidden, uint32_t heads>
struct vision_heads_do_not_divide_hidden {
  static_assert(heads > 0 && hidden % heads == 0,
                "unicorn: the image encoder's attention splits its hidden size over its heads, so hidden "
                "must be a multiple of heads; fix `hidden` or `heads` in the VisionDims");
  static constexpr bool ok = true;
};

template <uint32_t layers, uint32_t ffn, uint32_t layer_norm_eps_is_positive>
struct vision_dims_empty {
  static_assert(layers > 0 && ffn > 0 && layer_norm_eps_is_positive,
                "unicorn: the image encoder needs at least one layer, a feed-forward size and a positive "
                "layer_norm_eps; fill in the VisionDims (kGemma3Siglip for Gemma 3 4B, 12B and 27B)");
  static constexpr bool ok = true;
};

// One image is <start_of_image>, tokens_per_image soft tokens, <end_of_image>.
template <uint32_t image_tokens, uint32_t context>
struct image_longer_than_context {
  static_assert(image_tokens <= context,
                "unicorn: one image takes tokens_per_image soft tokens plus <start_of_image> and "
                "<end_of_image> (template arguments: those tokens, max_context); raise max_context");
  static constexpr bool ok = true;
};

// Attention is bidirectional inside an image, so its tokens are prefilled in one chunk.
template <uint32_t image_tokens, uint32_t chunk>
struct image_longer_than_prefill_chunk {
  static_assert(image_tokens <= chunk,
                "unicorn: an image's soft tokens and its two markers are prefilled in one chunk (its "
                "tokens attend to each other both ways) (template arguments: those tokens, "
                "prefill_chunk); raise prefill_chunk to at least tokens_per_image + 2");
  static constexpr bool ok = true;
};

template <uint64_t bytes_needed, uint64_t bytes_available>
struct vision_activation_exceeds_binding {
  static_assert(bytes_needed <= bytes_available,
                "unicorn: one of the image encoder's activation buffers (an image's patches times its "
                "hidden or feed-forward size) exceeds the 128 MiB every Vulkan device can bind; pick a "
                "smaller image_size or a larger patch");
  static constexpr bool ok = true;
};

template <Pool pool, uint64_t bytes_needed, uint64_t bytes_available, uint64_t encoder_bytes>
struct vision_encoder_overflows_pool {
  static_assert(bytes_needed <= bytes_available,
                "unicorn: the text model fits, but with the image encoder (its weights counted at F16 "
                "and one image's activations) the pool overflows (template arguments: pool, bytes "
                "needed, bytes available, the encoder's bytes); pick a larger memory profile, lower "
                "max_context, or deploy without .with_vision()");
  static constexpr bool ok = true;
};

// --- speculative decoding (DeploymentConfig::draft) ---

template <uint32_t model_vocab, uint32_t draft_vocab>
struct draft_vocabulary_differs {
  static_assert(model_vocab == draft_vocab,
                "unicorn: the draft's vocabulary is not the model's (template arguments: the model's "
                "tokens, the draft's); the model checks the token ids the draft proposes, so both must "
                "share one tokenizer: draft with a model of the same family (Gemma 3 270M or 1B for "
                "4B, 12B and 27B)");
  static constexpr bool ok = true;
};

template <bool draft_has_draft>
struct draft_has_a_draft_of_its_own {
  static_assert(!draft_has_draft,
                "unicorn: the draft deployment has a draft of its own; one model drafts for one, so "
                "give the draft's deployment no .with_draft()");
  static constexpr bool ok = true;
};

template <uint32_t draft_streams>
struct draft_with_several_streams {
  static_assert(draft_streams == 1,
                "unicorn: the draft deployment must have one stream (template argument: its streams); "
                "it drafts for one of the model's streams at a time, following it on its stream 0; "
                "drop .with_streams() from the draft's deployment");
  static constexpr bool ok = true;
};

template <uint32_t draft_max, uint32_t most>
struct draft_max_out_of_range {
  static_assert(draft_max >= 1 && draft_max <= most,
                "unicorn: draft_max, the most tokens the draft proposes a round, must be between 1 "
                "and 16 (template arguments: draft_max, 16); give .with_draft(d, max_tokens) a "
                "max_tokens in that range");
  static constexpr bool ok = true;
};

// The verify pass feeds draft_max + 1 rows of one stream: a prefill chunk's
// activations and logit rows, and with several streams the decode lane's
// (layout.hpp's decode_lane_rows), whichever is fewest.
template <uint32_t verify_rows, uint32_t pass_rows>
struct verify_rows_do_not_fit {
  static_assert(verify_rows <= pass_rows,
                "unicorn: the verify pass checks draft_max + 1 rows in one pass, more than the "
                "model's passes hold (template arguments: draft_max + 1, the fewest of prefill_chunk, "
                "the logit rows and, with several streams, the decode lane's rows); lower draft_max "
                "or raise the model's prefill_chunk");
  static constexpr bool ok = true;
};

template <uint32_t draft_max, uint32_t draft_prefill_chunk>
struct draft_ring_shorter_than_rewind {
  static_assert(draft_max <= draft_prefill_chunk,
                "unicorn: the draft takes back up to draft_max tokens a round, and its sliding-window "
                "layers keep only window + prefill_chunk positions (template arguments: draft_max, "
                "the draft's prefill_chunk); raise the draft's prefill_chunk or lower draft_max");
  static constexpr bool ok = true;
};

template <uint32_t draft_context, uint32_t model_context>
struct draft_context_shorter_than_model {
  static_assert(draft_context >= model_context,
                "unicorn: the draft's max_context is shorter than the model's (template arguments: "
                "the draft's, the model's); the draft follows the model's stream position for "
                "position, so give the draft's deployment at least the model's max_context");
  static constexpr bool ok = true;
};

template <Pool pool, uint64_t bytes_needed, uint64_t bytes_available, uint64_t draft_bytes>
struct draft_overflows_pool {
  static_assert(bytes_needed <= bytes_available,
                "unicorn: the model fits, but with its draft (the draft's weights, KV cache and "
                "activations, in the pools of its own placement) the pool overflows (template "
                "arguments: pool, bytes needed, bytes available, the draft's bytes); pick a smaller "
                "draft, a larger memory profile, or lower max_context");
  static constexpr bool ok = true;
};

// --- placement (config/placement.hpp, budget.hpp) ---

template <Group group, uint64_t bytes_needed>
struct cpu_pool_needs_a_cpu_path {
  static_assert(bytes_needed == 0,
                "unicorn: Pool::Cpu would need a CPU path, and no inference op has a CPU "
                "implementation in this engine (every op is a Vulkan kernel); place this tensor "
                "group in Gtt instead: system memory the GPU reads");
  static constexpr bool ok = true;
};

template <uint64_t bytes_needed, uint64_t bytes_available>
struct npu_sram_on_a_machine_without_npu {
  static_assert(bytes_needed == 0,
                "unicorn: the placement puts tensors in NpuSram, but the hardware profile has "
                "no NPU (NpuSram holds 0 bytes); use profiles::Phoenix or profiles::StrixPoint, "
                "or move the group to Vram or Gtt");
  static constexpr bool ok = true;
};

template <Group group, uint64_t bytes_needed>
struct npu_cannot_run_this_tensor_kind {
  static_assert(group == Group::Attention,
                "unicorn: NpuSram can hold attention weights only — the only tensor kind an NPU "
                "kernel of this design would run (Q/K/V/O projections of a few layers); FFN "
                "weights, embeddings, the KV cache and activations are read by GPU kernels, "
                "so place them in Vram or Gtt");
  static constexpr bool ok = true;
};

template <uint64_t bytes_needed, uint64_t bytes_available>
struct vram_overflow {
  static_assert(bytes_needed <= bytes_available,
                "unicorn: the Vram pool overflows: the placement needs more bytes in Vram than "
                "the hardware profile has (template arguments: bytes needed, bytes available); "
                "move FFN weights to Gtt (placement::Ffn<Pool::Gtt>), pick a larger VRAM "
                "carve-out, or lower max_context");
  static constexpr bool ok = true;
};

template <uint64_t bytes_needed, uint64_t bytes_available>
struct gtt_overflow {
  static_assert(bytes_needed <= bytes_available,
                "unicorn: the Gtt pool overflows: the placement needs more bytes in Gtt than the "
                "hardware profile has (template arguments: bytes needed, bytes available); "
                "move groups to Vram, pick a smaller model or scheme, or lower max_context");
  static constexpr bool ok = true;
};

template <uint64_t bytes_needed, uint64_t bytes_available>
struct vram_and_gtt_overflow_one_heap {
  static_assert(bytes_needed <= bytes_available,
                "unicorn: the Vram and Gtt pools overflow the one heap of system memory they "
                "share on this profile (template arguments: bytes needed, bytes available); "
                "pick a smaller model or scheme, or lower max_context");
  static constexpr bool ok = true;
};

template <uint64_t bytes_needed, uint64_t bytes_available>
struct npu_sram_overflow {
  static_assert(bytes_needed <= bytes_available,
                "unicorn: the NpuSram pool overflows: the NPU's on-chip memory holds a few MiB "
                "(template arguments: bytes needed, bytes available); place fewer layers' "
                "attention in NpuSram, or none");
  static constexpr bool ok = true;
};

template <Group group, uint64_t bytes_needed, uint64_t bytes_available>
struct npu_kernels_not_built {
  static_assert(bytes_needed == 0,
                "unicorn: NpuSram placement fits, but the NPU attention kernels are not built "
                "in this engine (npu_kernels/ has no build, XRT is not used yet), so nothing "
                "can run from NPU SRAM; keep attention in Vram or Gtt");
  static constexpr bool ok = true;
};

template <uint32_t first_layer, uint32_t last_layer, uint32_t model_layers>
struct placement_layers_out_of_range {
  static_assert(first_layer < last_layer && last_layer <= model_layers,
                "unicorn: a placement segment names layers [first, last) outside the model's "
                "layers; fix the segment's Layers{first, last}");
  static constexpr bool ok = true;
};

constexpr bool over(uint64_t need, uint64_t have) { return have != kUnbounded && need > have; }

template <Deployment D>
constexpr bool check_placement() {
  constexpr DeploymentConfig c = D::kConfig;
  constexpr HardwareProfile h = c.hardware;
  constexpr Budget b = kBudgetOf<D>;
  constexpr uint64_t npu = b.need(Pool::NpuSram);
  constexpr uint64_t npu_attention = b[Pool::NpuSram].group_bytes[size_t(Group::Attention)];
  constexpr uint64_t shared = b.need(Pool::Vram) + b.need(Pool::Gtt);
  static_assert([]<size_t... I>(std::index_sequence<I...>) {
    constexpr const auto& segments = D::kConfig.placement.segments;
    return (placement_layers_out_of_range<segments[I].layers.first, segments[I].layers.last,
                                          D::kConfig.model.layers>::ok && ...);
  }(std::make_index_sequence<c.placement.segment_count>{}));
  if constexpr (b.need(Pool::Cpu) != 0) {
    static_assert(cpu_pool_needs_a_cpu_path<b[Pool::Cpu].first_group(), b.need(Pool::Cpu)>::ok);
  } else if constexpr (npu != 0 && !h.has_npu) {
    static_assert(npu_sram_on_a_machine_without_npu<npu, h.capacity_of(Pool::NpuSram)>::ok);
  } else if constexpr (npu != npu_attention) {
    static_assert(npu_cannot_run_this_tensor_kind<
                  b[Pool::NpuSram].group_bytes[size_t(Group::Embeddings)] ? Group::Embeddings
                  : b[Pool::NpuSram].group_bytes[size_t(Group::Ffn)]      ? Group::Ffn
                  : b[Pool::NpuSram].group_bytes[size_t(Group::KvCache)]  ? Group::KvCache
                                                                          : Group::Activations,
                  npu - npu_attention>::ok);
  } else if constexpr (over(b.need(Pool::Vram), h.capacity_of(Pool::Vram))) {
    constexpr PoolBudget p = b[Pool::Vram];
    constexpr uint64_t have = h.capacity_of(Pool::Vram), own = p.total() - p.vision_bytes - p.draft_bytes;
    if constexpr (over(own, have))
      static_assert(vram_overflow<b.need(Pool::Vram), have>::ok);
    else if constexpr (over(own + p.vision_bytes, have))
      static_assert(vision_encoder_overflows_pool<Pool::Vram, b.need(Pool::Vram), have, p.vision_bytes>::ok);
    else
      static_assert(draft_overflows_pool<Pool::Vram, b.need(Pool::Vram), have, p.draft_bytes>::ok);
  } else if constexpr (over(b.need(Pool::Gtt), h.capacity_of(Pool::Gtt))) {
    constexpr PoolBudget p = b[Pool::Gtt];
    constexpr uint64_t have = h.capacity_of(Pool::Gtt), own = p.total() - p.vision_bytes - p.draft_bytes;
    if constexpr (over(own, have))
      static_assert(gtt_overflow<b.need(Pool::Gtt), have>::ok);
    else if constexpr (over(own + p.vision_bytes, have))
      static_assert(vision_encoder_overflows_pool<Pool::Gtt, b.need(Pool::Gtt), have, p.vision_bytes>::ok);
    else
      static_assert(draft_overflows_pool<Pool::Gtt, b.need(Pool::Gtt), have, p.draft_bytes>::ok);
  } else if constexpr (h.vram_and_gtt_share_one_heap && over(shared, h.capacity_of(Pool::Vram))) {
    static_assert(vram_and_gtt_overflow_one_heap<shared, h.capacity_of(Pool::Vram)>::ok);
  } else if constexpr (over(npu, h.capacity_of(Pool::NpuSram))) {
    static_assert(npu_sram_overflow<npu, h.capacity_of(Pool::NpuSram)>::ok);
  } else if constexpr (npu != 0) {
    static_assert(npu_kernels_not_built<Group::Attention, npu, h.capacity_of(Pool::NpuSram)>::ok);
  }
  return true;
}

// The image encoder's own checks, before the placement counts its bytes.
template <Deployment D>
constexpr bool check_vision() {
  constexpr DeploymentConfig c = D::kConfig;
  constexpr VisionDims v = c.vision;
  static_assert(vision_dims_empty<v.layers, v.ffn, (v.layer_norm_eps > 0 && v.soft_norm_eps > 0)>::ok);
  static_assert(vision_patches_do_not_tile_image<v.image_size, v.patch>::ok);
  static_assert(vision_heads_do_not_divide_hidden<v.hidden, v.heads>::ok);
  if constexpr (patches_tile_image(v)) {
    static_assert(vision_tokens_do_not_pool_patches<v.tokens_per_image, v.patches_per_side()>::ok);
    static_assert(vision_activation_exceeds_binding<vision_budget(c).largest_activation, kMaxBindingBytes>::ok);
  }
  // The chunk is at most the context: one sentence for an image longer than both.
  if constexpr (v.tokens_per_image + 2 > c.max_context)
    static_assert(image_longer_than_context<v.tokens_per_image + 2, c.max_context>::ok);
  else
    static_assert(image_longer_than_prefill_chunk<v.tokens_per_image + 2, c.prefill_chunk>::ok);
  return true;
}

template <Deployment D>
constexpr bool check_deployment();

// The pair's own checks (a deployment with a draft), before the placement
// counts the draft's bytes with the model's.
template <Deployment D>
constexpr bool check_pair() {
  constexpr DeploymentConfig c = D::kConfig;
  constexpr DeploymentConfig d = *c.draft;
  static_assert(draft_vocabulary_differs<c.model.vocab, d.model.vocab>::ok);
  static_assert(draft_has_a_draft_of_its_own<d.has_draft()>::ok);
  static_assert(draft_with_several_streams<d.streams>::ok);
  static_assert(draft_max_out_of_range<c.draft_max, kMaxDraftTokens>::ok);
  constexpr uint64_t lane = c.streams > 1 ? detail::decode_lane_rows(c) : UINT32_MAX;
  constexpr uint32_t pass_rows = uint32_t(std::min<uint64_t>({c.prefill_chunk, kLayoutOf<D>.logit_rows, lane}));
  static_assert(verify_rows_do_not_fit<c.draft_max + 1, pass_rows>::ok);
  static_assert(draft_ring_shorter_than_rewind<c.draft_max, d.prefill_chunk>::ok);
  static_assert(draft_context_shorter_than_model<d.max_context, c.max_context>::ok);
  if constexpr (!d.has_draft()) static_assert(check_deployment<DraftOf<D>>());
  return true;
}

template <Deployment D>
constexpr bool check_deployment() {
  constexpr DeploymentConfig c = D::kConfig;
  constexpr ModelDims m = D::kConfig.model;
  static_assert(query_heads_not_a_multiple_of_kv_heads<m.heads, m.kv_heads>::ok);
  static_assert(head_dim_unsupported<m.head_dim, 256>::ok);
  static_assert(kv_cache_format_unsupported<uint32_t(c.scheme.kv_cache)>::ok);
  if constexpr (c.scheme.separate_lm_head())
    static_assert(lm_head_copy_unsupported<uint32_t(c.scheme.embedding), uint32_t(c.scheme.lm_head)>::ok);
  // Every tensor in the format the scheme gives it there (mixes and K-quant
  // fallbacks included): its rows whole blocks.
  constexpr size_t odd = first_tensor_not_whole_blocks(kLayoutOf<D>);
  if constexpr (odd < kLayoutOf<D>.tensors.size()) {
    constexpr TensorSlot t = kLayoutOf<D>.tensors[odd];
    static_assert(row_not_whole_blocks<uint32_t(t.role), uint32_t(t.format), t.cols,
                                       format_info(t.format).block_elems>::ok);
  }
  static_assert(context_longer_than_model<c.max_context, m.max_context>::ok);
  static_assert(prefill_chunk_out_of_range<c.prefill_chunk, c.max_context>::ok);
  constexpr auto& L = kLayoutOf<D>;
  static_assert(streams_out_of_range<c.streams, std::min(c.prefill_chunk, L.logit_rows)>::ok);
  static_assert(activation_exceeds_binding<uint32_t(Act::Gate), L.activations[size_t(Act::Gate)].bytes,
                                           kMaxBindingBytes>::ok);
  static_assert(activation_exceeds_binding<uint32_t(Act::Q), L.activations[size_t(Act::Q)].bytes,
                                           kMaxBindingBytes>::ok);
  if constexpr (c.has_vision()) static_assert(check_vision<D>());
  if constexpr (c.has_draft()) static_assert(check_pair<D>());
  static_assert(check_placement<D>());
  return true;
}

}  // namespace unicorn::diag
