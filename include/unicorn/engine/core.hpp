// unicorn/engine/core.hpp — EngineCore, the run-time half of an engine: its
// device buffers, allocated from the run-time layout, its recorded passes and
// the state its streams carry, declared here; each job's code is in a file of
// its own (engine/definitions.hpp lists them), included at the end when
// header-only, else compiled once for the build (unicorn/base/linkage.hpp):
//   engine/step.hpp      what one submission carries (tokens, step rows, sampler rows)
//   engine/create.hpp    creation: the device checks, the buffers, the lanes, the passes recorded
//   engine/sessions.hpp  streams: prefill, decode, rewind, sampling
//   engine/teacher_forcing.hpp  logits of given tokens (forward_logits, score)
//   engine/forward.hpp   the forward pass, recorded once per pass kind (the table of contents)
//   engine/ops.hpp       each op of the forward pass: its kernel, constants and dispatches
//   engine/upload.hpp    weights into device memory (the loader's calls)
//   engine/profile.hpp   the passes' plan as text; device time per kernel of a pass
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
// Prefill passes and decode steps each have a lane: the activations they
// compute in, the host-visible buffers of their submissions, and the queue
// they run on. With one stream there is one lane; with several, the decode
// steps have a lane of their own (activations for a step's rows) on the
// device's first queue and prefill passes run on the second, so a server
// starts a prefill pass (begin_prefill) and keeps decoding the other streams
// while it runs.
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
#include <utility>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/config/deployment.hpp"
#include "unicorn/config/sampling.hpp"
#include "unicorn/engine/kernels.hpp"
#include "unicorn/engine/options.hpp"
#include "unicorn/engine/step.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/kernel.hpp"
#include "unicorn/gpu/memory.hpp"
#include "unicorn/gpu/staging.hpp"
#include "unicorn/gpu/timing.hpp"
#include "unicorn/layout/budget.hpp"
#include "unicorn/layout/layout.hpp"

namespace unicorn {

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

// What convert() reads: float source values, or (GgmlBlocks) ggml blocks of
// the target format itself, which only move into the device layout.
enum class SourceType : uint32_t { F32 = 0, F16 = 1, BF16 = 2, GgmlBlocks = 3 };

class EngineCore {
 public:
  // `compiled`: the deployment's constexpr layout. The engine runs on its own
  // layout, the same with options.streams streams of options.context
  // positions of KV cache each.
  EngineCore(gpu::Context& ctx, const DeploymentConfig& config, LayoutView compiled,
             const EngineOptions& options = {});

  const DeploymentConfig& config() const { return cfg_; }
  // Whether prefill's products and attention (and batched steps' products)
  // run on the device's tensor units with fp16 operands (EngineOptions::products).
  bool tensor_units() const { return tensor_units_; }
  // Whether this deployment's block-format matrix-vector products (decode's,
  // and the LM head's in either pass) take their inputs as bytes (matvec_dot).
  bool int_dot() const {
    const auto layers = cfg_.scheme.layer_matrix_formats();
    return int_dot_ && (std::ranges::any_of(layers, is_block_quantized) || is_block_quantized(cfg_.scheme.lm_head));
  }
  // What they run on, in words (unicorn-bench, the golden tests).
  std::string products_path() const {
    if (tensor_units_) return gpu::prefill_linear_path(ctx_.info());
    return ctx_.info().coopmat ? "matmul: fp32 tiles (an F32 deployment, or EngineOptions::products)"
                               : gpu::prefill_linear_path(ctx_.info());
  }
  // Whether a deployment of `scheme` takes fp16 operands where the device has
  // tensor units: Products::by_scheme's rule.
  static constexpr bool fp16_products(Products products, const Scheme& scheme) {
    if (products != Products::by_scheme) return products == Products::fp16;
    return !std::ranges::all_of(scheme.layer_matrix_formats(), [](Format f) { return f == Format::F32; });
  }
  // The on-disk pipeline cache at start-up: read, ignored (and why), written.
  gpu::PipelineCache::Stats pipeline_cache() const { return kernels_->disk_stats(); }
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
  // The run-time layout: the compiled one with context_size() KV positions,
  // and the embedding in the format hold_embedding_as last chose.
  const LayoutView& layout() const { return layout_; }
  // Lays the engine out again with its tied embedding (and the LM head that
  // reads it) in `format`, the format a file's token_embd comes in
  // (Scheme::takes_embedding): the weight buffers are allocated anew and the
  // passes recorded again, so it is for the loader, before the weights are
  // uploaded. Nothing changes where `format` is already the embedding's; where
  // the new layout does not fit the device, the engine keeps its format and
  // throws the error that says by how much.
  void hold_embedding_as(Format format);
  // What this engine allocated on the device, per pool.
  DeviceMemory device_memory() const;
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
  void reset();
  // Forget one stream's sequence; the others keep theirs. Its sampling
  // parameters stay.
  void reset(uint32_t stream);

