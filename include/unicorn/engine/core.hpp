// unicorn/engine/core.hpp — the run-time half of an engine: device buffers from
// the static layout, the recorded forward pass, and the per-step protocol.
//
// Engine<Deployment> (engine.hpp) is a thin typed shell over this class, which
// is not a template: one copy of this code serves every deployment (STYLE.md,
// rule 1), and all sizes arrive as values taken from the constexpr layout.
//
// Command buffers are recorded once, at start-up:
//   prefill: a chunk of up to `prefill_chunk` tokens of one or several streams
//            (each stream's run a segment of its own), matrix-matrix kernels;
//   decode:  one token, matrix-vector kernels, then the sampler (greedy by default);
//   batch:   with DeploymentConfig::streams > 1, one token of each of up to
//            `streams` streams: the same matrix-vector kernels, each weight block
//            read once for all the step's tokens, and one logit row per stream.
// Every stream has its own KV cache rows (layout.hpp), as many positions as the
// context chosen at creation (EngineOptions::context, at most the compiled
// max_context: the run-time layout is the compiled one with that context), the tokens they hold
// (its position is their count), its sampling parameters and its draw counter. Before each submission the host writes a
// StepHeader and one StepRow per token (id, position, stream) into a small
// host-visible buffer; nothing is re-recorded. The calls without a stream
// argument work on stream 0.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <unicorn/spirv.hpp>
#include <vector>

#include "unicorn/deployment.hpp"
#include "unicorn/engine/kernels.hpp"
#include "unicorn/engine/options.hpp"
#include "unicorn/error.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/kernel.hpp"
#include "unicorn/gpu/memory.hpp"
#include "unicorn/gpu/staging.hpp"
#include "unicorn/gpu/timing.hpp"
#include "unicorn/layout/layout.hpp"
#include "unicorn/placement/budget.hpp"
#include "unicorn/sampling.hpp"

namespace unicorn {

// One stream's token in a batched decode step.
struct StreamToken {
  uint32_t stream;
  int32_t token;
};

// One stream's run of prompt tokens in a prefill pass that may hold several
// streams' (EngineCore::prefill(std::span<const PromptChunk>)).
struct PromptChunk {
  uint32_t stream;
  std::span<const int32_t> tokens;  // fed from the stream's position on
  bool ends_prompt = false;         // choose the stream's next token from the last one's logits
};

// Device memory an engine allocated, in bytes (whole Vulkan allocations, so
// alignment included): per placement pool, and the host-visible buffers of
// the per-step protocol.
struct DeviceMemory {
  struct PoolBytes {
    uint64_t weights = 0, kv_cache = 0, activations = 0;  // activations: with the sampler's partials
    uint64_t total() const { return weights + kv_cache + activations; }
  };
  std::array<PoolBytes, kPoolCount> pools{};
  uint64_t host_visible = 0;  // step rows, chosen tokens, sampler state, logits read-back
  const PoolBytes& operator[](Pool p) const { return pools[size_t(p)]; }
  uint64_t kv_cache() const {
    uint64_t n = 0;
    for (const PoolBytes& p : pools) n += p.kv_cache;
    return n;
  }
  uint64_t device() const {  // every pool
    uint64_t n = 0;
    for (const PoolBytes& p : pools) n += p.total();
    return n;
  }
};

}  // namespace unicorn

namespace unicorn::detail {

constexpr bool coop_tiles_fit(std::span<const kernels::CoopTile> tiles) {
  return std::ranges::all_of(tiles, [](const kernels::CoopTile& t) { return t.shared_bytes() <= gpu::kCoopSharedBytes; });
}
static_assert(coop_tiles_fit(kernels::kCoopTiles),
              "unicorn: a kernels::kCoopTiles tile needs more shared memory than gpu::kCoopSharedBytes, "
              "which gpu::Context requires of a device before it runs matmul_coop");
static_assert(std::ranges::all_of(kernels::kSplitKTiles,
                                  [](const kernels::SplitKTile& t) {
                                    return t.shared_bytes() <= gpu::kCoopSharedBytes && t.partials_fit();
                                  }),
              "unicorn: a kernels::kSplitKTiles tile needs more shared memory than gpu::kCoopSharedBytes "
              "(which gpu::Context requires of a device before it runs matmul_coop_splitk), or its "
              "partial sums do not fit over its staging tiles");

// Mirrors shaders/include/step.glsl: the header, then one StepRow per token.
struct StepHeader {
  uint32_t n_tokens;
  uint32_t logit_count;
};
struct StepRow {
  uint32_t token;
  uint32_t pos;
  uint32_t stream;
  uint32_t logit_source;  // in rows i < logit_count: the token row logit row i takes
};

// Mirrors SamplerRow in shaders/include/sampler.glsl: one per logit row, each
// followed by its history (kMaxPenaltyHistory distinct ids, then as many counts).
struct SamplerState {
  float temperature;
  uint32_t top_k;
  float top_p;
  float min_p;
  float repeat_penalty;
  uint32_t seed;
  uint32_t counter;
  uint32_t history_len;
  uint32_t key;  // which random stream the draw takes (the engine writes 0: see write_sampler)
  float presence_penalty;
  float frequency_penalty;
};
inline constexpr uint32_t kMaxPenaltyHistory = 1024;
inline constexpr uint64_t kSamplerRowBytes = sizeof(SamplerState) + 8ull * kMaxPenaltyHistory;

// What convert() reads: float source values, or (GgmlBlocks) ggml blocks of
// the target format itself, which only move into the device layout.
enum class SourceType : uint32_t { F32 = 0, F16 = 1, BF16 = 2, GgmlBlocks = 3 };

class EngineCore {
 public:
  // `compiled`: the deployment's constexpr layout. The engine runs on its own
  // layout, the same with options.context positions of KV cache per stream.
  EngineCore(gpu::Context& ctx, const DeploymentConfig& config, LayoutView compiled,
             const EngineOptions& options = {})
      : ctx_(ctx),
        cfg_(config),
        kv_context_(checked_context(config, options.context)),
        run_layout_(config.with_context(kv_context_)),
        layout_(run_layout_.view()),
        kernels_(ctx, options.pipeline_cache),
        sets_(ctx),
        stream_(ctx),
        tuning_(options.tuning) {
    check_against_compiled(compiled);
    check_device_limits();
    check_pools_fit();
    const LayoutView& layout = layout_;
    allocate_by_pool(layout.weight_slab_bytes, layout.weight_slab_pools, weight_sets_, weight_slabs_, "weights");
    allocate_by_pool(layout.kv_slab_bytes, layout.kv_slab_pools, kv_sets_, kv_slabs_, "the KV cache");
    std::vector<uint64_t> act_bytes;
    for (const auto& a : layout.activations) act_bytes.push_back(a.bytes);
    acts_ = gpu::BufferSet(ctx, act_bytes, gpu::memory_kind_of(layout.activation_pool), "activations");
    if (cfg_.streams == 0 || cfg_.streams > std::min(cfg_.prefill_chunk, layout.logit_rows))
      throw Error("engine: " + std::to_string(cfg_.streams) + " streams; a step has rows for 1 to " +
                  std::to_string(std::min(cfg_.prefill_chunk, layout.logit_rows)));
    const uint64_t step_bytes =
        sizeof(StepHeader) + sizeof(StepRow) * std::max(cfg_.prefill_chunk, cfg_.streams);
    const uint64_t sampler_bytes = kSamplerRowBytes * layout.logit_rows;
    const uint64_t host_sizes[] = {step_bytes, 4ull * layout.logit_rows, sampler_bytes};
    host_ = gpu::BufferSet(ctx, host_sizes, gpu::MemoryKind::HostVisible, "host buffers");
    const uint64_t partial_bytes[] = {8ull * kernels::kLogitParts * layout.logit_rows};
    partial_set_ = gpu::BufferSet(ctx, partial_bytes, gpu::MemoryKind::DeviceLocal, "sampler partials");
    partials_ = partial_set_[0];
    prefill_ = record_forward(cfg_.prefill_chunk, 1, PassKind::Prefill);
    decode_ = record_forward(1, 1, PassKind::Decode);
    if (cfg_.streams > 1) {
      // With tensor units, steps of many streams run their products there and
      // steps of a few keep the matrix-vector kernels (batch_pass()).
      const bool tensor_units = ctx.info().coopmat && kernels::kSplitKFromStreams <= cfg_.streams;
      batch_ = record_forward(cfg_.streams, cfg_.streams, tensor_units ? PassKind::DecodeSplitK : PassKind::Decode);
      // Steps of up to kSplitKSmallTokens streams on the tile of that many
      // tokens, in a pass of that many rows (no workgroups for rows it never
      // has). A row's sums are the same on either tile (the same k order; the
      // model test holds them bit for bit).
      if (tensor_units && cfg_.streams > kernels::kSplitKSmallTokens)
        batch_small_ = record_forward(kernels::kSplitKSmallTokens, kernels::kSplitKSmallTokens,
                                      PassKind::DecodeSplitK, kernels::kSplitKSmallTokens);
    }
    kernels_.save();  // the next start reads these pipelines from disk
  }

