// unicorn/engine/forward.hpp — the forward pass, recorded once per pass kind
// at start-up (EngineCore::record_forward): Recorder::forward() and layer() read
// as Gemma 3's decoder layer, a line per op with the shape it writes; each op's
// kernel and dispatches are in engine/ops.hpp.
#pragma once

#include "unicorn/engine/core.hpp"

namespace unicorn::detail {

constexpr bool coop_tiles_fit(std::span<const kernels::CoopTile> tiles) {
  return std::ranges::all_of(tiles, [](const kernels::CoopTile& t) { return t.shared_bytes() <= gpu::kCoopSharedBytes; });
}
static_assert(coop_tiles_fit(kernels::kCoopTiles),
              "unicorn: a kernels::kCoopTiles tile needs more shared memory than gpu::kCoopSharedBytes, "
              "which gpu::Context requires of a device before it runs matmul_coop");
static_assert(std::ranges::all_of(kernels::kSplitKTiles,
                                  [](const kernels::SplitKTile& t) { return t.tokens <= detail::kDecodeLaneMinRows; }),
              "unicorn: a kernels::kSplitKTiles tile has more tokens than a decode lane's activations have "
              "rows at least (kDecodeLaneMinRows, layout.hpp)");
static_assert(std::ranges::all_of(kernels::kSplitKTiles,
                                  [](const kernels::SplitKTile& t) {
                                    return t.shared_bytes() <= gpu::kCoopSharedBytes && t.partials_fit();
                                  }),
              "unicorn: a kernels::kSplitKTiles tile needs more shared memory than gpu::kCoopSharedBytes "
              "(which gpu::Context requires of a device before it runs matmul_coop_splitk), or its "
              "partial sums do not fit over its staging tiles");

// Builds the dispatch list for one chunk size. Each method is one step of the
// Gemma 3 layer and says the shape of what it writes.
class EngineCore::Recorder {
 public:
  Recorder(EngineCore& core, const Lane& lane, uint32_t n, uint32_t logit_rows, PassKind kind,
           uint32_t splitk_tokens)
      : c_(core), lane_(lane), n_(n), logit_rows_(logit_rows), decode_(kind != PassKind::Prefill),
        splitk_(kind == PassKind::DecodeSplitK), verify_(kind == PassKind::Verify), splitk_tokens_(splitk_tokens), m_(core.cfg_.model),
        half_(half_operands()) {}

  std::vector<gpu::Dispatch> forward() {
    embed();                                                   // x  [n, H]
    for (uint32_t l = 0; l < m_.layers; ++l) layer(int(l));
    final_norm();                                              // xn [logit rows, H]
    linear(head_input(), Act::Logits, c_.layout_.weight(Role::LmHead), 1);  // [logit rows, V]
    sample();                                                  // next token ids
    return std::move(d_);
  }
  // After forward(): tokens at whose multiples each stream's segment of a
  // chunk starts (Graph::segment_tokens).
  uint32_t segment_tokens() const { return segment_tokens_; }