  // Whether a stream can go back to position `pos`, keeping the tokens before
  // it: local layers keep a ring of the last window + prefill_chunk positions
  // written (layout.hpp), so the keys a token at `pos` attends to, back to
  // window - 1 positions before it, must not have been overwritten since they
  // were written — by this stream's tokens past `pos`, or by tokens of an
  // earlier sequence that went further before a rewind (StreamState::ring_from).
  bool can_rewind(uint32_t stream, uint32_t pos) const;
  // Goes back to position `pos`: the stream keeps its first `pos` tokens (and
  // their KV cache) and the next token fed lands at `pos`. Its draw counter
  // goes back by the positions dropped (at most to 0), so that a token chosen
  // again at a position draws what it drew there before. A prompt that
  // shares a prefix with what the stream holds then prefills only the rest.
  void rewind(uint32_t stream, uint32_t pos);
  // Gives stream `to` the first `n` tokens of stream `from` and their keys and
  // values, copied on the device (the KV rows of every layer; a sliding-window
  // layer's ring as it stands), so a prompt shared by several streams (the
  // API's n choices) is prefilled once. `from` keeps its own; `to` loses what
  // it held. Refused where `from` can no longer go back to `n` (can_rewind).
  void copy_prefix(uint32_t from, uint32_t to, uint32_t n);

  // How prefill() and decode() choose tokens from now on (default: greedy), for
  // every stream; each stream keeps its own draw counter and penalty history.
  void set_sampling(const SamplingParams& p);
  // The same for one stream; its draws start over (the counter goes back to 0),
  // so a seed gives the same tokens from here whichever stream runs them.
  void set_sampling(uint32_t stream, const SamplingParams& p);
  const SamplingParams& sampling(uint32_t stream = 0) const { return stream_state(stream).sampling; }

  // Structured output: from now on the stream's next token is chosen only
  // among those `allowed` sets (token_mask_words(vocab) words, token i in
  // word i / 32, bit i % 32), after the biases and penalties, on the GPU; the
  // log-probabilities are then of that choice. A grammar matcher computes a
  // mask before each token. An empty span lifts it; so does set_sampling. A
  // mask that allows no token is refused (nothing could be chosen).
  void constrain(uint32_t stream, std::span<const uint32_t> allowed);
  bool constrained(uint32_t stream) const { return !stream_state(stream).allowed.empty(); }
  uint32_t mask_words() const { return token_mask_words(cfg_.model.vocab); }

  // Which recorded pass teacher forcing goes through.
  enum class Pass { Prefill, Decode, Verify };

  // Teacher forcing: runs `tokens` from the current position and returns the
  // logits of every one of them, row-major [tokens.size(), vocab]. With
  // Pass::Decode the tokens go one at a time through the decode pass, and with
  // Pass::Verify verify_rows() at a time through the verify pass (a drafting
  // deployment's), so tests check the recorded passes against one reference.
  std::vector<float> forward_logits(std::span<const int32_t> tokens, Pass pass = Pass::Prefill);
  // The same through the prefill pass for a prompt with images (prefill's
  // `images`), chunked as prefill() chunks it: tests hold an image's rows
  // against transformers.
  std::vector<float> forward_logits(std::span<const int32_t> tokens, std::span<const PromptImage> images);

  // Scoring a text, as evaluation harnesses do (the completions API's echo
  // with logprobs): feeds `tokens` but the last to `stream` from its position
  // (its KV cache keeps them, as feed() does) and returns, for each token
  // after the first, its log-probability given those before it and the
  // `top` most likely tokens there (at most kMaxTopLogprobs): tokens.size() - 1
  // entries. Of the raw logits (no penalty or bias), computed on the GPU
  // (shaders/logprobs.comp), only those numbers read back.
  std::vector<TokenLogprobs> score(uint32_t stream, std::span<const int32_t> tokens, uint32_t top);