  const DeploymentConfig& config() const { return cfg_; }
  // The on-disk pipeline cache at start-up: read, ignored (and why), written.
  const gpu::PipelineCache::Stats& pipeline_cache() const { return kernels_.disk_stats(); }
  // KV cache positions per stream: the context chosen at creation
  // (EngineOptions::context), at most the compiled max_context.
  uint32_t context_size() const { return kv_context_; }
  // Lowers the limit prompts are checked against below context_size() (the
  // memory stays allocated; to allocate less, create the engine with a
  // smaller EngineOptions::context).
  void set_context_limit(uint32_t tokens) {
    if (tokens == 0 || tokens > kv_context_)
      throw Error("context: " + std::to_string(tokens) + " tokens asked; this engine's KV cache holds 1 to " +
                  std::to_string(kv_context_));
    context_limit_ = tokens;
  }
  uint32_t context_limit() const { return context_limit_; }
  // The run-time layout: the compiled one with context_size() KV positions.
  const LayoutView& layout() const { return layout_; }
  // What this engine allocated on the device, per pool.
  DeviceMemory device_memory() const {
    DeviceMemory m;
    for (Pool p : kPools) {
      m.pools[size_t(p)].weights = weight_sets_[size_t(p)].bytes();
      m.pools[size_t(p)].kv_cache = kv_sets_[size_t(p)].bytes();
    }
    m.pools[size_t(layout_.activation_pool)].activations += acts_.bytes();
    m.pools[size_t(Pool::Vram)].activations += partial_set_.bytes();  // DeviceLocal
    m.host_visible = host_.bytes() + (logits_readback_ ? logits_readback_->bytes() : 0);
    return m;
  }
  gpu::Context& context() const { return ctx_; }
  uint32_t streams() const { return cfg_.streams; }
  // Which recorded pass a batched step takes. By its size (the default, the
  // fastest): on a device with tensor units, steps of kSplitKFromStreams
  // streams or more run their products there in fp16 (matmul_coop_splitk)
  // and smaller steps in fp32 (matvec), so a stream's logits depend, in their
  // last bits, on how many streams share its step. Fixed: every step, of any
  // size, takes the pass compiled for all the streams, so each stream's
  // results are the same whatever shares its steps (the server's batch
  // invariance), at the cost of small steps on tensor-unit devices.
  enum class BatchPasses { BySize, Fixed };
  void set_batch_passes(BatchPasses p) { batch_passes_ = p; }
  BatchPasses batch_passes() const { return batch_passes_; }
  // Whether steps of different sizes run different kernels (BySize on a
  // device with tensor units).
  bool batch_passes_differ() const { return batch_ && batch_->splitk; }

  // Which kernel the products of a batched step of n streams run on.
  std::string batch_linear_path(uint32_t n) const {
    if (!batch_ || (n <= 1 && batch_passes_ == BatchPasses::BySize)) return "matvec: one token";
    const Graph& g = batch_pass(n);
    if (!g.splitk) return "matvec: every token row per workgroup";
    return &g == &*batch_ ? "matmul_coop_splitk: fp16 cooperative matrices, split K"
                          : "matmul_coop_splitk: fp16 cooperative matrices, split K, the " +
                                std::to_string(kernels::kSplitKSmallTokens) + "-token tile";
  }
  uint32_t position(uint32_t stream = 0) const { return uint32_t(stream_state(stream).tokens.size()); }
  // The tokens a stream's KV cache holds, position by position.
  std::span<const int32_t> tokens(uint32_t stream = 0) const { return stream_state(stream).tokens; }
  // Forget every stream's sequence: the next tokens start at position 0, and
  // each sampler's draws and penalty history start over.
  void reset() {
    for (uint32_t s = 0; s < cfg_.streams; ++s) reset(s);
  }
  // Forget one stream's sequence; the others keep theirs. Its sampling
  // parameters stay.
  void reset(uint32_t stream) {
    StreamState& s = stream_state(stream);
    s.tokens.clear();
    s.counter = 0;
    s.ring_from = 0;
  }

  // Whether a stream can go back to position `pos`, keeping the tokens before
  // it: local layers keep a ring of the last window + prefill_chunk positions
  // written (layout.hpp), so the keys a token at `pos` attends to, back to
  // window - 1 positions before it, must not have been overwritten since they
  // were written — by this stream's tokens past `pos`, or by tokens of an
  // earlier sequence that went further before a rewind (StreamState::ring_from).
  bool can_rewind(uint32_t stream, uint32_t pos) const {
    const StreamState& s = stream_state(stream);
    if (pos == 0) return true;
    if (pos > s.tokens.size()) return false;
    if (layout_.local_kv_slots >= kv_context_) return true;  // no ring: nothing is overwritten
    const uint32_t window = cfg_.model.sliding_window;
    const uint32_t oldest_seen = pos >= window ? pos - window + 1 : 0;  // the key furthest back a token at pos sees
    return oldest_seen >= s.ring_from;
  }
  // Goes back to position `pos`: the stream keeps its first `pos` tokens (and
  // their KV cache) and the next token fed lands at `pos`. A prompt that
  // shares a prefix with what the stream holds then prefills only the rest.
  void rewind(uint32_t stream, uint32_t pos) {
    if (!can_rewind(stream, pos))
      throw Error("rewind: stream " + std::to_string(stream) + " cannot go back from position " +
                  std::to_string(position(stream)) + " to " + std::to_string(pos) +
                  " (its sliding-window layers no longer hold the keys before it)");
    StreamState& s = stream_state(stream);
    s.tokens.resize(pos);
    s.ring_from = std::min(s.ring_from, pos);  // nothing from pos on is this sequence's any more
  }

  // How prefill() and decode() choose tokens from now on (default: greedy), for
  // every stream; each stream keeps its own draw counter and penalty history.
  void set_sampling(const SamplingParams& p) {
    for (uint32_t s = 0; s < cfg_.streams; ++s) set_sampling(s, p);
  }
  // The same for one stream; its draws start over (the counter goes back to 0),
  // so a seed gives the same tokens from here whichever stream runs them.
  void set_sampling(uint32_t stream, const SamplingParams& p) {
    if (!sampling_params_valid(p, kMaxPenaltyHistory)) throw Error(sampling_params_rule(kMaxPenaltyHistory));
    StreamState& s = stream_state(stream);
    s.sampling = p;
    s.counter = 0;
  }
  const SamplingParams& sampling(uint32_t stream = 0) const { return stream_state(stream).sampling; }

  // Which recorded pass teacher forcing goes through.
  enum class Pass { Prefill, Decode };

  // Teacher forcing: runs `tokens` from the current position and returns the
  // logits of every one of them, row-major [tokens.size(), vocab]. With
  // Pass::Decode the tokens go one at a time through the decode pass, so tests
  // check both recorded passes against the same reference.
  std::vector<float> forward_logits(std::span<const int32_t> tokens, Pass pass = Pass::Prefill) {
    check_tokens(0, tokens);
    const RawLogits raw(*this);
    const uint32_t V = cfg_.model.vocab;
    std::vector<float> out(tokens.size() * size_t(V));
    const uint32_t chunk = pass == Pass::Decode ? 1 : std::min(cfg_.prefill_chunk, layout_.logit_rows);
    if (!prefill_all_logits_) prefill_all_logits_ = record_forward(cfg_.prefill_chunk, chunk, PassKind::Prefill);
    for (size_t done = 0; done < tokens.size(); done += chunk) {
      const uint32_t n = uint32_t(std::min<size_t>(chunk, tokens.size() - done));
      if (pass == Pass::Decode) decode(tokens[done]);
      else run_chunk(*prefill_all_logits_, 0, tokens.subspan(done, n));
      read_logits(n, out.data() + done * V);
    }
    return out;
  }

  // Teacher forcing through the batched pass: one step of `batch` (one token
  // each of distinct streams), returning its raw logits, row i for batch[i]:
  // [batch.size(), vocab]. Tests hold them against single-stream decode.
  std::vector<float> forward_logits(std::span<const StreamToken> batch) {
    const RawLogits raw(*this);
    decode(batch);
    std::vector<float> out(batch.size() * size_t(cfg_.model.vocab));
    read_logits(uint32_t(batch.size()), out.data());
    return out;
  }

  // Teacher forcing through a prefill pass of several streams' chunks: the raw
  // logits of each chunk that ends a prompt, in order, [such chunks, vocab].
  // Tests hold them against each chunk prefilled alone.
  std::vector<float> forward_logits(std::span<const PromptChunk> chunks) {
    const RawLogits raw(*this);
    prefill(chunks);
    const auto ends = uint32_t(std::ranges::count_if(chunks, [](const PromptChunk& c) { return c.ends_prompt; }));
    std::vector<float> out(size_t(ends) * cfg_.model.vocab);
    read_logits(ends, out.data());
    return out;
  }