 private:
  // The Gemma 3 decoder layer (Hugging Face Gemma3DecoderLayer). Fused where it
  // saves dispatches: each post-norm adds into the residual stream and then
  // computes the next pre-norm in the same kernel; q/k norm, RoPE and the cache
  // write are one kernel. Projections reading the same input run back to back
  // without a barrier between them.
  void layer(int l) {
    const auto& L = c_.layout_;
    const AttentionKind kind = m_.layer_kind(uint32_t(l));
    const bool last = uint32_t(l) + 1 == m_.layers;
    const Act xn = operand(Act::Xn);
    if (l == 0) norm(Act::X, xn, L.weight(Role::AttnNorm, 0));       // xn = norm(x) [n, H]
    shared_waves_ = m_.q_dim() + 2 * m_.kv_dim();  // q, k, v share waves: one tile
    const bool waits = attention_waits(l);  // then q, k and v signal attention, with no barrier after v
    if (waits) begin_signal();
    linear(xn, Act::Q, L.weight(Role::AttnQ, l), 0, false);          // q [n, heads * hd]
    linear(xn, Act::K, L.weight(Role::AttnK, l), 0, false);          // k [n, kv_heads * hd]
    linear(xn, Act::V, L.weight(Role::AttnV, l), 0, !waits);         // v [n, kv_heads * hd]
    shared_waves_ = 0;
    const std::optional<Wait> wait = waits ? std::optional(end_signal()) : std::nullopt;
    if (!prep_in_attention()) attn_prep(l, kind);  // q, k normed and rotated; cache[l] <- k, v
    attention(l, kind, wait);                  // attn [n, heads * hd] (and, in decode, attn_prep's work)
    // proj = attn Wo [n, H]; x += norm(proj); xn = norm(x)
    output_projection(operand(Act::Attn), L.weight(Role::AttnOut, l), L.weight(Role::PostAttnNorm, l),
                      &L.weight(Role::FfnNorm, l));
    const Act gate = gate_up(l);               // gate = gelu(xn Wg) * (xn Wu)  [n, F]
    // proj = gate Wd [n, H]; x += norm(proj); and, but after the last layer, the next layer's xn = norm(x)
    output_projection(gate, L.weight(Role::FfnDown, l), L.weight(Role::PostFfnNorm, l),
                      last ? nullptr : &L.weight(Role::AttnNorm, l + 1));
  }

  void embed();

  // out = norm(in) * w over token rows (row_set 0) or logit rows (row_set 1).
  void norm(Act in, Act out, const TensorSlot& w, uint32_t row_set = 0);

  // A consumer recorded right after its products with no barrier between
  // them: it waits until `count` workgroups have counted themselves in
  // `counter` (matvec.comp's SIGNAL). The products are recorded between
  // begin_signal() and end_signal(), which says what to wait for.
  struct Wait {
    uint32_t counter, count;
  };
  void begin_signal() { signal_ = counters_used_++, signalled_groups_ = 0; }
  Wait end_signal() { return {*std::exchange(signal_, std::nullopt), signalled_groups_}; }
  // Whether a consumer in this pass may wait on its products (norm_waits,
  // attention_waits): a one-token decode step on the matrix-vector kernels,
  // with a counter left for it.
  bool can_wait() const { return decode_ && n_ == 1 && !splitk(0) && counters_used_ < Lane::wait_counters(c_.cfg_); }

  // x += norm(proj) * w; then, with `next`, xn = norm(x) * next.
  // proj may hold several partial sums, added first.
  // With `wait`: no barrier before it; its one workgroup waits for the
  // product (norm_waits).
  void add_norm(const TensorSlot& w, const TensorSlot* next, std::optional<Wait> wait = std::nullopt);

  // proj = in W^T, then add_norm(norm, next), with no barrier between the two
  // where norm_waits().
  void output_projection(Act in, const TensorSlot& w, const TensorSlot& norm, const TensorSlot* next);
  // Whether a product into Act::Proj signals its add_norm instead of a barrier
  // (can_wait, Tuning::decode_norm_wait).
  bool norm_waits() const { return can_wait() && c_.tuning_.decode_norm_wait != 0; }

  void final_norm() { norm(Act::X, head_input(), c_.layout_.weight(Role::OutputNorm), 1); }
  // The LM head's input: on split-K with fp16 operands, the final norm writes
  // it as fp16 (the values the head's kernel would round it to), as the
  // layers' norms do for their products; else the fp32 norm (matrix-vector).
  Act head_input() const { return half_ && splitk(1) ? Act::Operand : Act::Xn; }

  // Whether this pass's products over `row_set` run on matmul_coop_splitk.
  bool splitk(uint32_t row_set) const { return splitk_ && (row_set ? logit_rows_ : n_) > 1; }