  // Teacher forcing through the batched pass: one step of `batch` (one token
  // each of distinct streams), returning its raw logits, row i for batch[i]:
  // [batch.size(), vocab]. Tests hold them against single-stream decode.
  std::vector<float> forward_logits(std::span<const StreamToken> batch);

  // Teacher forcing through a prefill pass of several streams' chunks: the raw
  // logits of each chunk that ends a prompt, in order, [such chunks, vocab].
  // Tests hold them against each chunk prefilled alone.
  std::vector<float> forward_logits(std::span<const PromptChunk> chunks);

  // Runs a prompt (in chunks) from the stream's position and returns the
  // stream's next token (see set_sampling).
  int32_t prefill(std::span<const int32_t> tokens) { return prefill(0, tokens); }
  // With `images` (by stream position; PromptImage): their positions hold the
  // image-token id in `tokens`, their embeddings are the soft tokens, and
  // each image's rows see each other. The chunks are as long as a pass holds
  // but never cut an image; an image longer than prefill_chunk is refused.
  int32_t prefill(uint32_t stream, std::span<const int32_t> tokens, std::span<const PromptImage> images = {});
  // Runs tokens (in chunks) from the stream's position into its KV cache and
  // chooses no token: the part of a prompt before its last chunk.
  void feed(uint32_t stream, std::span<const int32_t> tokens, std::span<const PromptImage> images = {});
  // How many of `count` tokens fed from position `pos` one chunk of at most
  // `room` rows takes: as many as fit, but it ends before an image it would
  // cut (generation/generate.hpp feeds a long prompt a pass at a time by it).
  // 0 when an image starts at `pos` and is longer than `room`.
  static size_t chunk_tokens(uint32_t pos, size_t count, size_t room, std::span<const PromptImage> images);
  // Refuses an image among `count` tokens from `pos` that is longer than
  // `room` (callers check before chunk_tokens, which then never gives 0).
  static void check_images_fit(uint32_t pos, size_t count, size_t room, std::span<const PromptImage> images,
                               const char* what);

  // Several streams' prompt chunks in one prefill pass, every weight read once
  // for all of them (a server's new requests): distinct streams, each chunk
  // fed from its stream's position; together at most prefill_chunk rows, each
  // chunk after the first starting at a multiple of prefill_alignment().
  // Returns, per chunk, the stream's next token where it ends a prompt, else
  // -1. Every row's products, norms and attention are its own, so a chunk's
  // results are bit for bit those of the same chunk prefilled alone.
  std::vector<int32_t> prefill(std::span<const PromptChunk> chunks);
  // The same pass, started without waiting for it: decode steps of other
  // streams may run while it is in flight (on a second queue where the device
  // has one; with one stream, or one queue, they wait for it). Until
  // finish_prefill(), its streams take no other work (decode, rewind, reset,
  // sampling), and no other prefill starts.
  void begin_prefill(std::span<const PromptChunk> chunks);
  bool prefill_in_flight() const { return !in_flight_.empty(); }
  // Whether the pass in flight has finished (finish_prefill() then returns at once).
  bool prefill_ready() const { return prefill_lane_->stream.ready(); }
  // Waits for the pass in flight; returns what prefill(chunks) returns. A
  // failure leaves its streams where they were before it.
  std::vector<int32_t> finish_prefill();
  // Whether this engine's prefill passes can overlap its decode steps: a
  // decode lane of its own and a second queue.
  bool prefill_overlaps_decode() const { return decode_lane_ && ctx_.has_second_queue(); }
  // Tokens at whose multiples each chunk of a several-stream prefill pass
  // starts: the prefill attention tile's tokens, so that a tile holds one
  // stream's rows.
  uint32_t prefill_alignment() const { return prefill_->segment_tokens; }
  // Where a chunk after `rows` rows of a pass starts.
  uint32_t prefill_segment_start(uint32_t rows) const;
  // One pass's chunks from `waiting` (each a stream's prompt tokens still to
  // feed, in the order to take them): as many as the pass's rows hold, the
  // last cut short where the rows run out (then it does not end its prompt).
  std::vector<PromptChunk> prefill_pass(std::span<const PromptChunk> waiting) const;