  // Runs a prompt (in chunks) from the stream's position and returns the
  // stream's next token (see set_sampling).
  int32_t prefill(std::span<const int32_t> tokens) { return prefill(0, tokens); }
  int32_t prefill(uint32_t stream, std::span<const int32_t> tokens) {
    check_tokens(stream, tokens);
    if (tokens.empty()) throw Error("prefill: the prompt is empty");
    const size_t last = (tokens.size() - 1) / cfg_.prefill_chunk * cfg_.prefill_chunk;
    feed(stream, tokens.first(last));
    const PromptChunk chunk{stream, tokens.subspan(last), true};
    return prefill(std::span(&chunk, 1))[0];
  }
  // Runs tokens (in chunks) from the stream's position into its KV cache and
  // chooses no token: the part of a prompt before its last chunk.
  void feed(uint32_t stream, std::span<const int32_t> tokens) {
    check_tokens(stream, tokens);
    for (size_t done = 0; done < tokens.size(); done += cfg_.prefill_chunk) {
      const PromptChunk chunk{stream, tokens.subspan(done, std::min<size_t>(cfg_.prefill_chunk, tokens.size() - done))};
      prefill(std::span(&chunk, 1));
    }
  }

  // Several streams' prompt chunks in one prefill pass, every weight read once
  // for all of them (a server's new requests): distinct streams, each chunk
  // fed from its stream's position; together at most prefill_chunk rows, each
  // chunk after the first starting at a multiple of prefill_alignment().
  // Returns, per chunk, the stream's next token where it ends a prompt, else
  // -1. Every row's products, norms and attention are its own, so a chunk's
  // results are bit for bit those of the same chunk prefilled alone.
  std::vector<int32_t> prefill(std::span<const PromptChunk> chunks) {
    if (chunks.empty()) throw Error("prefill: no prompt chunks");
    uint32_t rows = 0, ends = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const PromptChunk& c = chunks[i];
      check_tokens(c.stream, c.tokens);
      if (c.tokens.empty()) throw Error("prefill: stream " + std::to_string(c.stream) + "'s chunk is empty");
      for (size_t j = 0; j < i; ++j)
        if (chunks[j].stream == c.stream)
          throw Error("prefill: stream " + std::to_string(c.stream) + " appears twice in one pass");
      rows = prefill_segment_start(rows) + uint32_t(c.tokens.size());
      ends += c.ends_prompt;
    }
    if (rows > cfg_.prefill_chunk)
      throw Error("prefill: the chunks take " + std::to_string(rows) + " rows (each starting at a multiple of " +
                  std::to_string(prefill_alignment()) + "); a pass holds " + std::to_string(cfg_.prefill_chunk));
    if (ends > std::min(cfg_.streams, layout_.logit_rows))
      throw Error("prefill: " + std::to_string(ends) + " prompts end in one pass; at most " +
                  std::to_string(std::min(cfg_.streams, layout_.logit_rows)));
    if (ends > 1 && !prefill_many_logits_)
      prefill_many_logits_ = record_forward(cfg_.prefill_chunk, std::min(cfg_.streams, layout_.logit_rows),
                                            PassKind::Prefill);
    const Graph& graph = ends > 1 ? *prefill_many_logits_ : *prefill_;
    // Each chunk is a segment of rows; rows between segments repeat the
    // previous segment's last token (twins: the same values written to the
    // same cache slots), so no attention tile holds two streams' rows.
    std::vector<StepRow> step;
    std::vector<uint32_t> logit_streams;
    std::vector<size_t> before;  // each stream's tokens, for a failed pass
    for (const PromptChunk& c : chunks) {
      while (step.size() < prefill_segment_start(uint32_t(step.size()))) step.push_back(step.back());
      StreamState& s = streams_[c.stream];
      const uint32_t pos = uint32_t(s.tokens.size());
      for (size_t t = 0; t < c.tokens.size(); ++t)
        step.push_back({uint32_t(c.tokens[t]), pos + uint32_t(t), c.stream, 0});
      before.push_back(s.tokens.size());
      s.tokens.insert(s.tokens.end(), c.tokens.begin(), c.tokens.end());
      note_written(s);
      if (c.ends_prompt) {
        step[logit_streams.size()].logit_source = uint32_t(step.size() - 1);
        logit_streams.push_back(c.stream);
      }
    }
    write_step(step, uint32_t(logit_streams.size()));
    for (size_t j = 0; j < logit_streams.size(); ++j) write_sampler(uint32_t(j), logit_streams[j]);
    try {
      stream_.submit_and_wait(*graph.commands);
    } catch (...) {
      for (size_t i = 0; i < chunks.size(); ++i) streams_[chunks[i].stream].tokens.resize(before[i]);
      throw;
    }
    std::vector<int32_t> next(chunks.size(), -1);
    for (size_t i = 0, j = 0; i < chunks.size(); ++i)
      if (chunks[i].ends_prompt) next[i] = chosen_token(uint32_t(j++));
    return next;
  }
  // Tokens at whose multiples each chunk of a several-stream prefill pass
  // starts: the prefill attention tile's tokens, so that a tile holds one
  // stream's rows.
  uint32_t prefill_alignment() const { return prefill_->segment_tokens; }
  // Where a chunk after `rows` rows of a pass starts.
  uint32_t prefill_segment_start(uint32_t rows) const {
    const uint32_t a = prefill_alignment();
    return (rows + a - 1) / a * a;
  }

  // One decode step of stream 0: feeds `token`, returns the next token.
  int32_t decode(int32_t token) {
    const int32_t one[] = {token};
    check_tokens(0, one);
    const StreamToken row[] = {{0, token}};
    write_step(row);
    run(*decode_, row);
    return chosen_token(0);
  }

  // One batched decode step: feeds each listed stream its token (streams
  // distinct, any subset of the compiled ones, in any order) and returns their
  // next tokens, in the same order. Every weight is read once for the whole
  // step; each stream's result is the one decode() would give it alone.
  std::vector<int32_t> decode(std::span<const StreamToken> batch) {
    check_batch(batch);
    write_step(batch);
    run(batch_pass(uint32_t(batch.size())), batch);
    std::vector<int32_t> next(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) next[i] = chosen_token(uint32_t(i));
    return next;
  }

  // Device time per kernel of one pass, from timestamp queries: the decode pass
  // for one token, else the prefill pass. The sequence position is unchanged.
  // Timestamps between dispatches serialise them, so the sum exceeds a pass's
  // real time; `dispatches` keeps each one (in order) for a closer look.
  struct KernelTime {
    std::string kernel;
    double ms = 0;
    uint32_t dispatches = 0;
  };
  struct DispatchTime {
    std::string kernel;
    double us = 0;
    std::array<uint32_t, 3> groups;
  };
  struct Profile {
    std::vector<KernelTime> kernels;  // slowest first
    std::vector<DispatchTime> dispatches;
  };
  Profile profile(std::span<const int32_t> tokens) {
    check_tokens(0, tokens);
    const Graph& g = tokens.size() == 1 ? *decode_ : *prefill_;
    return profile(g, [&] { write_step(chunk_rows(0, tokens, uint32_t(tokens.size()) - 1, 1), 1); });
  }
  // The batched pass, for one token of each of streams 0 .. n-1 (at their positions).
  Profile profile_batch(uint32_t n) {
    if (!batch_) throw Error("profile: this engine has one stream and no batched pass");
    std::vector<StreamToken> batch;
    for (uint32_t s = 0; s < n; ++s) batch.push_back({s, 5});
    check_batch(batch);
    return profile(batch_pass(n), [&] { write_step(batch); });
  }

 private:
  struct Graph;
  template <class WriteStep>
  Profile profile(const Graph& g, WriteStep&& write) {
    const uint32_t n = uint32_t(g.dispatches.size());
    gpu::Timestamps ts(ctx_, n + 1);
    write();
    stream_.run_once([&](vk::CommandBuffer cb) {
      ts.reset(cb);
      ts.write(cb, 0);
      for (uint32_t i = 0; i < n; ++i) {
        gpu::record(cb, g.dispatches[i], g.dispatches[i].barrier_after);
        ts.write(cb, i + 1);
      }
    });
    const auto ns = ts.read_ns(n + 1);
    Profile out;
    for (uint32_t i = 0; i < n; ++i) {
      const gpu::Dispatch& d = g.dispatches[i];
      const std::string& name = d.kernel->name();
      const double dt = double(ns[i + 1] - ns[i]);
      out.dispatches.push_back({name, dt * 1e-3, {d.groups[0], d.groups[1], d.groups[2]}});
      auto it = std::find_if(out.kernels.begin(), out.kernels.end(),
                             [&](const auto& k) { return k.kernel == name; });
      if (it == out.kernels.end()) it = out.kernels.insert(out.kernels.end(), KernelTime{name});
      it->ms += dt * 1e-6;
      it->dispatches++;
    }
    std::sort(out.kernels.begin(), out.kernels.end(),
              [](const auto& a, const auto& b) { return a.ms > b.ms; });
    return out;
  }


 public:
  // A weight slab's buffer (mapped when it lives in Gtt): tests check placement with it.
  const gpu::Buffer& weight_slab(size_t slab) const { return weight_slabs_[slab]; }

  // --- loading (called by the loader, engine/loader.hpp) ---