  // y = x W^T over every part of W: matrix-vector for decode passes and for the
  // LM head (which usually needs one row of logits), tiled matrix-matrix otherwise.
  // With `pair` (matrix-vector, block formats): y = gelu(x W^T) * (x pair^T).
  // A batched decode pass (n > 1 streams) reads each weight once per step for
  // all its tokens: on tensor units, workgroups whose subgroups split K
  // (matmul_coop_splitk); elsewhere each matrix-vector workgroup takes every
  // token row, keeping the single-token lanes (a row's sums in the same order:
  // the same results) and trading rows per row group for tokens per pass.
  void linear(Act in, Act out, const TensorSlot& w, uint32_t row_set = 0, bool barrier = true,
              const TensorSlot* pair = nullptr);

  // linear() for a batched decode pass on tensor units: tiles of the step's
  // token rows by weight rows, K split across each workgroup's subgroups.
  void linear_splitk(Act in, Act out, const TensorSlot& w, uint32_t row_set, bool barrier);
  // The most partial sums q, k and v may take: the decode lane's slices where
  // attention adds them (its PREP), else 1.
  uint32_t qkv_slices_cap() const;

  // gelu(xn Wg^T) * (xn Wu^T) on matmul_coop_splitk in one dispatch per part
  // (PAIR): each tile's gate and up rows share its X loads. The product goes
  // into Act::FfnOperand (fp16), not into the Operand that holds xn: tiles
  // that finish first would overwrite rows of xn that later tiles still read
  // (a 4B's steps differed run to run on the H200: unicorn-bench --invariance).
  // Returns where it went.
  Act gate_up_splitk(const TensorSlot& gate, const TensorSlot& up);
  // std::logic_error where a product would write the activation it reads.
  static void reads_not_written(Act in, Act out);

  // gate = gelu(xn W_gate^T) * (xn W_up^T): one fused dispatch when decoding
  // block-format weights split alike (matrix-vector, or split-K tiles for a
  // batched step), else gate, up, geglu. Returns where the product is: the
  // down projection's input.
  Act gate_up(int l);

  // q/k norm, RoPE, and the cache write, per part of the layer's cache (ranges
  // of (stream, kv head) rows; the first part's dispatch also does the query heads).
  void attn_prep(int l, AttentionKind kind);

  // attn [n, heads * hd] from q and the layer's cache, per cache part. Decode
  // walks the keys per (token, query head); a chunk of several tokens runs
  // tiles of query rows that share each key and value load: on the tensor
  // units where the device has them and a tile fits (attention_coop), else
  // where the device's shared memory holds a tile for this head dim
  // (attention_tiled).
  // With `wait`: no barrier before it; its workgroups wait for the q, k and v
  // products (attention_waits).
  void attention(int l, AttentionKind kind, std::optional<Wait> wait = std::nullopt);
  // Whether attention() does attn_prep's work itself: decode passes
  // (one token per stream, shaders/attention.comp's PREP).
  // Not in a verify pass: its rows are one stream's, and each attends to the
  // keys the rows before it write.
  bool prep_in_attention() const { return decode_ && !verify_ && c_.tuning_.decode_attention_prep != 0; }
  // Whether layer l's q, k and v products signal its attention instead of a
  // barrier (can_wait, Tuning::decode_attention_wait): attention with PREP,
  // over one cache part.
  bool attention_waits(int l) const {
    return can_wait() && prep_in_attention() && c_.tuning_.decode_attention_wait != 0 &&
           c_.layout_.parts_of(c_.layout_.kv(Role::KCache, l)).size() == 1;
  }

  void geglu();

  // Penalty and per-slice maxima over many workgroups, then the choice.
  void sample();

  uint32_t slots_of(AttentionKind kind) const;
  static uint32_t groups(uint32_t items, uint32_t per) { return (items + per - 1) / per; }

  void add(const gpu::Kernel& k, std::span<const vk::DescriptorBufferInfo> b, gpu::PushWords push,
           std::array<uint32_t, 3> g, bool barrier = true);

