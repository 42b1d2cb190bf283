// unicorn/layout/layout.hpp — the static buffer layout of a deployment.
//
// Every weight tensor, the KV cache and every activation gets an offset and a
// size at compile time. Memory is cut into slabs of at most kMaxBindingBytes:
// 128 MiB is the smallest maxStorageBufferRange Vulkan allows (lavapipe's
// value), so a layout that respects it binds on every device. A tensor larger
// than a slab is split along its outermost dimension (weight rows, KV heads) into
// parts; every kernel that reads it is dispatched once per part. At run time,
// slabs are packed into allocations under the device's maxMemoryAllocationSize.
//
// Slabs never mix memory pools (config/placement.hpp): each arena is packed
// pool by pool (Vram first, then Gtt, ...), so each pool's slabs are one
// contiguous run that the engine allocates from that pool's memory type. With
// everything in Vram the order, offsets and slabs are exactly those of a
// layout without pools.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/config/deployment.hpp"

namespace unicorn {

inline constexpr uint64_t kMaxBindingBytes = uint64_t{128} << 20;
inline constexpr uint64_t kBindingAlign = 256;  // >= every device's minStorageBufferOffsetAlignment

// Tensor roles, in the order llama.cpp writes a Gemma 3 GGUF layer.
enum class Role : uint8_t {
  Embedding, AttnNorm, AttnQ, AttnK, AttnV, AttnQNorm, AttnKNorm, AttnOut, PostAttnNorm,
  FfnNorm, FfnGate, FfnUp, FfnDown, PostFfnNorm, OutputNorm, KCache, VCache,
  LmHead,  // only in schemes with a separate LM head (Scheme::with_lm_head)
};
inline constexpr Role kLayerWeightRoles[] = {
    Role::AttnNorm, Role::AttnQ,    Role::AttnK,   Role::AttnV,  Role::AttnQNorm,
    Role::AttnKNorm, Role::AttnOut, Role::PostAttnNorm, Role::FfnNorm, Role::FfnGate,
    Role::FfnUp,    Role::FfnDown,  Role::PostFfnNorm};

// The GGUF name stem of each role (llama.cpp's gemma3 names).
constexpr std::string_view role_gguf_stem(Role r) {
  switch (r) {
    case Role::Embedding: return "token_embd";
    case Role::AttnNorm: return "attn_norm";
    case Role::AttnQ: return "attn_q";
    case Role::AttnK: return "attn_k";
    case Role::AttnV: return "attn_v";
    case Role::AttnQNorm: return "attn_q_norm";
    case Role::AttnKNorm: return "attn_k_norm";
    case Role::AttnOut: return "attn_output";
    case Role::PostAttnNorm: return "post_attention_norm";
    case Role::FfnNorm: return "ffn_norm";
    case Role::FfnGate: return "ffn_gate";
    case Role::FfnUp: return "ffn_up";
    case Role::FfnDown: return "ffn_down";
    case Role::PostFfnNorm: return "post_ffw_norm";
    case Role::OutputNorm: return "output_norm";
    case Role::LmHead: return "output";  // llama.cpp's name for an untied output projection
    case Role::KCache: return "cache_k";
    case Role::VCache: return "cache_v";
  }
  return "?";
}

// The placement group a tensor role belongs to (config/placement.hpp).
constexpr Group group_of(Role r) {
  switch (r) {
    case Role::Embedding:
    case Role::OutputNorm:
    case Role::LmHead: return Group::Embeddings;
    case Role::AttnNorm:
    case Role::AttnQ:
    case Role::AttnK:
    case Role::AttnV:
    case Role::AttnQNorm:
    case Role::AttnKNorm:
    case Role::AttnOut:
    case Role::PostAttnNorm: return Group::Attention;
    case Role::FfnNorm:
    case Role::FfnGate:
    case Role::FfnUp:
    case Role::FfnDown:
    case Role::PostFfnNorm: return Group::Ffn;
    case Role::KCache:
    case Role::VCache: return Group::KvCache;
  }
  return Group::Attention;
}

constexpr bool is_norm(Role r) {
  return r == Role::AttnNorm || r == Role::AttnQNorm || r == Role::AttnKNorm ||
         r == Role::PostAttnNorm || r == Role::FfnNorm || r == Role::PostFfnNorm ||
         r == Role::OutputNorm;
}

enum class Arena : uint8_t { Weights, KvCache };

struct TensorSlot {
  Role role;
  int32_t layer;        // -1 for whole-model tensors
  uint64_t rows;        // outermost dimension (GGUF ne[1]; KV: (stream, kv head) pairs)
  uint64_t cols;        // elements per row (GGUF ne[0]; KV: slots * head_dim)
  Format format;
  uint64_t bytes;
  uint32_t first_part;
  uint32_t part_count;
  Arena arena;
  Pool pool;