  // One decode step of stream 0: feeds `token`, returns the next token.
  int32_t decode(int32_t token);

  // One batched decode step: feeds each listed stream its token (streams
  // distinct, any subset of the compiled ones, in any order) and returns their
  // next tokens, in the same order. Every weight is read once for the whole
  // step; each stream's result is the one decode() would give it alone.
  std::vector<int32_t> decode(std::span<const StreamToken> batch);
  // Speculative decoding's check (generation/speculative.hpp). Rows of the
  // verify pass: DeploymentConfig::draft_max + 1, or 0 where it has none.
  uint32_t verify_rows() const { return verify_ ? cfg_.draft_max + 1 : 0; }
  // Feeds `tokens` (1 to verify_rows() of them) to `stream` from its position
  // in one pass that reads every weight once, and returns the token chosen
  // after each: row i's is the one decode() would choose after tokens[0..i]
  // fed one at a time (the draw counter and the penalty history advance row
  // by row, and the rows' products are decode's, sum for sum). The stream
  // keeps every token fed; rewind() drops those a draft got wrong. Not for a
  // constrained stream (an allowed-token mask holds for one token).
  std::vector<int32_t> verify(uint32_t stream, std::span<const int32_t> tokens);
  // The stream's draw counter (tokens chosen since set_sampling: the random
  // number a sampled choice takes), and setting it, so that a draft model's
  // stream draws at each position what the target's draws there.
  uint32_t draws(uint32_t stream) const { return stream_state(stream).counter; }
  void set_draws(uint32_t stream, uint32_t n) { stream_state(stream).counter = n; }

  // The log-probabilities of the token last chosen for `stream` (by decode()
  // or by the prefill that ended its prompt), where its sampling asks for
  // them (SamplingParams::logprobs): read back from the pass that chose it,
  // so call it before the stream's lane runs its next pass.
  TokenLogprobs logprobs(uint32_t stream) const;

  // The recorded passes as text, dispatch by dispatch: the kernel, its
  // specialization constants (tiles, K splits, integer dot products, waits),
  // its workgroups and whether a barrier follows (unicorn-bench --plan).
  std::string plan() const;

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
    bool barrier_after = true;  // whether the pass waits for it before the next dispatch
  };
  struct Profile {
    std::vector<KernelTime> kernels;  // slowest first
    std::vector<DispatchTime> dispatches;
  };
  Profile profile(std::span<const int32_t> tokens);
  // The batched pass, for one token of each of streams 0 .. n-1 (at their positions).
  Profile profile_batch(uint32_t n);

 private:
  struct Graph;
  template <class WriteStep>
  Profile profile(const Graph& g, WriteStep&& write);


 public:
  // A weight slab's buffer (mapped when it lives in Gtt): tests check placement with it.
  const gpu::Buffer& weight_slab(size_t slab) const { return weight_slabs_[slab]; }

  // --- loading (called by the loader, engine/loader.hpp) ---

  // Copies a part's rows as a GGUF file stores them into the device. Float
  // formats are copied as they are; block formats go through the GPU into the
  // planar device layout (quants, then scales: see shaders/include/weights.glsl).
  void upload(const TensorSlot& t, size_t part, std::span<const std::byte> bytes);

  // Waits for the uploads still in flight and frees the staging buffers; the
  // loader calls it once every weight is submitted.
  void finish_uploads();
  // The last load's staging ring: where the host's time went (LoadReport).
  const gpu::StagingRing::Timing& upload_timing() const { return upload_timing_; }

  // Converts source rows (F32/F16/BF16, row-major, the part's rows) into the
  // part's format on the GPU; `add` is added to every value first.
  void convert(const TensorSlot& t, size_t part, std::span<const std::byte> source,
               SourceType type, float add);

 private:
  // Staging slots of 8 MiB: the whole ring (32 MiB) stays in the host's
  // last-level cache, so the copy threads write it and the device's DMA reads
  // it there, and each weight byte crosses host memory once (out of the page
  // cache), not three times. On two H100 leases a 27B Q4_0 (15.2 GB) loaded
  // in 0.39-0.58 s with four such slots, against 0.62-0.74 s with three of
  // 64 MiB; 4 and 16 MiB slots, and rings of 48 MiB or more, were slower
  // (notes/tuning.md, "Load time: a ring that stays in the cache").
  static constexpr uint64_t kStagingBytes = 8ull << 20;
  gpu::StagingRing& uploads();