  // Whether this pass's products take fp16 operands (kernels::x_half_fits): a
  // prefill on tensor units, every K of the model a multiple of 8.
  bool half_operands() const;
  // Where the input of a product lives: with fp16 operands the kernel that
  // produces norm(x), attn or gelu(gate) * up writes it once into Act::Operand
  // as fp16, instead of each product converting the fp32 one.
  Act operand(Act fp32) const { return half_ ? Act::Operand : fp32; }
  // Elements between the partial sums of an activation that holds several
  // (its product's SLICE and its consumer's): this pass's rows of it.
  uint32_t slice_elems(Act a) const { return n_ * uint32_t(c_.layout_.activations[size_t(a)].row_elems); }
  // rmsnorm's workgroup for a hidden-size row on this device (kernels::rmsnorm_threads).
  uint32_t norm_threads() const {
    return kernels::rmsnorm_threads(m_.hidden, c_.ctx_.info().subgroup_size, c_.ctx_.info().cpu());
  }

  EngineCore& c_;
  const Lane& lane_;  // the activations and host buffers the pass binds
  uint32_t n_, logit_rows_;
  bool decode_;  // one token per stream: per-row positions and streams
  bool splitk_;  // its products on matmul_coop_splitk rather than matrix-vector kernels
  bool verify_;  // one stream's consecutive tokens (PassKind::Verify)
  uint32_t splitk_tokens_;  // their tile's token rows (0: by the pass's rows)
  const ModelDims& m_;
  bool half_;  // products take fp16 operands (Act::Operand)
  // Partial sums each activation holds (the last product into it split K).
  std::array<uint32_t, size_t(Act::kCount)> slices_ = [] {
    std::array<uint32_t, size_t(Act::kCount)> a{};
    a.fill(1);
    return a;
  }();
  uint64_t in_flight_ = 0;    // workgroups dispatched since the last barrier
  // Rows of the products dispatched together whose tile is chosen as one
  // matrix's (their workgroups share waves); 0: each its own.
  uint32_t shared_waves_ = 0;
  uint32_t segment_tokens_ = 1;
  // The counter the next matvecs signal (output_projection, q/k/v before a
  // waiting attention), and how many workgroups signalled it; counters handed
  // out so far (Lane::wait_counters).
  std::optional<uint32_t> signal_;
  uint32_t signalled_groups_ = 0;
  uint32_t counters_used_ = 0;
  std::vector<gpu::Dispatch> d_;
};

UNICORN_DECL std::optional<EngineCore::Graph> EngineCore::record_forward(uint32_t n, uint32_t logit_rows,
                                                                   PassKind kind, uint32_t splitk_tokens) {
  Lane& lane = kind == PassKind::Prefill ? *prefill_lane_ : decode_lane();
  Recorder recorder(*this, lane, n, logit_rows, kind, splitk_tokens);
  const auto dispatches = recorder.forward();
  Graph g;
  g.lane = &lane;
  g.splitk = kind == PassKind::DecodeSplitK;
  g.segment_tokens = recorder.segment_tokens();
  g.commands = lane.stream.allocate();
  g.commands.begin(vk::CommandBufferBeginInfo{});
  // The previous submission's writes (KV cache, uploads) come before this pass.
  gpu::Stream::full_barrier(*g.commands);
  for (const auto& d : dispatches) gpu::record(*g.commands, d, d.barrier_after);
  // The chosen token ids are read by the host after the fence.
  const auto to_host = vk::MemoryBarrier{}
                           .setSrcAccessMask(vk::AccessFlagBits::eShaderWrite)
                           .setDstAccessMask(vk::AccessFlagBits::eHostRead);
  g.commands.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                             vk::PipelineStageFlagBits::eHost, {}, to_host, {}, {});
  g.commands.end();
  g.dispatches = dispatches;
  return g;
}

}  // namespace unicorn::detail