  std::string gguf_name() const {
    std::string stem{role_gguf_stem(role)};
    return layer < 0 ? stem + ".weight" : "blk." + std::to_string(layer) + "." + stem + ".weight";
  }
};

// A contiguous run of whole rows of one tensor inside one slab.
struct TensorPart {
  uint32_t slab;
  uint64_t offset;  // bytes from the slab's start, kBindingAlign-aligned
  uint64_t row_begin;
  uint64_t rows;
  uint64_t bytes;
};

// Activation buffers, one slab each. Shapes are per prefill chunk of n tokens.
// Proj: the output projections' result, as up to kProjSlices partial sums
// (prefill products split over K where their tiles alone leave the GPU idle;
// the post-norm adds them), as many as fit one binding (ActivationSlot::slices).
// Up: likewise up to kUpSlices partial sums (geglu adds them), where the up
// projection's split fills the waves that gate and up leave partly idle.
// Operand: the fp16 input of prefill's tensor-unit products (norm(x), attn,
// gelu(gate) * up), written once by the kernel that produces it.
// FfnOperand: the fp16 input of a batched step's down projection where gate
// and up are one product (matmul_coop_splitk's PAIR): that product reads xn
// from Operand, so it cannot write there (tiles that finish first would
// overwrite rows that others still read). Decode lanes only: a chunk's lane
// holds one row of it.
enum class Act : uint8_t { X, Xn, Q, K, V, Attn, Proj, Gate, Up, Logits, Operand, FfnOperand, kCount };
constexpr bool is_fp16(Act a) { return a == Act::Operand || a == Act::FfnOperand; }
inline constexpr uint32_t kProjSlices = 4, kUpSlices = 2;
// The attention projections' outputs (a decode lane may hold them in partial sums).
constexpr bool is_qkv(Act a) { return a == Act::Q || a == Act::K || a == Act::V; }
inline constexpr std::string_view kActNames[] = {"x", "xn", "q", "k", "v", "attn", "proj",
                                                 "gate", "up", "logits", "operand", "ffn_operand"};

struct ActivationSlot {
  uint64_t row_elems;  // elements per token row: f32, f16 for the operands (is_fp16)
  uint64_t rows;       // token rows it holds (of every slice, for Proj and Up)
  uint64_t bytes;
  uint32_t slices = 1;  // partial sums of a chunk it holds (Proj, Up; the decode lane's Q, K, V)
};

struct ArenaSummary {
  uint32_t slabs = 0;
  uint64_t bytes = 0;
};

// Everything the run-time engine needs, as views of constexpr arrays.
struct LayoutView {
  std::span<const TensorSlot> tensors;
  std::span<const TensorPart> parts;
  std::span<const uint64_t> weight_slab_bytes;
  std::span<const uint64_t> kv_slab_bytes;
  std::span<const ActivationSlot> activations;
  std::span<const Pool> weight_slab_pools;
  std::span<const Pool> kv_slab_pools;
  Pool activation_pool;
  uint32_t logit_rows;  // positions whose logits one LM-head pass produces
  uint32_t local_kv_slots, global_kv_slots;

