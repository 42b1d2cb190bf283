// unicorn/engine/ops.hpp — the ops the forward pass is made of (Recorder's
// members: embed, norms, linear on matvec / matmul / tensor units, attention
// preparation and attention, GeGLU, sampling): each picks its kernel, fills its
// specialization constants and adds a dispatch per part of what it reads.
#pragma once

#include "unicorn/engine/core.hpp"
#include "unicorn/engine/product_plan.hpp"

namespace unicorn::detail {

UNICORN_DECL void EngineCore::Recorder::embed() {
  const TensorSlot& t = c_.layout_.weight(Role::Embedding);
  const kernels::Embed spec{.hidden = m_.hidden, .scale = std::sqrt(float(m_.hidden))};
  const auto& k = c_.kernel(kernels::embed(t.format), spec);
  const auto parts = c_.layout_.parts_of(t);
  for (size_t i = 0; i < parts.size(); ++i) {  // parts write their own rows: one barrier after the last
    const TensorPart& p = parts[i];
    const vk::DescriptorBufferInfo b[] = {c_.part(t, p), lane_.step(), lane_.act(Act::X)};
    add(k, b, {uint32_t(p.row_begin), uint32_t(p.rows)}, {groups(m_.hidden, 64), n_, 1}, i + 1 == parts.size());
  }
}

UNICORN_DECL void EngineCore::Recorder::norm(Act in, Act out, const TensorSlot& w, uint32_t row_set) {
  const kernels::RmsNorm spec{.dim = m_.hidden, .eps = m_.rms_eps, .accumulate = 0, .row_set = row_set, .chain = 0,
                              .half_out = out == Act::Operand, .slices = 0, .slice = 0, .wait = 0,
                              .threads = norm_threads()};
  const auto& k = c_.kernel(kernels::kRmsNorm, spec);
  const auto wb = c_.part(w, c_.layout_.parts_of(w)[0]);
  const vk::DescriptorBufferInfo b[] = {lane_.act(in), wb, lane_.act(out), lane_.step(), wb, lane_.act(out),
                                        lane_.counters[0].whole()};
  add(k, b, {1}, {row_set ? logit_rows_ : n_, 1, 1});
}

UNICORN_DECL void EngineCore::Recorder::add_norm(const TensorSlot& w, const TensorSlot* next, std::optional<Wait> wait) {
  const kernels::RmsNorm spec{.dim = m_.hidden, .eps = m_.rms_eps, .accumulate = 1, .row_set = 0,
                              .chain = next ? 1u : 0u, .half_out = next && half_,
                              .slices = slices_[size_t(Act::Proj)], .slice = slice_elems(Act::Proj),
                              .wait = wait ? 1u : 0u, .threads = norm_threads()};
  const auto& k = c_.kernel(kernels::kRmsNorm, spec);
  const auto wb = c_.part(w, c_.layout_.parts_of(w)[0]);
  const auto nb = next ? c_.part(*next, c_.layout_.parts_of(*next)[0]) : wb;
  const vk::DescriptorBufferInfo b[] = {lane_.act(Act::Proj), wb, lane_.act(Act::X), lane_.step(), nb,
                                        lane_.act(operand(Act::Xn)), lane_.counters[0].whole()};
  add(k, b, {1, wait ? wait->counter : 0u, wait ? wait->count : 0u}, {n_, 1, 1});
}

UNICORN_DECL void EngineCore::Recorder::output_projection(Act in, const TensorSlot& w, const TensorSlot& norm,
                                                    const TensorSlot* next) {
  if (!norm_waits()) {
    linear(in, Act::Proj, w);  // proj [n, H]
    return add_norm(norm, next);  // x += norm(proj); xn = norm(x)
  }
  begin_signal();
  linear(in, Act::Proj, w, 0, false);  // its workgroups count themselves for the add_norm
  add_norm(norm, next, end_signal());
}

UNICORN_DECL void EngineCore::Recorder::reads_not_written(Act in, Act out) {
  if (in == out)
    throw std::logic_error("unicorn: a product reads and writes activation " + std::string(kActNames[size_t(in)]) +
                           ": workgroups that finish first would overwrite rows that others still read");
}

UNICORN_DECL void EngineCore::Recorder::linear(Act in, Act out, const TensorSlot& w, uint32_t row_set, bool barrier, const TensorSlot* pair) {
  reads_not_written(in, out);
  if (splitk(row_set)) return linear_splitk(in, out, w, row_set, barrier);
  const auto& info = c_.ctx_.info();
  const bool cpu = info.cpu();
  // A CPU device (lavapipe) runs a prefill pass's products on matvec too: the
  // tiles of matmul.comp compute 64 token rows whatever the chunk holds, and
  // their barriers are thread switches there (the demo model's 3-token
  // prefill: 42 products in 1,557 ms on matmul; notes/build_time.md).
  const bool vec = decode_ || row_set == 1 || cpu;
  const uint32_t K = uint32_t(w.cols), M = uint32_t(w.rows);
  // Token rows per workgroup: a decode step's; in a prefill pass one, except
  // that on a CPU device every row of the pass (the LM head's logit rows)
  // goes to each workgroup, reading each weight once per tile of rows rather
  // than once per row. GPUs keep one: not measured there, and a float LM head
  // in another shape may round differently on NVIDIA's compiler, which would
  // break the bits of prompts prefilled together against each alone.
  const uint32_t tokens = decode_ || cpu ? (row_set ? logit_rows_ : n_) : 1;
  // The matrix-vector kernel's shape (engine/product_plan.hpp). A verify
  // pass's rows sum as a one-token step does, bit for bit, for the text to be
  // the model's own (generation/speculative.hpp).
  const uint32_t slice_cap = c_.layout_.activations[size_t(out)].slices;
  const MatVecPlan mv = plan_matvec(info, c_.tuning_, vec && c_.int_dot_,
                                    {.format = w.format, .in_features = K, .out_features = M, .tokens = tokens,
                                     .one_token_order = verify_, .pair = pair != nullptr, .slice_capacity = slice_cap});
  if (verify_ && mv.splits > 1 && is_qkv(out))  // attn_prep, a dispatch of its own there, takes them whole
    throw Error("unicorn: this engine's decode step splits the q, k and v products over K (" + std::to_string(K) +
                " inputs, Tuning::matvec_dot_split_in_features " +
                std::to_string(c_.tuning_.matvec_dot_split_in_features) +
                "), which its verify pass cannot do the same way: raise that tuning, or draft nothing");
  // Prefill: tensor units when the device has them and they are enabled
  // (gpu::Context decides), else fp32 tiles.
  const bool coop = !vec && c_.tensor_units_;
  const uint32_t rows_n = row_set ? logit_rows_ : n_;
  // Outputs whose layout holds several slices (Act::Proj, Act::Up) take
  // partial sums, which their consumers (add_norm, geglu) add: the output
  // projections may split K where their tiles alone would leave much of the
  // GPU idle, and the up projection where it fills the last wave it shares
  // with the gate's (same tile).
  const uint32_t max_splits = coop ? kernels::coop_max_splits(K, slice_cap, c_.tuning_.coop_split_steps) : 1;
  kernels::CoopTile tile = c_.tuning_.coop_tile(rows_n, shared_waves_ ? shared_waves_ : M, is_fp16(in),
                                                out == Act::Up ? 1 : max_splits);
  if (out == Act::Up)
    tile.splits = kernels::coop_splits_after(tile, rows_n, M, in_flight_, c_.tuning_.coop_wave,
                                             max_splits);
  slices_[size_t(out)] = vec ? mv.splits : tile.splits;  // 1 unless split above
  const auto& k =
      vec ? c_.kernel(mv.int_dot ? kernels::matvec_dot(w.format) : kernels::matvec(w.format),
                      kernels::MatVec{.in_features = K, .out_features = M, .row_set = row_set,
                                      .rows_per_group = mv.rows, .lanes_per_group = mv.lanes, .unroll = mv.unroll,
                                      .pair = pair ? 1u : 0u, .tokens = mv.tokens, .tile = mv.tile,
                                      .splits = mv.splits, .slice = slice_elems(out), .signal = signal_ ? 1u : 0u})
      : coop ? c_.kernel(kernels::matmul_coop(w.format),
                         kernels::linear_coop(K, M, row_set, info.coop_m, info.coop_n,
                                              info.coop_k, info.subgroup_size, tile, slice_elems(out)))
             : c_.kernel(kernels::matmul(w.format),
                         kernels::Linear{.in_features = K, .out_features = M, .row_set = row_set});
  const uint32_t tile_rows = coop ? tile.rows : 64, tile_tokens = coop ? tile.tokens : 64;
  const auto parts = c_.layout_.parts_of(w);
  for (size_t i = 0; i < parts.size(); ++i) {
    const TensorPart& p = parts[i];
    const auto wp = c_.part(w, p);
    const gpu::PushWords push{uint32_t(p.row_begin), uint32_t(p.rows), signal_.value_or(0)};
    if (vec) {
      const auto second = pair ? c_.part(*pair, c_.layout_.parts_of(*pair)[i]) : wp;
      const vk::DescriptorBufferInfo b[] = {wp,           lane_.act(in), lane_.act(out),
                                            lane_.step(), second,        lane_.counters[0].whole()};
      const uint32_t g = groups(uint32_t(p.rows), mv.rows_per_workgroup());
      const uint32_t gx = std::min<uint32_t>(g, 65535);
      const std::array<uint32_t, 3> grid{gx, groups(g, gx), mv.splits > 1 ? mv.splits : groups(rows_n, tokens)};
      if (signal_) signalled_groups_ += grid[0] * grid[1] * grid[2];
      add(k, b, push, grid, barrier && i + 1 == parts.size());
    } else {
      const vk::DescriptorBufferInfo b[] = {wp, lane_.act(in), lane_.act(out), lane_.step()};
      add(k, b, push, {groups(uint32_t(p.rows), tile_rows), groups(rows_n, tile_tokens), tile.splits},
          barrier && i + 1 == parts.size());
    }
  }
}

UNICORN_DECL uint32_t EngineCore::Recorder::qkv_slices_cap() const {
  const bool decode_lane = c_.decode_lane_ && &lane_ == &*c_.decode_lane_;
  return decode_lane && prep_in_attention() ? detail::kDecodeQkvSlices : 1;
}

UNICORN_DECL void EngineCore::Recorder::linear_splitk(Act in, Act out, const TensorSlot& w, uint32_t row_set, bool barrier) {
  const auto& info = c_.ctx_.info();
  const uint32_t K = uint32_t(w.cols), M = uint32_t(w.rows), rows_n = row_set ? logit_rows_ : n_;
  const kernels::SplitKTile tile = c_.tuning_.splitk_tile(splitk_tokens_ ? splitk_tokens_ : rows_n);
  // The output projections split K across workgroups too (add_norm adds
  // the partial sums), and so do q, k and v where attention adds theirs
  // (their rows together, as they share waves): by the matrices' shapes
  // only, the same on every tile.
  const bool qkv = is_qkv(out);
  const uint32_t cap = out == Act::Proj ? c_.layout_.activations[size_t(out)].slices
                       : qkv            ? qkv_slices_cap()
                                        : 1;
  const uint32_t splits = kernels::splitk_splits(K, qkv && shared_waves_ ? shared_waves_ : M, tile, cap,
                                                 kernels::kSplitKGroupsPerMultiprocessor * info.multiprocessors,
                                                 c_.tuning_.splitk_split_steps);
  slices_[size_t(out)] = splits;
  const auto& k = c_.kernel(kernels::matmul_coop_splitk(w.format),
                            kernels::linear_coop_splitk(K, M, row_set, info.coop_m, info.coop_n,
                                                        info.coop_k, info.subgroup_size, tile,
                                                        is_fp16(in), splits, slice_elems(out)));
  const auto parts = c_.layout_.parts_of(w);
  for (size_t i = 0; i < parts.size(); ++i) {
    const TensorPart& p = parts[i];
    const auto wp = c_.part(w, p);
    const vk::DescriptorBufferInfo b[] = {wp, lane_.act(in), lane_.act(out), lane_.step(), wp};
    add(k, b, {uint32_t(p.row_begin), uint32_t(p.rows)},
        {groups(uint32_t(p.rows), tile.rows), groups(rows_n, tile.tokens), splits}, barrier && i + 1 == parts.size());
  }
}

UNICORN_DECL Act EngineCore::Recorder::gate_up_splitk(const TensorSlot& gate, const TensorSlot& up) {
  const auto& info = c_.ctx_.info();
  const uint32_t K = uint32_t(gate.cols), M = uint32_t(gate.rows);
  const kernels::SplitKTile tile = c_.tuning_.splitk_tile(splitk_tokens_ ? splitk_tokens_ : n_);
  const Act in = operand(Act::Xn), out = half_ ? Act::FfnOperand : Act::Gate;  // never in (layout.hpp)
  reads_not_written(in, out);
  const auto& k = c_.kernel(kernels::matmul_coop_splitk(gate.format),
                            kernels::linear_coop_splitk_pair(K, M, info.coop_m, info.coop_n, info.coop_k,
                                                             info.subgroup_size, tile, is_fp16(in), is_fp16(out)));
  const auto gp = c_.layout_.parts_of(gate), upp = c_.layout_.parts_of(up);
  for (size_t i = 0; i < gp.size(); ++i) {
    const vk::DescriptorBufferInfo b[] = {c_.part(gate, gp[i]), lane_.act(in), lane_.act(out), lane_.step(),
                                          c_.part(up, upp[i])};
    add(k, b, {uint32_t(gp[i].row_begin), uint32_t(gp[i].rows)},
        {groups(uint32_t(gp[i].rows), tile.rows / 2), groups(n_, tile.tokens), 1}, i + 1 == gp.size());
  }
  return out;
}

UNICORN_DECL Act EngineCore::Recorder::gate_up(int l) {
  const TensorSlot& gate = c_.layout_.weight(Role::FfnGate, l);
  const TensorSlot& up = c_.layout_.weight(Role::FfnUp, l);
  const auto gp = c_.layout_.parts_of(gate), upp = c_.layout_.parts_of(up);
  bool alike = decode_ && is_block_quantized(gate.format) && gate.format == up.format &&
               gp.size() == upp.size();
  for (size_t i = 0; alike && i < gp.size(); ++i)
    alike = gp[i].row_begin == upp[i].row_begin && gp[i].rows == upp[i].rows;
  if (alike && splitk(0)) return gate_up_splitk(gate, up);
  if (alike) return linear(Act::Xn, Act::Gate, gate, 0, true, &up), Act::Gate;
  linear(operand(Act::Xn), Act::Gate, gate, 0, false);  // gate [n, F]
  linear(operand(Act::Xn), Act::Up, up);                 // up   [n, F]
  geglu();  // gate = gelu(gate) * up, or into the fp16 operand
  return operand(Act::Gate);
}

UNICORN_DECL void EngineCore::Recorder::attn_prep(int l, AttentionKind kind) {
  const auto& L = c_.layout_;
  const TensorSlot& kc = L.kv(Role::KCache, l);
  const TensorSlot& vc = L.kv(Role::VCache, l);
  const uint32_t heads_per_group = kernels::attn_prep_heads_per_group(decode_, c_.ctx_.info().subgroup_size);
  const kernels::AttnPrep spec{.heads = m_.heads, .kv_heads = m_.kv_heads, .head_dim = m_.head_dim,
                               .slots = slots_of(kind), .theta = m_.rope_theta(kind), .scale = m_.rope_scale(kind),
                               .eps = m_.rms_eps, .heads_per_group = heads_per_group};
  const auto& k = c_.kernel(kernels::attn_prep(kc.format), spec);
  if (slices_[size_t(Act::Q)] != 1 || slices_[size_t(Act::K)] != 1 || slices_[size_t(Act::V)] != 1)
    throw std::logic_error("unicorn: attn_prep takes q, k and v whole, not in partial sums");
  const TensorSlot& qn = L.weight(Role::AttnQNorm, l);
  const TensorSlot& kn = L.weight(Role::AttnKNorm, l);
  const auto kp = L.parts_of(kc), vp = L.parts_of(vc);
  for (size_t i = 0; i < kp.size(); ++i) {
    const vk::DescriptorBufferInfo b[] = {
        lane_.act(Act::Q), lane_.act(Act::K), lane_.act(Act::V), c_.part(kc, kp[i]), c_.part(vc, vp[i]),
        lane_.step(), c_.part(qn, L.parts_of(qn)[0]), c_.part(kn, L.parts_of(kn)[0])};
    const uint32_t q_groups = kp[i].row_begin == 0 ? m_.heads : 0;
    add(k, b, {uint32_t(kp[i].row_begin), uint32_t(kp[i].rows)},
        {n_, kernels::attn_prep_groups(q_groups + m_.kv_heads, heads_per_group), 1});
  }
}

UNICORN_DECL void EngineCore::Recorder::attention(int l, AttentionKind kind, std::optional<Wait> wait) {
  const TensorSlot& kc = c_.layout_.kv(Role::KCache, l);
  const TensorSlot& vc = c_.layout_.kv(Role::VCache, l);
  const uint32_t window = kind == AttentionKind::Local ? m_.sliding_window : 0u;
  const float scale = 1.0f / std::sqrt(m_.query_pre_attn_scalar);
  const auto& info = c_.ctx_.info();
  const bool chunk = !decode_ && n_ > 1;  // prefill: one stream, consecutive positions
  const uint32_t query_rows = n_ * (m_.heads / m_.kv_heads);
  const uint32_t query_heads = kernels::attention_query_heads(m_.heads, m_.kv_heads, n_, c_.tuning_.attention_query_heads);
  // q, k and v as their products left them: one sum, or one partial sum per
  // range of K (linear_splitk), the same count for the three.
  // A verify pass attends as the decode step does: its own key last where the
  // step preps in attention (a row's bits are the step's).
  const uint32_t own_last = verify_ && c_.tuning_.decode_attention_prep != 0 ? 1u : 0u;
  const uint32_t qkv_slices = slices_[size_t(Act::Q)];
  if (slices_[size_t(Act::K)] != qkv_slices || slices_[size_t(Act::V)] != qkv_slices)
    throw std::logic_error("unicorn: q, k and v split K differently");
  kernels::AttentionTile coop =
      chunk && c_.tensor_units_
          ? kernels::attention_coop_shape(m_.head_dim, info.coop_m, info.coop_n, info.coop_k,
                                          info.subgroup_size, info.max_shared_memory,
                                          c_.tuning_.attention_coop_rows, c_.tuning_.attention_coop_keys)
          : kernels::AttentionTile{};
  const uint64_t coop_groups = coop.rows ? uint64_t(groups(query_rows, coop.rows)) * m_.kv_heads : 0;
  if (coop_groups < kernels::kAttentionCoopGroups) coop = {};
  const bool pairs = kernels::attention_coop_pairs(coop_groups, c_.tuning_.coop_wave);
  const uint32_t rows =
      c_.tuning_.attention_rows.value_or(kernels::attention_tiled_rows(n_, m_.heads));
  const kernels::AttentionTile tile =
      coop.rows ? coop
                : kernels::attention_tiled_shape(m_.head_dim, uint32_t(format_info(kc.format).block_bytes),
                                                 info.max_shared_memory, rows);
  const bool tiled = chunk && tile.rows;  // attention_coop or attention_tiled: tiles of query rows
  const auto& k =
      coop.rows ? c_.kernel(kernels::attention_coop(kc.format),
                            kernels::AttentionCoop{.heads = m_.heads, .kv_heads = m_.kv_heads,
                                                   .head_dim = m_.head_dim, .slots = slots_of(kind), .window = window,
                                                   .scale = scale, .rows = coop.rows, .keys = coop.keys,
                                                   .half_out = half_, .tm = info.coop_m, .tn = info.coop_n,
                                                   .tk = info.coop_k, .subgroup_size = info.subgroup_size,
                                                   .threads = kernels::attention_coop_threads(coop, info.coop_m, info.subgroup_size),
                                                   .pairs = uint32_t(pairs), .split = coop.split})
      : tiled ? c_.kernel(kernels::attention_tiled(kc.format),
                          kernels::AttentionTiled{.heads = m_.heads, .kv_heads = m_.kv_heads, .head_dim = m_.head_dim,
                                                  .slots = slots_of(kind), .window = window, .scale = scale,
                                                  .rows = tile.rows, .keys = tile.keys, .half_out = half_})
              : c_.kernel(kernels::attention(kc.format),
                          kernels::Attention{.heads = m_.heads, .kv_heads = m_.kv_heads, .head_dim = m_.head_dim,
                                             .slots = slots_of(kind), .window = window, .scale = scale,
                                             .subgroup_size = info.subgroup_size, .half_out = half_,
                                             .threads = kernels::attention_threads(info.subgroup_size, m_.head_dim, info.cpu()),
                                             .prep = prep_in_attention(), .theta = m_.rope_theta(kind),
                                             .rope_scale = m_.rope_scale(kind), .eps = m_.rms_eps,
                                             .wait = wait ? 1u : 0u, .query_heads = query_heads,
                                             .qkv_slices = qkv_slices, .q_slice = slice_elems(Act::Q),
                                             .kv_slice = slice_elems(Act::K), .own_last = own_last});
  if (wait && (tiled || c_.layout_.parts_of(kc).size() != 1))
    throw std::logic_error("unicorn: a waiting attention is a decode step's, over one cache part");
  if (qkv_slices > 1 && (tiled || coop.rows || wait || !prep_in_attention()))
    throw std::logic_error("unicorn: q, k and v in partial sums need a decode attention that adds them (PREP)");
  // A tile holds tile.rows (token, query head) rows: the segments of a
  // chunk of several streams start at multiples of its tokens.
  if (tiled) segment_tokens_ = std::lcm(segment_tokens_, std::lcm(tile.rows, m_.heads / m_.kv_heads) /
                                                             (m_.heads / m_.kv_heads));
  const auto kp = c_.layout_.parts_of(kc), vp = c_.layout_.parts_of(vc);
  const TensorSlot& qn = c_.layout_.weight(Role::AttnQNorm, l);
  const TensorSlot& kn = c_.layout_.weight(Role::AttnKNorm, l);
  for (size_t i = 0; i < kp.size(); ++i) {  // each token's heads whose cache rows are in the part
    const vk::DescriptorBufferInfo b[] = {lane_.act(Act::Q), c_.part(kc, kp[i]), c_.part(vc, vp[i]),
                                          lane_.act(operand(Act::Attn)), lane_.step(),
                                          // attention's PREP (the tiles bind only the first five)
                                          lane_.act(Act::K), lane_.act(Act::V),
                                          c_.part(qn, c_.layout_.parts_of(qn)[0]),
                                          c_.part(kn, c_.layout_.parts_of(kn)[0]), lane_.counters[0].whole()};
    const uint32_t part_rows = uint32_t(kp[i].rows);  // (stream, kv head) cache rows
    const uint32_t row_tiles = tiled ? groups(query_rows, tile.rows) : 0;  // no tile: attention.comp
    add(k, std::span(b).first(k.bindings()),
        {uint32_t(kp[i].row_begin), part_rows, wait ? wait->counter : 0u, wait ? wait->count : 0u},
        tiled ? std::array{coop.rows && pairs ? groups(row_tiles, 2) : row_tiles, part_rows, 1u}
              : std::array{n_, m_.heads / query_heads, 1u});
  }
}

UNICORN_DECL void EngineCore::Recorder::geglu() {
  const auto& k = c_.kernel(kernels::kGeglu,
                            kernels::Geglu{.ffn = m_.ffn, .half_out = half_, .up_slices = slices_[size_t(Act::Up)],
                                           .slice = slice_elems(Act::Up)});
  const vk::DescriptorBufferInfo b[] = {lane_.act(Act::Gate), lane_.act(Act::Up), lane_.step(),
                                        lane_.act(operand(Act::Gate))};
  add(k, b, {}, {groups(kernels::geglu_threads(m_.ffn), 64), n_, 1});
}

UNICORN_DECL void EngineCore::Recorder::sample() {
  const uint32_t parts = kernels::logit_parts(m_.vocab);
  const auto& km = c_.kernel(kernels::kLogitsMax,
                             kernels::LogitsMax{.vocab = m_.vocab, .parts = parts});
  const vk::DescriptorBufferInfo bm[] = {lane_.act(Act::Logits), lane_.partials[0].whole(),
                                         lane_.sampler_rows().whole(), lane_.step(), lane_.masks().whole()};
  add(km, bm, {}, {parts, logit_rows_, 1});
  const auto& k = c_.kernel(kernels::kSample, kernels::Sample{.vocab = m_.vocab, .parts = parts});
  const vk::DescriptorBufferInfo b[] = {lane_.act(Act::Logits), lane_.chosen().whole(),
                                        lane_.sampler_rows().whole(), lane_.step(), lane_.partials[0].whole()};
  add(k, b, {}, {logit_rows_, 1, 1});
  // Rows whose sampling asks for log-probabilities; the others exit at once.
  const auto& kl = c_.kernel(kernels::kLogprobs, kernels::Logprobs{.vocab = m_.vocab, .parts = parts});
  const vk::DescriptorBufferInfo bl[] = {lane_.act(Act::Logits), lane_.partials[0].whole(),
                                         lane_.sampler_rows().whole(), lane_.step(), lane_.chosen().whole(),
                                         lane_.logprob_rows().whole()};
  add(kl, bl, {}, {logit_rows_, 1, 1});
}

UNICORN_DECL uint32_t EngineCore::Recorder::slots_of(AttentionKind kind) const {
  return kind == AttentionKind::Global ? c_.layout_.global_kv_slots : c_.layout_.local_kv_slots;
}

UNICORN_DECL void EngineCore::Recorder::add(const gpu::Kernel& k, std::span<const vk::DescriptorBufferInfo> b, gpu::PushWords push, std::array<uint32_t, 3> g, bool barrier) {
  d_.push_back({&k, c_.sets_.make(k, b), push, {g[0], g[1], g[2]}, barrier});
  in_flight_ = barrier ? 0 : in_flight_ + uint64_t(g[0]) * g[1] * g[2];
}

UNICORN_DECL bool EngineCore::Recorder::half_operands() const {
  const bool fits = kernels::x_half_fits(m_.hidden) && kernels::x_half_fits(m_.q_dim()) &&
                    kernels::x_half_fits(m_.ffn);
  return (!decode_ || splitk_) && c_.tensor_units_ && fits;
}

}  // namespace unicorn::detail