  // Copies a part's rows as a GGUF file stores them into the device. Float
  // formats are copied as they are; block formats go through the GPU into the
  // planar device layout (quants, then scales: see shaders/include/weights.glsl).
  void upload(const TensorSlot& t, size_t part, std::span<const std::byte> bytes) {
    const TensorPart& p = layout_.parts_of(t)[part];
    if (bytes.size() != p.bytes)
      throw Error("load: " + t.gguf_name() + " part " + std::to_string(part) + " has " +
                  std::to_string(bytes.size()) + " bytes, expected " + std::to_string(p.bytes));
    if (is_block_quantized(t.format)) return convert_part(t, p, bytes, SourceType::GgmlBlocks, 0);
    const gpu::Buffer& dst = slab_of(t, p);
    if (dst.mapped) {  // Gtt: host-coherent memory the host writes directly, no staging
      gpu::parallel_copy(dst.mapped + p.offset, bytes.data(), bytes.size());
      return;
    }
    gpu::StagingRing& ring = uploads();
    for (uint64_t done = 0; done < bytes.size(); done += ring.slot_bytes()) {
      const uint64_t n = std::min<uint64_t>(ring.slot_bytes(), bytes.size() - done);
      ring.submit(bytes.subspan(done, n), [&](vk::CommandBuffer cb, uint32_t slot) {
        cb.copyBuffer(ring.buffer(slot).handle, dst.handle, vk::BufferCopy{0, p.offset + done, n});
      });
    }
  }

  // Waits for the uploads still in flight and frees the staging buffers; the
  // loader calls it once every weight is submitted.
  void finish_uploads() {
    if (!uploads_) return;
    uploads_->wait_all();
    uploads_.reset();
  }

  // Converts source rows (F32/F16/BF16, row-major, the part's rows) into the
  // part's format on the GPU; `add` is added to every value first.
  void convert(const TensorSlot& t, size_t part, std::span<const std::byte> source,
               SourceType type, float add) {
    const TensorPart& p = layout_.parts_of(t)[part];
    const uint64_t elems = p.rows * t.cols;
    const uint64_t want = elems * (type == SourceType::F32 ? 4 : 2);
    if (source.size() != want)
      throw Error("load: " + t.gguf_name() + ": source has " + std::to_string(source.size()) +
                  " bytes, expected " + std::to_string(want));
    convert_part(t, p, source, type, add);
  }

 private:
  // Staging slots of 64 MiB: large enough that a submission's fixed cost is
  // noise, small enough that three of them are a modest pinned allocation.
  static constexpr uint64_t kStagingBytes = 64ull << 20;
  gpu::StagingRing& uploads() {
    if (!uploads_) uploads_.emplace(ctx_, kStagingBytes);
    return *uploads_;
  }

  // Runs shaders/convert.comp over a part, one staging buffer of whole source
  // blocks at a time (a 2-D grid, so any count fits the group limits).
  void convert_part(const TensorSlot& t, const TensorPart& p, std::span<const std::byte> source,
                    SourceType type, float add) {
    const FormatInfo f = format_info(t.format);
    const uint64_t elems = p.rows * t.cols;
    // Source bytes per destination unit (an element, or a block of block_elems).
    const uint64_t unit_bytes = type == SourceType::GgmlBlocks ? f.block_bytes
                                : type == SourceType::F32      ? 4 * f.block_elems
                                                               : 2 * f.block_elems;
    const uint64_t units = elems / f.block_elems;
    const kernels::Convert spec{uint32_t(type), add};
    const auto& k = kernel(kernels::variant("convert", t.format), kernels::kConvertBindings, spec);
    gpu::StagingRing& ring = uploads();
    const uint64_t per_fill = ring.slot_bytes() / unit_bytes;
    const gpu::Buffer& dst = slab_of(t, p);
    std::array<vk::DescriptorSet, gpu::StagingRing::kSlots> sets{};  // made on first use of a slot
    for (uint64_t done = 0; done < units; done += per_fill) {
      const uint64_t n = std::min<uint64_t>(per_fill, units - done);
      const uint32_t groups = uint32_t((n + 63) / 64);
      const uint32_t gx = std::min<uint32_t>(groups, 65535), gy = (groups + gx - 1) / gx;
      ring.submit(source.subspan(done * unit_bytes, n * unit_bytes), [&](vk::CommandBuffer cb, uint32_t slot) {
        if (!sets[slot]) {
          const vk::DescriptorBufferInfo bufs[] = {ring.buffer(slot).whole(), dst.range(p.offset, p.bytes)};
          sets[slot] = sets_.make(k, bufs);
        }
        gpu::record(cb, {&k, sets[slot], {uint32_t(n), uint32_t(done), uint32_t(units)}, {gx, gy, 1}},
                    false);
      });
    }
  }

  struct Graph {
    vk::raii::CommandBuffer commands{nullptr};
    std::vector<gpu::Dispatch> dispatches;
    bool splitk = false;  // a batched pass whose products run on matmul_coop_splitk
    // A chunk pass: its attention tiles' tokens, at whose multiples each
    // stream's segment of rows starts (1: attention row by row).
    uint32_t segment_tokens = 1;
  };
  // What a recorded pass is: prompt chunks (matrix-matrix kernels), one token
  // per stream (matrix-vector kernels), or one token per stream with the
  // products on tensor units (matmul_coop_splitk, for steps of many streams).
  enum class PassKind { Prefill, Decode, DecodeSplitK };

  const gpu::Buffer& slab_of(const TensorSlot& t, const TensorPart& p) const {
    return t.arena == Arena::Weights ? weight_slabs_[p.slab] : kv_slabs_[p.slab];
  }

  // Before any allocation: the compile-time pool totals (placement/budget.hpp)
  // against the heaps of the memory types those pools get on this device.
  void check_pools_fit() const {
    const Budget budget = placement_budget(cfg_, layout_);
    std::vector<gpu::PoolNeed> needs;
    for (Pool pool : kPools) {
      const uint64_t bytes = budget.need(pool);
      if (!bytes) continue;
      const uint32_t type = gpu::storage_memory_type(ctx_, gpu::memory_kind_of(pool));
      needs.push_back({pool, bytes, ctx_.heap_of_type(type)});
    }
    const auto heaps = ctx_.heaps();
    gpu::check_pools_fit(ctx_.info().name, needs, heaps);
  }

  // One BufferSet per pool from that pool's slabs (a contiguous run: the layout
  // packs pool by pool), and a by-slab-index view of them.
  void allocate_by_pool(std::span<const uint64_t> slab_bytes, std::span<const Pool> slab_pools,
                        std::array<gpu::BufferSet, kPoolCount>& sets, std::vector<gpu::Buffer>& slabs,
                        const std::string& what) {
    slabs.resize(slab_bytes.size());
    for (Pool pool : kPools) {
      std::vector<uint64_t> sizes;
      std::vector<size_t> index;
      for (size_t i = 0; i < slab_bytes.size(); ++i)
        if (slab_pools[i] == pool) {
          sizes.push_back(slab_bytes[i]);
          index.push_back(i);
        }
      if (sizes.empty()) continue;
      sets[size_t(pool)] = gpu::BufferSet(ctx_, sizes, gpu::memory_kind_of(pool),
                                          what + " in " + std::string(pool_name(pool)));
      for (size_t k = 0; k < index.size(); ++k) slabs[index[k]] = sets[size_t(pool)][k];
    }
  }

  // The context an engine is created with: 0 is the compiled one; more than
  // the compiled one would need a KV cache the compile-time checks never saw.
  static uint32_t checked_context(const DeploymentConfig& c, uint32_t asked) {
    if (asked == 0) return c.max_context;
    if (asked > c.max_context)
      throw Error("context: " + std::to_string(asked) + " tokens asked; this engine is compiled for at most " +
                  std::to_string(c.max_context) + " (DeploymentConfig::max_context, which the compile-time "
                  "memory checks bound): ask for fewer, or compile a deployment with a longer context");
    return asked;
  }
  // The run-time layout's weights and activations are the compiled layout's
  // (only the KV cache depends on the context): its run-time witness.
  void check_against_compiled(const LayoutView& compiled) const {
    const auto same = [](auto a, auto b) { return std::ranges::equal(a, b); };
    const auto same_act = [](const ActivationSlot& a, const ActivationSlot& b) {
      return a.bytes == b.bytes && a.rows == b.rows && a.slices == b.slices;
    };
    if (compiled.tensors.size() != layout_.tensors.size() ||
        !same(compiled.weight_slab_bytes, layout_.weight_slab_bytes) ||
        !std::ranges::equal(compiled.activations, layout_.activations, same_act) ||
        (kv_context_ == cfg_.max_context && !same(compiled.kv_slab_bytes, layout_.kv_slab_bytes)))
      throw Error("internal: the engine's run-time layout differs from the compiled one beyond its KV cache");
  }

  void check_device_limits() const {
    const auto& info = ctx_.info();
    if (info.max_storage_buffer_range < kMaxBindingBytes)
      throw Error("gpu: " + info.name + " binds at most " +
                  std::to_string(info.max_storage_buffer_range) +
                  " bytes per storage buffer; Vulkan guarantees 128 MiB");
    if (info.subgroup_size < 8 || info.subgroup_size > 128)
      throw Error("gpu: " + info.name + " has subgroups of " + std::to_string(info.subgroup_size) +
                  " lanes; the kernels need 8 to 128");
    if (info.min_storage_buffer_offset_alignment > kBindingAlign)
      throw Error("gpu: " + info.name + " needs storage-buffer offsets aligned to " +
                  std::to_string(info.min_storage_buffer_offset_alignment) + " bytes");
  }