  constexpr uint64_t weight_bytes() const {
    uint64_t n = 0;
    for (const uint64_t b : weight_slab_bytes) n += b;
    return n;
  }
  constexpr const TensorSlot& weight(Role role, int layer = -1) const {
    // Whole-model tensors first/last; layer tensors in kLayerWeightRoles order.
    if (role == Role::Embedding) return tensors[0];
    if (role == Role::OutputNorm || role == Role::LmHead) {
      // The weights end with the output norm, then the LM head when the scheme
      // keeps its own; without one the LM head is the (tied) embedding.
      const size_t end = tensors.size() - 2 * kv_layers();
      const bool own_head = tensors[end - 1].role == Role::LmHead;
      if (role == Role::LmHead) return own_head ? tensors[end - 1] : tensors[0];
      return tensors[end - 1 - (own_head ? 1 : 0)];
    }
    uint32_t i = 0;
    while (kLayerWeightRoles[i] != role) ++i;
    return tensors[1 + layer * std::size(kLayerWeightRoles) + i];
  }
  constexpr const TensorSlot& kv(Role role, int layer) const {
    return tensors[tensors.size() - 2 * kv_layers() + 2 * layer + (role == Role::VCache)];
  }
  constexpr std::span<const TensorPart> parts_of(const TensorSlot& t) const {
    return parts.subspan(t.first_part, t.part_count);
  }
  constexpr size_t kv_layers() const { return layers; }
  uint32_t layers;
};

namespace detail {

constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

constexpr size_t tensor_count(const DeploymentConfig& c) {
  return 2 + c.model.layers * std::size(kLayerWeightRoles) + 2 * c.model.layers +
         (c.scheme.separate_lm_head() ? 1 : 0);
}

struct TensorShape {
  Role role;
  uint64_t rows, cols;
  Format format;
};

constexpr uint32_t kv_slots(const DeploymentConfig& c, AttentionKind kind) {
  // Local layers keep a ring of the last `window` positions plus one prefill
  // chunk, so a chunk never overwrites keys its own first tokens still need.
  const uint64_t ring = uint64_t{c.model.sliding_window} + c.prefill_chunk;
  return kind == AttentionKind::Global || ring >= c.max_context ? c.max_context
                                                                : static_cast<uint32_t>(ring);
}

// A layer's tensor of role r, in the format the scheme gives it there (format_of).
constexpr TensorShape layer_shape(const DeploymentConfig& c, Role r, uint32_t layer) {
  const auto& m = c.model;
  const auto matrix = [&](WeightKind k, uint64_t rows, uint64_t cols) {
    return TensorShape{r, rows, cols, format_of(c.scheme, k, int(layer), mix_shape(m), cols)};
  };
  switch (r) {
    case Role::AttnQ: return matrix(WeightKind::AttnQ, m.q_dim(), m.hidden);
    case Role::AttnK: return matrix(WeightKind::AttnK, m.kv_dim(), m.hidden);
    case Role::AttnV: return matrix(WeightKind::AttnV, m.kv_dim(), m.hidden);
    case Role::AttnOut: return matrix(WeightKind::AttnOut, m.hidden, m.q_dim());
    case Role::FfnGate: return matrix(WeightKind::FfnGate, m.ffn, m.hidden);
    case Role::FfnUp: return matrix(WeightKind::FfnUp, m.ffn, m.hidden);
    case Role::FfnDown: return matrix(WeightKind::FfnDown, m.hidden, m.ffn);
    case Role::AttnQNorm:
    case Role::AttnKNorm: return {r, 1, m.head_dim, Format::F32};
    default: return {r, 1, m.hidden, Format::F32};  // the other norms
  }
}

// Visits every tensor in layout order: embedding, layers, output norm, the LM
// head when the scheme keeps a separate one, KV cache.
template <class F>
constexpr void for_each_tensor(const DeploymentConfig& c, F&& f) {
  const auto& m = c.model;
  f(TensorShape{Role::Embedding, m.vocab, m.hidden, format_of(c.scheme, WeightKind::Embedding, -1, mix_shape(m), m.hidden)},
    -1, Arena::Weights);
  for (uint32_t l = 0; l < m.layers; ++l)
    for (Role r : kLayerWeightRoles) f(layer_shape(c, r, l), int(l), Arena::Weights);
  f(TensorShape{Role::OutputNorm, 1, m.hidden, Format::F32}, -1, Arena::Weights);
  if (c.scheme.separate_lm_head())
    f(TensorShape{Role::LmHead, m.vocab, m.hidden, format_of(c.scheme, WeightKind::LmHead, -1, mix_shape(m), m.hidden)},
      -1, Arena::Weights);
  // Every stream has its own cache: row s * kv_heads + h is stream s's kv head h,
  // so parts (runs of rows) split between streams as between heads.
  for (uint32_t l = 0; l < m.layers; ++l) {
    const uint64_t cols = uint64_t{kv_slots(c, m.layer_kind(l))} * m.head_dim;
    const uint64_t rows = uint64_t{m.kv_heads} * c.streams;
    f(TensorShape{Role::KCache, rows, cols, c.scheme.kv_cache}, int(l), Arena::KvCache);
    f(TensorShape{Role::VCache, rows, cols, c.scheme.kv_cache}, int(l), Arena::KvCache);
  }
}

constexpr uint64_t rows_per_part(const TensorShape& t) {
  const uint64_t row = row_bytes(t.format, t.cols);
  return row == 0 ? 1 : kMaxBindingBytes / row;
}

constexpr uint64_t part_count(const TensorShape& t) {
  const uint64_t per = rows_per_part(t);
  return per == 0 ? 0 : (t.rows + per - 1) / per;
}

constexpr size_t total_parts(const DeploymentConfig& c) {
  size_t n = 0;
  for_each_tensor(c, [&](const TensorShape& t, int, Arena) { n += part_count(t); });
  return n;
}

constexpr Pool tensor_pool(const DeploymentConfig& c, Role role, int layer) {
  return c.placement.pool_of(group_of(role), layer);
}

// Slab packing: pool by pool, parts are placed in tensor order; a new slab
// starts when the next part would cross kMaxBindingBytes or belongs to another
// pool. on_part(shape, layer, tensor index in layout order, pool, part).
// Returns the number of slabs of an arena.
template <class OnPart>
constexpr uint32_t pack(const DeploymentConfig& c, Arena arena, OnPart&& on_part) {
  uint32_t slab = 0;
  uint64_t used = 0;
  bool any = false;
  for (Pool pool : kPools) {
    bool pool_started = false;
    uint32_t index = 0;
    for_each_tensor(c, [&](const TensorShape& t, int layer, Arena a) {
      const uint32_t this_index = index++;
      if (a != arena || tensor_pool(c, t.role, layer) != pool) return;
      const uint64_t per = rows_per_part(t);
      const uint64_t row = row_bytes(t.format, t.cols);
      for (uint64_t r = 0; r < t.rows; r += per) {
        const uint64_t rows = t.rows - r < per ? t.rows - r : per;
        const uint64_t bytes = rows * row;
        uint64_t at = align_up(used, kBindingAlign);
        if (any && (!pool_started || at + bytes > kMaxBindingBytes)) {
          ++slab;
          at = 0;
        }
        any = pool_started = true;
        on_part(t, layer, this_index, pool, TensorPart{slab, at, r, rows, bytes});
        used = at + bytes;
      }
    });
  }
  return any ? slab + 1 : 0;
}

constexpr uint32_t slab_count(const DeploymentConfig& c, Arena a) {
  return pack(c, a, [](auto&&...) {});
}

constexpr uint32_t logit_rows(const DeploymentConfig& c) {
  const uint64_t fit = kMaxBindingBytes / (uint64_t{c.model.vocab} * 4);
  return static_cast<uint32_t>(fit < c.prefill_chunk ? fit : c.prefill_chunk);
}

// Token rows of the decode lane's activations. With streams > 1 the decode
// steps have activations of their own (EngineCore), so that a server's prefill
// pass runs beside them: rows for a step's streams, but at least
// kDecodeLaneMinRows, the split-K tiles' loads reaching past a small step's
// rows (engine/forward.hpp checks the tiles against it); 0 with one stream.
inline constexpr uint64_t kDecodeLaneMinRows = 64;
constexpr uint64_t decode_lane_rows(const DeploymentConfig& c) {
  if (c.streams <= 1) return 0;
  const uint64_t rows = c.streams > kDecodeLaneMinRows ? c.streams : kDecodeLaneMinRows;
  return rows < c.prefill_chunk ? rows : c.prefill_chunk;
}
// The decode lane's copy of activation `a` (the layout's, sized for a prefill
// chunk): as many slices, each of decode_lane_rows rows; q, k and v with
// kDecodeQkvSlices, for batched steps whose q, k and v products split K
// (their few row tiles alone leave most of the GPU idle; attention adds them).
inline constexpr uint32_t kDecodeQkvSlices = 4;
constexpr ActivationSlot decode_lane_slot(const DeploymentConfig& c, Act a, const ActivationSlot& chunk) {
  const uint64_t lane = decode_lane_rows(c);
  const bool qkv = is_qkv(a);
  const uint32_t slices = qkv ? kDecodeQkvSlices : chunk.slices;
  const uint64_t rows = a == Act::Logits       ? (chunk.rows < lane ? chunk.rows : lane)
                        : qkv                  ? lane * slices
                        : a == Act::FfnOperand ? lane
                                               : chunk.rows / c.prefill_chunk * lane;
  return {chunk.row_elems, rows, chunk.bytes / chunk.rows * rows, slices};
}

}  // namespace detail

// The layout as constexpr arrays; NT tensors, NP parts, NW/NK weight/KV slabs.
template <size_t NT, size_t NP, size_t NW, size_t NK>
struct StaticLayout {
  std::array<TensorSlot, NT> tensors{};
  std::array<TensorPart, NP> parts{};
  std::array<uint64_t, NW> weight_slab_bytes{};
  std::array<uint64_t, NK> kv_slab_bytes{};
  std::array<ActivationSlot, size_t(Act::kCount)> activations{};
  std::array<Pool, NW> weight_slab_pools{};
  std::array<Pool, NK> kv_slab_pools{};
  Pool activation_pool = Pool::Vram;
  uint32_t logit_rows = 0, local_kv_slots = 0, global_kv_slots = 0, layers = 0;