  // Runs shaders/convert.comp over a part, one staging buffer of whole source
  // blocks at a time (a 2-D grid, so any count fits the group limits).
  void convert_part(const TensorSlot& t, const TensorPart& p, std::span<const std::byte> source,
                    SourceType type, float add);

  // What a recorded pass computes in besides the weights and the KV cache,
  // and the queue it runs on (see the first comment).
  struct Lane {
    Lane(gpu::Context& ctx, const DeploymentConfig& cfg, std::span<const ActivationSlot> acts, Pool pool,
         uint32_t rows_per_step, uint32_t queue, const std::string& what);
    // A one-token pass's products whose consumer waits on a counter, per
    // layer: q, k and v together (attention), o and down (their add_norm).
    static uint32_t wait_counters(const DeploymentConfig& cfg) { return 3 * cfg.model.layers; }
    gpu::BufferSet acts;
    // Host-visible, each by name below: the step's rows, the chosen tokens,
    // the sampler rows, the log-probabilities and each stream's allowed-token
    // mask ([streams, token_mask_words]).
    gpu::BufferSet host;
    enum HostBuffer : size_t { kStepRows, kChosen, kSamplerRows, kLogprobs, kMasks, kHostBuffers };
    const gpu::Buffer& step_rows() const { return host[kStepRows]; }
    const gpu::Buffer& chosen() const { return host[kChosen]; }
    const gpu::Buffer& sampler_rows() const { return host[kSamplerRows]; }
    const gpu::Buffer& logprob_rows() const { return host[kLogprobs]; }
    const gpu::Buffer& masks() const { return host[kMasks]; }
    gpu::BufferSet partials;  // per-slice logit maxima, [logit rows, kLogitParts]
    gpu::BufferSet counters;  // finished workgroups, per product whose consumer waits for it
    gpu::Stream stream;
    std::optional<gpu::BufferSet> logits_readback;  // teacher forcing
    vk::DescriptorBufferInfo act(Act a) const { return acts[size_t(a)].whole(); }
    vk::DescriptorBufferInfo step() const { return step_rows().whole(); }
  };
  // The decode steps' lane: their own with several streams, else the only one.
  Lane& decode_lane() { return decode_lane_ ? *decode_lane_ : *prefill_lane_; }
  // What a lane's submission waits for first: the other lane's finished work.
  const gpu::Stream* other_lane(const Lane& lane) const {
    if (!decode_lane_) return nullptr;
    return &lane == &*decode_lane_ ? &prefill_lane_->stream : &decode_lane_->stream;
  }

  struct Graph {
    vk::raii::CommandBuffer commands{nullptr};
    Lane* lane = nullptr;  // whose activations and host buffers it binds, and whose queue runs it
    std::vector<gpu::Dispatch> dispatches;
    bool splitk = false;  // a batched pass whose products run on matmul_coop_splitk
    // A chunk pass: its attention tiles' tokens, at whose multiples each
    // stream's segment of rows starts (1: attention row by row).
    uint32_t segment_tokens = 1;
  };
  // What a recorded pass is: prompt chunks (matrix-matrix kernels), one token
  // per stream (matrix-vector kernels), or one token per stream with the
  // products on tensor units (matmul_coop_splitk, for steps of many streams).
  // Verify: several consecutive tokens of one stream on the matrix-vector
  // kernels, each row's keys and values written before any row attends
  // (speculative decoding's check, EngineCore::verify).
  enum class PassKind { Prefill, Decode, DecodeSplitK, Verify };

  const gpu::Buffer& slab_of(const TensorSlot& t, const TensorPart& p) const {
    return t.arena == Arena::Weights ? weight_slabs_[p.slab] : kv_slabs_[p.slab];
  }

  // Before any allocation: the compile-time pool totals (layout/budget.hpp)
  // against the heaps of the memory types those pools get on this device.
  void check_pools_fit() const;

  // One BufferSet per pool from that pool's slabs (a contiguous run: the layout
  // packs pool by pool), and a by-slab-index view of them.
  void allocate_by_pool(std::span<const uint64_t> slab_bytes, std::span<const Pool> slab_pools,
                        std::array<gpu::BufferSet, kPoolCount>& sets, std::vector<gpu::Buffer>& slabs,
                        const std::string& what);