  // While it lives, the passes leave raw logits: every row samples greedily
  // with no penalty (which edits logits in place). Teacher forcing holds one.
  struct RawLogits {
    EngineCore& core;
    explicit RawLogits(EngineCore& c) : core(c) { c.raw_logits_ = true; }
    ~RawLogits() { core.raw_logits_ = false; }
    RawLogits(const RawLogits&) = delete;
    RawLogits& operator=(const RawLogits&) = delete;
  };

  // What each stream carries between steps.
  struct StreamState {
    std::vector<int32_t> tokens;  // what its KV cache holds; its next position is their count
    SamplingParams sampling;      // how its tokens are chosen
    uint32_t counter = 0;         // tokens chosen since set_sampling: the draw's counter
    // The first of `tokens` whose keys and values the sliding-window layers'
    // ring still holds: writing position q overwrites q - ring, and a rewind
    // does not bring back what a longer sequence overwrote before it. (A
    // sequence that wrapped the ring, rewound to a shared prefix and stopped
    // short of the ring's length has lost its first positions all the same.)
    uint32_t ring_from = 0;
  };
  // Tokens were appended to a stream (before the pass that writes their keys
  // runs, so that a failed pass counts as written): the ring now lacks every
  // position more than its length behind the last.
  void note_written(StreamState& s) const {
    const uint32_t end = uint32_t(s.tokens.size()), ring = layout_.local_kv_slots;
    if (end > ring) s.ring_from = std::max(s.ring_from, end - ring);
  }
  StreamState& stream_state(uint32_t stream) {
    check_stream(stream);
    return streams_[stream];
  }
  const StreamState& stream_state(uint32_t stream) const {
    check_stream(stream);
    return streams_[stream];
  }
  void check_stream(uint32_t stream) const {
    if (stream >= cfg_.streams)
      throw Error("stream " + std::to_string(stream) + " does not exist: this engine is compiled for " +
                  std::to_string(cfg_.streams) + (cfg_.streams == 1 ? " stream" : " streams") +
                  " (DeploymentConfig::streams)");
  }

  void check_tokens(uint32_t stream, std::span<const int32_t> tokens) const {
    for (int32_t t : tokens)
      if (t < 0 || uint32_t(t) >= cfg_.model.vocab)
        throw Error("token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                    std::to_string(cfg_.model.vocab) + ")");
    const uint32_t pos = position(stream);
    if (uint64_t(pos) + tokens.size() > context_limit_)
      throw Error("context full: " + std::to_string(tokens.size()) + " tokens at position " +
                  std::to_string(pos) + (cfg_.streams > 1 ? " of stream " + std::to_string(stream) : "") +
                  " exceed the context of " + std::to_string(context_limit_) + " tokens");
  }

  void check_batch(std::span<const StreamToken> batch) const {
    if (batch.empty()) throw Error("decode: the batch is empty");
    if (batch.size() > cfg_.streams)
      throw Error("decode: " + std::to_string(batch.size()) + " tokens in one step; this engine is "
                  "compiled for " + std::to_string(cfg_.streams) + " streams, one token each");
    for (size_t i = 0; i < batch.size(); ++i) {
      const int32_t one[] = {batch[i].token};
      check_tokens(batch[i].stream, one);
      for (size_t j = 0; j < i; ++j)
        if (batch[j].stream == batch[i].stream)
          throw Error("decode: stream " + std::to_string(batch[i].stream) +
                      " appears twice in one step; a step takes one token per stream");
    }
  }

  // A chunk of one stream's tokens at consecutive positions; rows from
  // logit_begin (logit_count of them) get logits.
  std::vector<StepRow> chunk_rows(uint32_t stream, std::span<const int32_t> tokens, uint32_t logit_begin,
                                  uint32_t logit_count) const {
    const uint32_t pos = uint32_t(streams_[stream].tokens.size());
    std::vector<StepRow> rows(tokens.size());
    for (size_t t = 0; t < tokens.size(); ++t) rows[t] = {uint32_t(tokens[t]), pos + uint32_t(t), stream, 0};
    for (uint32_t i = 0; i < logit_count; ++i) rows[i].logit_source = logit_begin + i;
    return rows;
  }
  // A decode step: one token per stream, each at its stream's position; every
  // row gets logits.
  void write_step(std::span<const StreamToken> batch) {
    std::vector<StepRow> rows(batch.size());
    for (size_t t = 0; t < batch.size(); ++t)
      rows[t] = {uint32_t(batch[t].token), uint32_t(streams_[batch[t].stream].tokens.size()), batch[t].stream,
                 uint32_t(t)};
    write_step(rows, uint32_t(rows.size()));
  }
  void write_step(std::span<const StepRow> rows, uint32_t logit_count) {
    const StepHeader h{uint32_t(rows.size()), logit_count};
    std::byte* p = host_[0].mapped;
    std::memcpy(p, &h, sizeof h);
    std::memcpy(p + sizeof h, rows.data(), rows.size_bytes());
  }

  // Teacher forcing: a chunk of one stream's tokens, every row's logits.
  void run_chunk(const Graph& graph, uint32_t stream, std::span<const int32_t> tokens) {
    const uint32_t n = uint32_t(tokens.size());
    write_step(chunk_rows(stream, tokens, 0, n), n);
    StreamState& s = streams_[stream];
    s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
    note_written(s);
    // The sampler kernels run on every logit row, so every row gets the
    // stream's state: a row left unwritten would sample with whatever the
    // buffer held (a penalty history billions of entries long).
    write_sampler(0, stream);
    for (uint32_t row = 1; row < n; ++row)
      std::memcpy(host_[2].mapped + row * kSamplerRowBytes, host_[2].mapped, kSamplerRowBytes);
    submit(graph, s.tokens.size() - tokens.size(), stream);
  }

  // A decode pass over a written step: logit row i samples for batch[i].
  void run(const Graph& graph, std::span<const StreamToken> batch) {
    for (size_t i = 0; i < batch.size(); ++i) {
      streams_[batch[i].stream].tokens.push_back(batch[i].token);
      note_written(streams_[batch[i].stream]);
      write_sampler(uint32_t(i), batch[i].stream);
    }
    try {
      stream_.submit_and_wait(*graph.commands);
    } catch (...) {
      for (const StreamToken& t : batch) streams_[t.stream].tokens.pop_back();
      throw;
    }
  }
  // Submits a prefill chunk; a failure leaves the stream where it was.
  void submit(const Graph& graph, size_t stream_tokens_before, uint32_t stream) {
    try {
      stream_.submit_and_wait(*graph.commands);
    } catch (...) {
      streams_[stream].tokens.resize(stream_tokens_before);
      throw;
    }
  }

  // Logit row `row` samples for `stream`: its parameters, its counter, and its
  // penalty history (the distinct ids among its last repeat_last_n tokens,
  // each with its count). Every stream draws with key 0, so a seed gives the
  // same tokens whichever stream, and whichever row of a step, runs it.
  void write_sampler(uint32_t row, uint32_t stream) {
    StreamState& st = streams_[stream];
    const SamplingParams p = raw_logits_ ? SamplingParams{} : st.sampling;
    std::vector<uint32_t> history, counts;
    if (p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
      const size_t n = std::min<size_t>(p.repeat_last_n, st.tokens.size());
      for (size_t i = st.tokens.size() - n; i < st.tokens.size(); ++i) {
        const uint32_t t = uint32_t(st.tokens[i]);
        const auto at = std::find(history.begin(), history.end(), t);
        if (at == history.end()) {
          history.push_back(t);
          counts.push_back(1);
        } else {
          counts[size_t(at - history.begin())] += 1;
        }
      }
    }
    const SamplerState s{p.temperature,      p.top_k,    p.top_p, p.min_p, p.repeat_penalty,
                         p.seed,             st.counter++, uint32_t(history.size()), 0,
                         p.presence_penalty, p.frequency_penalty};
    std::byte* out = host_[2].mapped + row * kSamplerRowBytes;
    std::memcpy(out, &s, sizeof s);
    if (history.empty()) return;
    std::memcpy(out + sizeof s, history.data(), history.size() * 4);
    std::memcpy(out + sizeof s + 4ull * kMaxPenaltyHistory, counts.data(), counts.size() * 4);
  }

  // The first n rows of logits of the last pass, into out [n, vocab].
  void read_logits(uint32_t n, float* out) {
    if (!logits_readback_) {
      const uint64_t bytes[] = {layout_.activations[size_t(Act::Logits)].bytes};
      logits_readback_ = gpu::BufferSet(ctx_, bytes, gpu::MemoryKind::HostVisible, "logits read-back");
    }
    const uint64_t bytes = uint64_t(n) * cfg_.model.vocab * 4;
    stream_.run_once([&](vk::CommandBuffer cb) {
      cb.copyBuffer(acts_[size_t(Act::Logits)].handle, (*logits_readback_)[0].handle,
                    vk::BufferCopy{0, 0, bytes});
    });
    std::memcpy(out, (*logits_readback_)[0].mapped, bytes);
  }