  constexpr uint64_t weight_bytes() const { return sum(weight_slab_bytes); }
  constexpr uint64_t kv_bytes() const { return sum(kv_slab_bytes); }
  constexpr uint64_t activation_bytes() const {
    uint64_t n = 0;
    for (const auto& a : activations) n += a.bytes;
    return n;
  }
  constexpr LayoutView view() const {
    return {tensors, parts, weight_slab_bytes, kv_slab_bytes, activations, weight_slab_pools,
            kv_slab_pools, activation_pool, logit_rows, local_kv_slots, global_kv_slots, layers};
  }

 private:
  template <class A>
  static constexpr uint64_t sum(const A& a) {
    uint64_t n = 0;
    for (auto v : a) n += v;
    return n;
  }
};

namespace detail {

// Fills a layout's tables, fixed-size arrays (StaticLayout, at compile time)
// or vectors already sized by tensor_count, total_parts and slab_count
// (RunLayout, at run time): one packing for both.
template <class Tables>
constexpr void fill_layout(const DeploymentConfig& c, Tables& L) {
  size_t pi = 0;
  // A tensor's parts arrive consecutively, the first with row_begin == 0; the
  // tensor list stays in layout order (LayoutView::weight indexes it).
  for (Arena arena : {Arena::Weights, Arena::KvCache}) {
    detail::pack(c, arena, [&](const detail::TensorShape& t, int layer, uint32_t ti, Pool pool,
                               const TensorPart& p) {
      if (p.row_begin == 0)
        L.tensors[ti] = TensorSlot{t.role, layer, t.rows, t.cols, t.format,
                                   t.rows * row_bytes(t.format, t.cols), uint32_t(pi), 0, arena, pool};
      L.tensors[ti].part_count++;
      L.parts[pi++] = p;
      auto slab_bytes = arena == Arena::Weights ? std::span<uint64_t>(L.weight_slab_bytes)
                                                 : std::span<uint64_t>(L.kv_slab_bytes);
      auto slab_pools = arena == Arena::Weights ? std::span<Pool>(L.weight_slab_pools)
                                                 : std::span<Pool>(L.kv_slab_pools);
      if (slab_bytes[p.slab] < p.offset + p.bytes) slab_bytes[p.slab] = p.offset + p.bytes;
      slab_pools[p.slab] = pool;
    });
  }
  L.activation_pool = c.placement.pool_of(Group::Activations, -1);
  // KV parts index their arena's slabs; weight and KV slabs are separate lists.
  const auto& m = c.model;
  const uint64_t n = c.prefill_chunk;
  const uint64_t operand_elems = std::max({uint64_t(m.hidden), uint64_t(m.q_dim()), uint64_t(m.ffn)});
  // Partial sums: as many slices as kProjSlices / kUpSlices and one binding allow.
  const auto slices = [&](uint64_t elems, uint32_t most) {
    return uint32_t(std::clamp<uint64_t>(kMaxBindingBytes / (n * elems * 4), 1, most));
  };
  const uint32_t proj_slices = slices(m.hidden, kProjSlices), up_slices = slices(m.ffn, kUpSlices);
  const uint64_t rows[] = {n, n, n, n, n, n, n * proj_slices, n, n * up_slices, detail::logit_rows(c), n, 1};
  const uint64_t elems[] = {m.hidden, m.hidden, m.q_dim(), m.kv_dim(), m.kv_dim(),
                            m.q_dim(), m.hidden, m.ffn, m.ffn, m.vocab, operand_elems, m.ffn};
  for (size_t a = 0; a < size_t(Act::kCount); ++a)
    L.activations[a] = {elems[a], rows[a], elems[a] * rows[a] * (is_fp16(Act(a)) ? 2 : 4)};
  L.activations[size_t(Act::Proj)].slices = proj_slices;
  L.activations[size_t(Act::Up)].slices = up_slices;
  L.logit_rows = detail::logit_rows(c);
  L.local_kv_slots = detail::kv_slots(c, AttentionKind::Local);
  L.global_kv_slots = detail::kv_slots(c, AttentionKind::Global);
  L.layers = m.layers;
}

}  // namespace detail

template <size_t NT, size_t NP, size_t NW, size_t NK>
constexpr StaticLayout<NT, NP, NW, NK> build_layout(const DeploymentConfig& c) {
  StaticLayout<NT, NP, NW, NK> L;
  detail::fill_layout(c, L);
  return L;
}

// The layout built at run time, in vectors: the engine's own (engine/core.hpp),
// whose KV cache is as long as the context chosen when the engine is created
// (EngineOptions::context: c.max_context is then that context, at most the
// compiled one). Weights and activations do not depend on the context, so
// they are the compiled layout's, slab for slab.
struct RunLayout {
  std::vector<TensorSlot> tensors;
  std::vector<TensorPart> parts;
  std::vector<uint64_t> weight_slab_bytes, kv_slab_bytes;
  std::array<ActivationSlot, size_t(Act::kCount)> activations{};
  std::vector<Pool> weight_slab_pools, kv_slab_pools;
  Pool activation_pool = Pool::Vram;
  uint32_t logit_rows = 0, local_kv_slots = 0, global_kv_slots = 0, layers = 0;

  explicit RunLayout(const DeploymentConfig& c)
      : tensors(detail::tensor_count(c)),
        parts(detail::total_parts(c)),
        weight_slab_bytes(detail::slab_count(c, Arena::Weights)),
        kv_slab_bytes(detail::slab_count(c, Arena::KvCache)),
        weight_slab_pools(weight_slab_bytes.size()),
        kv_slab_pools(kv_slab_bytes.size()) {
    detail::fill_layout(c, *this);
  }
  RunLayout(const RunLayout&) = delete;  // view() points into it
  RunLayout& operator=(const RunLayout&) = delete;

  LayoutView view() const {
    return {tensors, parts, weight_slab_bytes, kv_slab_bytes, activations, weight_slab_pools,
            kv_slab_pools, activation_pool, logit_rows, local_kv_slots, global_kv_slots, layers};
  }
};

// The layout of deployment D, computed once at compile time.
template <Deployment D>
inline constexpr auto kLayoutOf =
    build_layout<detail::tensor_count(D::kConfig), detail::total_parts(D::kConfig),
                 detail::slab_count(D::kConfig, Arena::Weights),
                 detail::slab_count(D::kConfig, Arena::KvCache)>(D::kConfig);

}  // namespace unicorn