  // The context an engine is created with: 0 is the deployment's default
  // (DeploymentConfig::context_by_default); more than the compiled one would
  // need a KV cache the compile-time checks never saw.
  static uint32_t checked_context(const DeploymentConfig& c, uint32_t asked) {
    if (asked == 0) return c.context_by_default();
    if (asked > c.max_context)
      throw Error("context: " + std::to_string(asked) + " tokens asked; this engine is compiled for at most " +
                  std::to_string(c.max_context) + " (DeploymentConfig::max_context, which the compile-time "
                  "memory checks bound): ask for fewer, or compile a deployment with a longer context");
    return asked;
  }
  // The streams an engine is created with: 0 is the compiled number, the most
  // its compile-time checks and the batched pass's tiles were sized for.
  static uint32_t checked_streams(const DeploymentConfig& c, uint32_t asked) {
    if (asked == 0) return c.streams;
    if (asked > c.streams)
      throw Error("streams: " + std::to_string(asked) + " asked; this engine is compiled for at most " +
                  std::to_string(c.streams) + " (DeploymentConfig::streams, a server's slots): ask for fewer, "
                  "or compile a deployment with more");
    return asked;
  }
  // The run-time layout's weights and activations are the compiled layout's
  // (only the KV cache depends on the context and the streams): its run-time
  // witness; `compiled_config` is the deployment as compiled.
  void check_against_compiled(const LayoutView& compiled, const DeploymentConfig& compiled_config) const;