  int32_t chosen_token(uint32_t row) const {
    uint32_t id;
    std::memcpy(&id, host_[1].mapped + 4 * row, 4);
    if (id >= cfg_.model.vocab)
      throw Error("the model produced no valid token (logits are NaN): check the weights file");
    return int32_t(id);
  }

  template <class Spec>
  const gpu::Kernel& kernel(const std::string& name, uint32_t bindings, const Spec& spec) {
    const auto words = spirv::find(name);
    if (words.empty()) throw Error("internal: no SPIR-V module named " + name);
    return kernels_.get(name, words, bindings, spec);
  }

  vk::DescriptorBufferInfo act(Act a) const { return acts_[size_t(a)].whole(); }
  vk::DescriptorBufferInfo step() const { return host_[0].whole(); }
  vk::DescriptorBufferInfo part(const TensorSlot& t, const TensorPart& p) const {
    return slab_of(t, p).range(p.offset, p.bytes);
  }

  // --- the forward pass, recorded for chunks of n tokens ---

  class Recorder;
  // A pass over up to n token rows producing up to logit_rows rows of logits:
  // a prompt chunk (matrix-matrix kernels), or with `decode` one token per
  // stream (matrix-vector kernels reading each weight once for all rows).
  // splitk_tokens: the split-K tile's token rows (0: the tile for n).
  std::optional<Graph> record_forward(uint32_t n, uint32_t logit_rows, PassKind kind, uint32_t splitk_tokens = 0);
  // The recorded pass for a step of n streams' tokens.
  const Graph& batch_pass(uint32_t n) const {
    if (!batch_) return *decode_;
    const Graph& largest = batch_small_ && n <= kernels::kSplitKSmallTokens ? *batch_small_ : *batch_;
    if (batch_passes_ == BatchPasses::Fixed) return largest;  // one kernel family for every size
    return n <= 1 ? *decode_ : largest;
  }

  gpu::Context& ctx_;
  DeploymentConfig cfg_;     // as compiled
  uint32_t kv_context_;      // KV cache positions per stream (EngineOptions::context)
  RunLayout run_layout_;     // cfg_ with kv_context_
  LayoutView layout_;        // of run_layout_
  gpu::KernelCache kernels_;
  gpu::DescriptorArena sets_;
  gpu::Stream stream_;
  std::array<gpu::BufferSet, kPoolCount> weight_sets_, kv_sets_;  // per pool
  std::vector<gpu::Buffer> weight_slabs_, kv_slabs_;               // by layout slab index
  gpu::BufferSet acts_, host_, partial_set_;  // host_: step, chosen tokens, sampler state
  std::optional<gpu::StagingRing> uploads_;      // while loading
  gpu::Buffer partials_;  // per-slice logit maxima, [logit rows, kLogitParts]
  std::optional<gpu::BufferSet> logits_readback_;
  // Prompt chunks (logits of one row), single tokens, one token of each of
  // several streams (streams > 1), and, recorded on first use, prompt chunks
  // with a row of logits for each of several streams' prompts, and with every
  // token's logits (teacher forcing).
  std::optional<Graph> prefill_, decode_, batch_, batch_small_, prefill_many_logits_,
      prefill_all_logits_;
  Tuning tuning_;  // kernel shapes (EngineOptions::tuning)
  uint32_t context_limit_ = kv_context_;
  bool raw_logits_ = false;  // RawLogits: greedy rows, no penalty
  BatchPasses batch_passes_ = BatchPasses::BySize;
  std::vector<StreamState> streams_ = std::vector<StreamState>(cfg_.streams);
};

// Builds the dispatch list for one chunk size. Each method is one step of the
// Gemma 3 layer and says the shape of what it writes.
class EngineCore::Recorder {
 public:
  Recorder(EngineCore& core, uint32_t n, uint32_t logit_rows, PassKind kind, uint32_t splitk_tokens)
      : c_(core), n_(n), logit_rows_(logit_rows), decode_(kind != PassKind::Prefill),
        splitk_(kind == PassKind::DecodeSplitK), splitk_tokens_(splitk_tokens), m_(core.cfg_.model),
        half_(half_operands()) {}

  std::vector<gpu::Dispatch> forward() {
    embed();                                                   // x  [n, H]
    for (uint32_t l = 0; l < m_.layers; ++l) layer(int(l));
    final_norm();                                              // xn [logit rows, H]
    linear(Act::Xn, Act::Logits, c_.layout_.weight(Role::LmHead), 1);    // [logit rows, V]
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
    linear(xn, Act::Q, L.weight(Role::AttnQ, l), 0, false);          // q [n, heads * hd]
    linear(xn, Act::K, L.weight(Role::AttnK, l), 0, false);          // k [n, kv_heads * hd]
    linear(xn, Act::V, L.weight(Role::AttnV, l));                    // v [n, kv_heads * hd]
    shared_waves_ = 0;
    attn_prep(l, kind);                        // q, k normed and rotated; cache[l] <- k, v
    attention(l, kind);                        // attn [n, heads * hd]
    linear(operand(Act::Attn), Act::Proj, L.weight(Role::AttnOut, l));  // proj [n, H]
    add_norm(L.weight(Role::PostAttnNorm, l), &L.weight(Role::FfnNorm, l));  // x += norm(proj); xn = norm(x)
    gate_up(l);                                // gate = gelu(xn Wg) * (xn Wu)  [n, F]
    linear(operand(Act::Gate), Act::Proj, L.weight(Role::FfnDown, l));  // proj [n, H]
    // x += norm(proj); and, but after the last layer, the next layer's xn = norm(x)
    add_norm(L.weight(Role::PostFfnNorm, l), last ? nullptr : &L.weight(Role::AttnNorm, l + 1));
  }

  void embed() {
    const TensorSlot& t = c_.layout_.weight(Role::Embedding);
    const kernels::Embed spec{m_.hidden, std::sqrt(float(m_.hidden))};
    const auto& k = c_.kernel(kernels::variant("embed", t.format), kernels::kEmbedBindings, spec);
    const auto parts = c_.layout_.parts_of(t);
    for (size_t i = 0; i < parts.size(); ++i) {  // parts write their own rows: one barrier after the last
      const TensorPart& p = parts[i];
      const vk::DescriptorBufferInfo b[] = {c_.part(t, p), c_.step(), c_.act(Act::X)};
      add(k, b, {uint32_t(p.row_begin), uint32_t(p.rows)}, {groups(m_.hidden, 64), n_, 1}, i + 1 == parts.size());
    }
  }

  // out = norm(in) * w over token rows (row_set 0) or logit rows (row_set 1).
  void norm(Act in, Act out, const TensorSlot& w, uint32_t row_set = 0) {
    const kernels::RmsNorm spec{m_.hidden, m_.rms_eps, 0, row_set, 0, out == Act::Operand};
    const auto& k = c_.kernel("rmsnorm", kernels::kRmsNormBindings, spec);
    const auto wb = c_.part(w, c_.layout_.parts_of(w)[0]);
    const vk::DescriptorBufferInfo b[] = {c_.act(in), wb, c_.act(out), c_.step(), wb, c_.act(out)};
    add(k, b, {1}, {row_set ? logit_rows_ : n_, 1, 1});
  }

  // x += norm(proj) * w; then, with `next`, xn = norm(x) * next.
  // proj may hold several partial sums, added first.
  void add_norm(const TensorSlot& w, const TensorSlot* next) {
    const kernels::RmsNorm spec{m_.hidden, m_.rms_eps, 1, 0, next ? 1u : 0u, next && half_,
                                slices_[size_t(Act::Proj)], slice_elems(Act::Proj)};
    const auto& k = c_.kernel("rmsnorm", kernels::kRmsNormBindings, spec);
    const auto wb = c_.part(w, c_.layout_.parts_of(w)[0]);
    const auto nb = next ? c_.part(*next, c_.layout_.parts_of(*next)[0]) : wb;
    const vk::DescriptorBufferInfo b[] = {c_.act(Act::Proj), wb, c_.act(Act::X), c_.step(), nb,
                                          c_.act(operand(Act::Xn))};
    add(k, b, {1}, {n_, 1, 1});
  }