  void check_device_limits() const;

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
    std::vector<uint32_t> allowed;  // its allowed-token mask (constrain()); empty: every token
    // Where its last chosen token's log-probabilities are (logprobs()).
    struct Sampled {
      const Lane* lane = nullptr;
      uint32_t row = 0;
    } sampled;
  };
  // Tokens were appended to a stream (before the pass that writes their keys
  // runs, so that a failed pass counts as written): the ring now lacks every
  // position more than its length behind the last.
  void note_written(StreamState& s) const;
  StreamState& stream_state(uint32_t stream);
  const StreamState& stream_state(uint32_t stream) const;
  void check_stream(uint32_t stream) const;

  void check_tokens(uint32_t stream, std::span<const int32_t> tokens) const;

  void check_batch(std::span<const StreamToken> batch) const;

  // A chunk of one stream's tokens at consecutive positions; rows from
  // logit_begin (logit_count of them) get logits.
  std::vector<StepRow> chunk_rows(uint32_t stream, std::span<const int32_t> tokens, uint32_t logit_begin,
                                  uint32_t logit_count) const;
  // A decode step: one token per stream, each at its stream's position; every
  // row gets logits.
  void write_step(Lane& lane, std::span<const StreamToken> batch);
  void write_step(Lane& lane, std::span<const StepRow> rows, uint32_t logit_count);

  // Teacher forcing: a chunk of one stream's tokens, every row's logits.
  void run_chunk(const Graph& graph, uint32_t stream, std::span<const int32_t> tokens,
                 std::span<const PromptImage> images = {});

  // --- images in a prompt (PromptImage) ---

  // Refuses images of a chunk of `n` tokens from `pos` that the chunk would
  // cut, that overlap, or whose soft tokens their buffer does not hold.
  void check_images(uint32_t stream, uint32_t pos, size_t n, std::span<const PromptImage> images) const;
  // An image's soft token in a pass: x row `row` takes the hidden-size row at
  // `offset` bytes of `source`.
  struct SoftRow {
    uint32_t row;
    const gpu::Buffer* source;
    uint64_t offset;
  };
  // Marks a chunk's rows (positions from rows[0].pos; the pass's rows from
  // `first_row`) that are an image's (check_images first): no token id, and
  // they see to the image's end; their soft tokens go to `soft`.
  void place_images(std::span<StepRow> rows, uint32_t first_row, std::span<const PromptImage> images,
                    std::vector<SoftRow>& soft) const;
  // Copies the soft tokens into the lane's x rows before its pass (embed.comp
  // leaves those rows as they are).
  void copy_soft_tokens(Lane& lane, std::span<const SoftRow> soft);

  // A decode pass over a written step: logit row i samples for batch[i].
  void run(const Graph& graph, std::span<const StreamToken> batch);
  // Submits a prefill chunk; a failure leaves the stream where it was.
  void submit(const Graph& graph, size_t stream_tokens_before, uint32_t stream);

  // Logit row `row` samples for `stream`: its parameters, its counter, and its
  // penalty history (the distinct ids among its last repeat_last_n tokens,
  // each with its count). Every stream draws with key 0, so a seed gives the
  // same tokens whichever stream, and whichever row of a step, runs it.
  void write_sampler(Lane& lane, uint32_t row, uint32_t stream);

  // The first n rows of logits of the lane's last pass, into out [n, vocab].
  void read_logits(Lane& lane, uint32_t n, float* out);

  int32_t chosen_token(const Lane& lane, uint32_t row) const;
  // Logit row `logit_row`'s log-probabilities, as logprobs.comp left them.
  TokenLogprobs read_logprobs(const Lane& lane, uint32_t logit_row) const;

  // Refuses work on a stream of the prefill pass in flight.
  void check_not_in_flight(uint32_t stream, const char* what) const;

  // The pipeline of a kernel with these constants (built once, in the cache).
  template <class Spec>
  const gpu::Kernel& kernel(const kernels::Shader<Spec>& shader, const Spec& spec) {
    return kernels_->get(std::string(spirv::name(shader.module)), spirv::words(shader.module), shader.bindings, spec);
  }

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
  // The weight buffers from the layout, and every pass the engine keeps recorded.
  void allocate_weights();
  void record_passes();
  // The recorded pass for a step of n streams' tokens.
  const Graph& batch_pass(uint32_t n) const {
    if (!batch_) return *decode_;
    const Graph& largest = batch_small_ && n <= kernels::kSplitKSmallTokens ? *batch_small_ : *batch_;
    if (batch_passes_ == BatchPasses::Fixed) return largest;  // one kernel family for every size
    return n <= 1 ? *decode_ : largest;
  }

  gpu::Context& ctx_;
  DeploymentConfig cfg_;     // as compiled, but the streams (EngineOptions::streams) and the embedding's format (hold_embedding_as)
  uint32_t kv_context_;      // KV cache positions per stream (EngineOptions::context)
  std::optional<RunLayout> run_layout_;  // cfg_ with kv_context_
  LayoutView layout_;                    // of run_layout_
  std::shared_ptr<gpu::KernelCache> kernels_;  // the context's, shared by its engines
  gpu::DescriptorArena sets_;
  std::array<gpu::BufferSet, kPoolCount> weight_sets_, kv_sets_;  // per pool
  std::vector<gpu::Buffer> weight_slabs_, kv_slabs_;               // by layout slab index
  std::optional<Lane> prefill_lane_, decode_lane_;  // decode_lane_: with several streams
  std::optional<gpu::StagingRing> uploads_;         // while loading
  gpu::StagingRing::Timing upload_timing_;          // the last load's
  // Prompt chunks (logits of one row), single tokens, one token of each of
  // several streams (streams > 1), and, recorded on first use, prompt chunks
  // with a row of logits for each of several streams' prompts, and with every
  // token's logits (teacher forcing).
  // With DeploymentConfig::draft_max, the verify pass: draft_max + 1 rows of one stream.
  std::optional<Graph> prefill_, decode_, batch_, batch_small_, prefill_many_logits_,
      prefill_all_logits_, verify_;
  Tuning tuning_;  // kernel shapes (EngineOptions::tuning)
  bool tensor_units_;  // prefill and batched products, prefill attention on fp16 tensor units
  bool int_dot_;       // decode's block-format products on matvec_dot (Tuning::matvec_int_dot, Products)
  uint32_t context_limit_ = kv_context_;
  bool raw_logits_ = false;  // RawLogits: greedy rows, no penalty
  BatchPasses batch_passes_ = BatchPasses::BySize;
  std::vector<StreamState> streams_ = std::vector<StreamState>(cfg_.streams);
  // The prefill pass in flight (begin_prefill): its chunks' streams, their
  // token counts before it, and which chunks end a prompt.
  struct InFlight {
    uint32_t stream;
    size_t tokens_before;
    bool ends_prompt;
  };
  std::vector<InFlight> in_flight_;
};

}  // namespace unicorn::detail

// Each job's definitions (see the first comment), here when header-only, else
// in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE
#include "unicorn/engine/definitions.hpp"
#endif