  void final_norm() { norm(Act::X, Act::Xn, c_.layout_.weight(Role::OutputNorm), 1); }

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
              const TensorSlot* pair = nullptr) {
    if (splitk(row_set)) return linear_splitk(in, out, w, row_set, barrier);
    const bool vec = decode_ || row_set == 1;
    const uint32_t K = uint32_t(w.cols), M = uint32_t(w.rows);
    const uint32_t sg = c_.ctx_.info().subgroup_size, accumulators = pair ? 2 : 1;
    uint32_t rows = c_.tuning_.matvec_rows, lanes = c_.tuning_.matvec_lanes;
    if (!lanes || !is_block_quantized(w.format)) lanes = kernels::matvec_lanes(w.format, K, M, rows, sg);
    if (!kernels::matvec_shape_ok(lanes, rows * accumulators, sg))
      rows = kernels::kMatVecRows, lanes = kernels::matvec_lanes(w.format, K, M, rows, sg);
    const uint32_t tokens = decode_ ? (row_set ? logit_rows_ : n_) : 1;  // per workgroup
    const uint32_t token_tile = std::max(1u, std::min(tokens, c_.tuning_.batch_tile));
    if (tokens > 1) {
      const uint32_t batch_rows = std::max(1u, c_.tuning_.batch_accumulators / accumulators);
      if (kernels::matvec_shape_ok(lanes, batch_rows * accumulators, sg)) rows = batch_rows;
    }
    const uint32_t unroll = c_.tuning_.matvec_unroll == 2 ? 2 : 1;
    const uint32_t rows_per_group = rows * 128 / lanes;  // 128-lane workgroups
    // Prefill: tensor units when the device has them and they are enabled
    // (gpu::Context decides), else fp32 tiles.
    const auto& info = c_.ctx_.info();
    const bool coop = !vec && info.coopmat;
    const uint32_t rows_n = row_set ? logit_rows_ : n_;
    // Outputs whose layout holds several slices (Act::Proj, Act::Up) take
    // partial sums, which their consumers (add_norm, geglu) add: the output
    // projections may split K where their tiles alone would leave much of the
    // GPU idle, and the up projection where it fills the last wave it shares
    // with the gate's (same tile).
    const uint32_t slice_cap = c_.layout_.activations[size_t(out)].slices;
    const uint32_t max_splits = coop ? kernels::coop_max_splits(K, slice_cap, c_.tuning_.coop_split_steps) : 1;
    kernels::CoopTile tile = c_.tuning_.coop_tile(rows_n, shared_waves_ ? shared_waves_ : M, in == Act::Operand,
                                                  out == Act::Up ? 1 : max_splits);
    if (out == Act::Up)
      tile.splits = kernels::coop_splits_after(tile, rows_n, M, in_flight_, std::max(1u, c_.tuning_.coop_wave),
                                               max_splits);
    slices_[size_t(out)] = tile.splits;  // 1 unless split above
    const auto& k =
        vec ? c_.kernel(kernels::variant("matvec", w.format), kernels::kMatVecBindings,
                        kernels::MatVec{K, M, row_set, rows, lanes, unroll, accumulators - 1,
                                        tokens, token_tile})
        : coop ? c_.kernel(kernels::variant("matmul_coop", w.format), kernels::kLinearBindings,
                           kernels::linear_coop(K, M, row_set, info.coop_m, info.coop_n,
                                                info.coop_k, info.subgroup_size, tile, slice_elems(out)))
               : c_.kernel(kernels::variant("matmul", w.format), kernels::kLinearBindings,
                           kernels::Linear{K, M, row_set});
    const uint32_t tile_rows = coop ? tile.rows : 64, tile_tokens = coop ? tile.tokens : 64;
    const auto parts = c_.layout_.parts_of(w);
    for (size_t i = 0; i < parts.size(); ++i) {
      const TensorPart& p = parts[i];
      const auto wp = c_.part(w, p);
      const gpu::PushWords push{uint32_t(p.row_begin), uint32_t(p.rows)};
      if (vec) {
        const auto second = pair ? c_.part(*pair, c_.layout_.parts_of(*pair)[i]) : wp;
        const vk::DescriptorBufferInfo b[] = {wp, c_.act(in), c_.act(out), c_.step(), second};
        const uint32_t g = groups(uint32_t(p.rows), rows_per_group);
        const uint32_t gx = std::min<uint32_t>(g, 65535);
        add(k, b, push, {gx, groups(g, gx), groups(rows_n, tokens)}, barrier && i + 1 == parts.size());
      } else {
        const vk::DescriptorBufferInfo b[] = {wp, c_.act(in), c_.act(out), c_.step()};
        add(k, b, push, {groups(uint32_t(p.rows), tile_rows), groups(rows_n, tile_tokens), tile.splits},
            barrier && i + 1 == parts.size());
      }
    }
  }

  // linear() for a batched decode pass on tensor units: tiles of the step's
  // token rows by weight rows, K split across each workgroup's subgroups.
  void linear_splitk(Act in, Act out, const TensorSlot& w, uint32_t row_set, bool barrier) {
    const auto& info = c_.ctx_.info();
    const uint32_t K = uint32_t(w.cols), M = uint32_t(w.rows), rows_n = row_set ? logit_rows_ : n_;
    const kernels::SplitKTile tile = c_.tuning_.splitk_tile(splitk_tokens_ ? splitk_tokens_ : rows_n);
    // The output projections split K across workgroups too (add_norm adds
    // the partial sums): by the matrix's shape only, the same on every tile.
    const uint32_t cap = out == Act::Proj ? c_.layout_.activations[size_t(out)].slices : 1;
    uint32_t splits = kernels::splitk_splits(K, M, tile, cap);
    slices_[size_t(out)] = splits;
    const auto& k = c_.kernel(kernels::variant("matmul_coop_splitk", w.format), kernels::kLinearSplitKBindings,
                              kernels::linear_coop_splitk(K, M, row_set, info.coop_m, info.coop_n,
                                                          info.coop_k, info.subgroup_size, tile,
                                                          in == Act::Operand, splits, slice_elems(out)));
    const auto parts = c_.layout_.parts_of(w);
    for (size_t i = 0; i < parts.size(); ++i) {
      const TensorPart& p = parts[i];
      const auto wp = c_.part(w, p);
      const vk::DescriptorBufferInfo b[] = {wp, c_.act(in), c_.act(out), c_.step(), wp};
      add(k, b, {uint32_t(p.row_begin), uint32_t(p.rows)},
          {groups(uint32_t(p.rows), tile.rows), groups(rows_n, tile.tokens), splits}, barrier && i + 1 == parts.size());
    }
  }

  // gelu(xn Wg^T) * (xn Wu^T) on matmul_coop_splitk in one dispatch per part
  // (PAIR): each tile's gate and up rows share its X loads, and the product
  // goes straight into the down projection's operand.
  void gate_up_splitk(const TensorSlot& gate, const TensorSlot& up) {
    const auto& info = c_.ctx_.info();
    const uint32_t K = uint32_t(gate.cols), M = uint32_t(gate.rows);
    const kernels::SplitKTile tile = c_.tuning_.splitk_tile(splitk_tokens_ ? splitk_tokens_ : n_);
    const Act in = operand(Act::Xn), out = operand(Act::Gate);
    const auto& k = c_.kernel(kernels::variant("matmul_coop_splitk", gate.format), kernels::kLinearSplitKBindings,
                              kernels::linear_coop_splitk_pair(K, M, info.coop_m, info.coop_n, info.coop_k,
                                                               info.subgroup_size, tile, in == Act::Operand,
                                                               out == Act::Operand));
    const auto gp = c_.layout_.parts_of(gate), upp = c_.layout_.parts_of(up);
    for (size_t i = 0; i < gp.size(); ++i) {
      const vk::DescriptorBufferInfo b[] = {c_.part(gate, gp[i]), c_.act(in), c_.act(out), c_.step(),
                                            c_.part(up, upp[i])};
      add(k, b, {uint32_t(gp[i].row_begin), uint32_t(gp[i].rows)},
          {groups(uint32_t(gp[i].rows), tile.rows / 2), groups(n_, tile.tokens), 1}, i + 1 == gp.size());
    }
  }

  // gate = gelu(xn W_gate^T) * (xn W_up^T): one fused dispatch when decoding
  // block-format weights split alike (matrix-vector, or split-K tiles for a
  // batched step), else gate, up, geglu.
  void gate_up(int l) {
    const TensorSlot& gate = c_.layout_.weight(Role::FfnGate, l);
    const TensorSlot& up = c_.layout_.weight(Role::FfnUp, l);
    const auto gp = c_.layout_.parts_of(gate), upp = c_.layout_.parts_of(up);
    bool alike = decode_ && is_block_quantized(gate.format) && gate.format == up.format &&
                 gp.size() == upp.size();
    for (size_t i = 0; alike && i < gp.size(); ++i)
      alike = gp[i].row_begin == upp[i].row_begin && gp[i].rows == upp[i].rows;
    if (alike && splitk(0)) return gate_up_splitk(gate, up);
    if (alike) return linear(Act::Xn, Act::Gate, gate, 0, true, &up);
    linear(operand(Act::Xn), Act::Gate, gate, 0, false);  // gate [n, F]
    linear(operand(Act::Xn), Act::Up, up);                 // up   [n, F]
    geglu();  // gate = gelu(gate) * up, or into the fp16 operand
  }

  // q/k norm, RoPE, and the cache write, per part of the layer's cache (ranges
  // of (stream, kv head) rows; the first part's dispatch also does the query heads).
  void attn_prep(int l, AttentionKind kind) {
    const auto& L = c_.layout_;
    const TensorSlot& kc = L.kv(Role::KCache, l);
    const TensorSlot& vc = L.kv(Role::VCache, l);
    const bool global = kind == AttentionKind::Global;
    const uint32_t heads_per_group = kernels::attn_prep_heads_per_group(decode_, c_.ctx_.info().subgroup_size);
    const kernels::AttnPrep spec{m_.heads, m_.kv_heads, m_.head_dim, slots_of(kind),
                                 global ? m_.rope_theta_global : m_.rope_theta_local,
                                 global ? m_.rope_scale_global : 1.0f, m_.rms_eps, heads_per_group};
    const auto& k = c_.kernel(kernels::variant("attn_prep", kc.format), kernels::kAttnPrepBindings, spec);
    const TensorSlot& qn = L.weight(Role::AttnQNorm, l);
    const TensorSlot& kn = L.weight(Role::AttnKNorm, l);
    const auto kp = L.parts_of(kc), vp = L.parts_of(vc);
    for (size_t i = 0; i < kp.size(); ++i) {
      const vk::DescriptorBufferInfo b[] = {
          c_.act(Act::Q), c_.act(Act::K), c_.act(Act::V), c_.part(kc, kp[i]), c_.part(vc, vp[i]),
          c_.step(), c_.part(qn, L.parts_of(qn)[0]), c_.part(kn, L.parts_of(kn)[0])};
      const uint32_t q_groups = kp[i].row_begin == 0 ? m_.heads : 0;
      add(k, b, {uint32_t(kp[i].row_begin), uint32_t(kp[i].rows)},
          {n_, kernels::attn_prep_groups(q_groups + m_.kv_heads, heads_per_group), 1});
    }
  }

  // attn [n, heads * hd] from q and the layer's cache, per cache part. Decode
  // walks the keys per (token, query head); a chunk of several tokens runs
  // tiles of query rows that share each key and value load: on the tensor
  // units where the device has them and a tile fits (attention_coop), else
  // where the device's shared memory holds a tile for this head dim
  // (attention_tiled).
  void attention(int l, AttentionKind kind) {
    const TensorSlot& kc = c_.layout_.kv(Role::KCache, l);
    const TensorSlot& vc = c_.layout_.kv(Role::VCache, l);
    const uint32_t window = kind == AttentionKind::Local ? m_.sliding_window : 0u;
    const float scale = 1.0f / std::sqrt(m_.query_pre_attn_scalar);
    const auto& info = c_.ctx_.info();
    const bool chunk = !decode_ && n_ > 1;  // prefill: one stream, consecutive positions
    const uint32_t query_rows = n_ * (m_.heads / m_.kv_heads);
    kernels::AttentionTile coop =
        chunk && info.coopmat
            ? kernels::attention_coop_shape(m_.head_dim, info.coop_m, info.coop_n, info.coop_k,
                                            info.subgroup_size, info.max_shared_memory,
                                            c_.tuning_.attention_coop_rows, c_.tuning_.attention_coop_keys)
            : kernels::AttentionTile{};
    const uint64_t coop_groups = coop.rows ? uint64_t(groups(query_rows, coop.rows)) * m_.kv_heads : 0;
    if (coop_groups < kernels::kAttentionCoopGroups) coop = {};
    const bool pairs = kernels::attention_coop_pairs(coop_groups);
    const uint32_t rows =
        c_.tuning_.attention_rows.value_or(kernels::attention_tiled_rows(n_, m_.heads));
    const kernels::AttentionTile tile =
        coop.rows ? coop
                  : kernels::attention_tiled_shape(m_.head_dim, uint32_t(format_info(kc.format).block_bytes),
                                                   info.max_shared_memory, rows);
    const bool tiled = chunk && tile.rows;  // attention_coop or attention_tiled: tiles of query rows
    const auto& k =
        coop.rows ? c_.kernel(kernels::variant("attention_coop", kc.format), kernels::kAttentionCoopBindings,
                              kernels::AttentionCoop{m_.heads, m_.kv_heads, m_.head_dim, slots_of(kind),
                                                     window, scale, coop.rows, coop.keys, half_,
                                                     info.coop_m, info.coop_n, info.coop_k,
                                                     info.subgroup_size,
                                                     kernels::attention_coop_threads(coop, info.coop_m, info.subgroup_size),
                                                     uint32_t(pairs), coop.split})
        : tiled ? c_.kernel(kernels::variant("attention_tiled", kc.format),
                            kernels::kAttentionTiledBindings,
                            kernels::AttentionTiled{m_.heads, m_.kv_heads, m_.head_dim, slots_of(kind),
                                                    window, scale, tile.rows, tile.keys, half_})
                : c_.kernel(kernels::variant("attention", kc.format), kernels::kAttentionBindings,
                            kernels::Attention{m_.heads, m_.kv_heads, m_.head_dim, slots_of(kind),
                                               window, scale, info.subgroup_size, half_,
                                               kernels::attention_threads(info.subgroup_size)});
    // A tile holds tile.rows (token, query head) rows: the segments of a
    // chunk of several streams start at multiples of its tokens.
    if (tiled) segment_tokens_ = std::lcm(segment_tokens_, std::lcm(tile.rows, m_.heads / m_.kv_heads) /
                                                               (m_.heads / m_.kv_heads));
    const auto kp = c_.layout_.parts_of(kc), vp = c_.layout_.parts_of(vc);
    for (size_t i = 0; i < kp.size(); ++i) {  // each token's heads whose cache rows are in the part
      const vk::DescriptorBufferInfo b[] = {c_.act(Act::Q), c_.part(kc, kp[i]), c_.part(vc, vp[i]),
                                            c_.act(operand(Act::Attn)), c_.step()};
      const uint32_t part_rows = uint32_t(kp[i].rows);  // (stream, kv head) cache rows
      const uint32_t row_tiles = groups(query_rows, tile.rows);
      add(k, b, {uint32_t(kp[i].row_begin), part_rows},
          tiled ? std::array{coop.rows && pairs ? groups(row_tiles, 2) : row_tiles, part_rows, 1u}
                : std::array{n_, m_.heads, 1u});
    }
  }

  void geglu() {
    const auto& k = c_.kernel("geglu", kernels::kGegluBindings,
                              kernels::Geglu{m_.ffn, half_, slices_[size_t(Act::Up)], slice_elems(Act::Up)});
    const vk::DescriptorBufferInfo b[] = {c_.act(Act::Gate), c_.act(Act::Up), c_.step(),
                                          c_.act(operand(Act::Gate))};
    add(k, b, {}, {groups(kernels::geglu_threads(m_.ffn), 64), n_, 1});
  }

  // Penalty and per-slice maxima over many workgroups, then the choice.
  void sample() {
    const uint32_t parts = kernels::kLogitParts;
    const auto& km = c_.kernel("logits_max", kernels::kLogitsMaxBindings,
                               kernels::LogitsMax{m_.vocab, parts});
    const vk::DescriptorBufferInfo bm[] = {c_.act(Act::Logits), c_.partials_.whole(),
                                           c_.host_[2].whole(), c_.step()};
    add(km, bm, {}, {parts, logit_rows_, 1});
    const auto& k = c_.kernel("sample", kernels::kSampleBindings, kernels::Sample{m_.vocab, parts});
    const vk::DescriptorBufferInfo b[] = {c_.act(Act::Logits), c_.host_[1].whole(),
                                          c_.host_[2].whole(), c_.step(), c_.partials_.whole()};
    add(k, b, {}, {logit_rows_, 1, 1});
  }

  uint32_t slots_of(AttentionKind kind) const {
    return kind == AttentionKind::Global ? c_.layout_.global_kv_slots : c_.layout_.local_kv_slots;
  }
  static uint32_t groups(uint32_t items, uint32_t per) { return (items + per - 1) / per; }

  void add(const gpu::Kernel& k, std::span<const vk::DescriptorBufferInfo> b, gpu::PushWords push,
           std::array<uint32_t, 3> g, bool barrier = true) {
    d_.push_back({&k, c_.sets_.make(k, b), push, {g[0], g[1], g[2]}, barrier});
    in_flight_ = barrier ? 0 : in_flight_ + uint64_t(g[0]) * g[1] * g[2];
  }

  // Whether this pass's products take fp16 operands (kernels::x_half_fits): a
  // prefill on tensor units, every K of the model a multiple of 8.
  bool half_operands() const {
    const bool fits = kernels::x_half_fits(m_.hidden) && kernels::x_half_fits(m_.q_dim()) &&
                      kernels::x_half_fits(m_.ffn);
    return (!decode_ || splitk_) && c_.ctx_.info().coopmat && fits;
  }
  // Where the input of a product lives: with fp16 operands the kernel that
  // produces norm(x), attn or gelu(gate) * up writes it once into Act::Operand
  // as fp16, instead of each product converting the fp32 one.
  Act operand(Act fp32) const { return half_ ? Act::Operand : fp32; }
  // Elements between the partial sums of an activation that holds several
  // (its product's SLICE and its consumer's): this pass's rows of it.
  uint32_t slice_elems(Act a) const { return n_ * uint32_t(c_.layout_.activations[size_t(a)].row_elems); }

  EngineCore& c_;
  uint32_t n_, logit_rows_;
  bool decode_;  // one token per stream: per-row positions and streams
  bool splitk_;  // its products on matmul_coop_splitk rather than matrix-vector kernels
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
  std::vector<gpu::Dispatch> d_;
};

inline std::optional<EngineCore::Graph> EngineCore::record_forward(uint32_t n, uint32_t logit_rows,
                                                                   PassKind kind, uint32_t splitk_tokens) {
  Recorder recorder(*this, n, logit_rows, kind, splitk_tokens);
  const auto dispatches = recorder.forward();
  Graph g;
  g.splitk = kind == PassKind::DecodeSplitK;
  g.segment_tokens = recorder.segment_tokens();
  g.commands = stream_.allocate();
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
