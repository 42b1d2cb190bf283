// Label golden: the engine's device memory on the tiny model: tensors placed
// in Gtt, the heap check before anything is allocated, and the KV cache an
// engine is created with, for the context (EngineOptions::context) and the
// streams (EngineOptions::streams, engine/fit.hpp's choice) asked.

#include "model_fixture.hpp"
#include "unicorn/engine/fit.hpp"
#include "unicorn/gemma3.hpp"

// --- placement: tensors in Gtt live in host-visible memory, and the forward
// pass reads them there ---
namespace {
// The FFN of layers 2..5 and the embedding (also the LM head) in Gtt.
template <Format F>
struct TinyGtt {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3Tiny, schemes::all(F, Format::F32), 256, 32)
          .placed(placement::everything_in(Pool::Vram)
                      .with(Group::Ffn, Layers{2, 6}, Pool::Gtt)
                      .with(Group::Embeddings, Pool::Gtt));
};

template <class D>
void expect_slabs_in_their_pools() {
  Engine<D> engine(context(), options());
  const auto& L = Engine<D>::kLayout;
  size_t gtt = 0;
  for (size_t i = 0; i < L.weight_slab_pools.size(); ++i) {
    // Gtt slabs are mapped (host-visible); Vram slabs are device-local and never mapped.
    EXPECT_EQ(engine.core().weight_slab(i).mapped != nullptr, L.weight_slab_pools[i] == Pool::Gtt)
        << "weight slab " << i;
    gtt += L.weight_slab_pools[i] == Pool::Gtt;
  }
  EXPECT_GE(gtt, 1u);
  for (const auto& t : L.tensors)
    EXPECT_EQ(t.pool, t.role == Role::Embedding || t.role == Role::OutputNorm ||
                              (group_of(t.role) == Group::Ffn && t.layer >= 2)
                          ? Pool::Gtt
                          : Pool::Vram)
        << t.gguf_name();
}
}  // namespace

TEST_F(Model, GttPlacementSlabsAreHostVisible) { expect_slabs_in_their_pools<TinyGtt<Format::Q8_0>>(); }
// Safetensors: converted on the GPU straight into the Gtt slabs.
TEST_F(Model, GttPlacementSafetensorsQ8_0) {
  expect_matches_golden<TinyGtt<Format::Q8_0>>(tiny_dir(), "q8_0", 1e-3);
}
// GGUF: the host writes Gtt slabs through their mapping (no staging copy).
TEST_F(Model, GttPlacementGgufQ4_0) {
  expect_matches_golden<TinyGtt<Format::Q4_0>>(tiny_gguf("Q4_0"), "q4_0", 1e-3);
}

// The run-time heap check, with made-up heaps: names the pool, the bytes
// needed and available, and the shortfall.
TEST(Placement, HeapCheckNamesThePoolAndTheShortfall) {
  const gpu::Context::Heap heaps[] = {{.size = 512ull << 20, .available = 500ull << 20, .device_local = true},
                                      {.size = 32ull << 30, .available = 30ull << 30, .device_local = false}};
  const gpu::PoolNeed fits[] = {{Pool::Vram, 400ull << 20, 0}, {Pool::Gtt, 20ull << 30, 1}};
  EXPECT_NO_THROW(gpu::check_pools_fit("fake APU", fits, heaps));
  const gpu::PoolNeed vram_over[] = {{Pool::Vram, 8ull << 30, 0}, {Pool::Gtt, 1ull << 30, 1}};
  try {
    gpu::check_pools_fit("fake APU", vram_over, heaps);
    FAIL() << "8 GiB in a 512 MiB heap must be refused";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "fake APU");
    EXPECT_CONTAINS(e.what(), "pool Vram needs 8.00 GiB (8589934592 bytes)");
    EXPECT_CONTAINS(e.what(), "has 0.49 GiB (524288000 bytes) available");
    EXPECT_CONTAINS(e.what(), "short by 7.51 GiB");
  }
  // One heap for both pools (lavapipe, APUs whose types share a heap): summed.
  const gpu::PoolNeed shared[] = {{Pool::Vram, 20ull << 30, 1}, {Pool::Gtt, 20ull << 30, 1}};
  try {
    gpu::check_pools_fit("fake", shared, heaps);
    FAIL() << "40 GiB in a 30 GiB heap must be refused";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "pool Vram + Gtt needs 40.00 GiB");
  }
}

// The same check on the real device, before anything is allocated: Gemma 3 27B
// in F32 with a 128K context for 8 streams (272 GiB) fits no machine here.
namespace {
struct Huge {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3_27B, schemes::kF32, 131072).with_streams(8);
};
}  // namespace
TEST_F(Model, LayoutLargerThanTheDeviceIsRefused) {
  try {
    Engine<Huge> engine(context(), options());
    FAIL() << "a 272 GiB layout must be refused";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "the placement does not fit");
    EXPECT_CONTAINS(e.what(), "pool Vram");
    EXPECT_CONTAINS(e.what(), "short by");
  }
}

// --- the context chosen at creation (EngineOptions::context, the CLI's -c) ---
// A context below the compiled one allocates a shorter KV cache: the global
// layers keep one slot per position, the sliding-window layers their ring of
// window + chunk positions (16 + 32 here), or the context where it is
// shorter. Kernels index the cache by position modulo its slots, so a prompt
// that fits gives the full-context engine's bits, in both recorded passes;
// past the context is an error, and a context above the compiled one is
// refused at creation, naming the compiled limit.
namespace {
// Bytes of KV cache per stream for a context: K and V, kv_heads rows of head_dim each per slot.
uint64_t tiny_kv_bytes(uint32_t context, uint32_t streams, Format kv) {
  const auto& m = kGemma3Tiny;
  const uint64_t per_slot = 2ull * m.kv_heads * m.head_dim * (kv == Format::F16 ? 2 : 4);
  const uint64_t global = m.global_layers(), local = m.layers - global;
  return streams * per_slot * (global * context + local * std::min<uint64_t>(context, 16 + 32));
}
uint64_t sum(std::span<const uint64_t> v) { return std::accumulate(v.begin(), v.end(), uint64_t{0}); }
}  // namespace

TEST_F(Model, ShorterContextAllocatesLessAndComputesTheSame) {
  using D = Tiny<Format::Q8_0, Format::F16>;
  const auto& prompt = golden().prompt;  // 96 tokens
  const uint32_t V = kGemma3Tiny.vocab;
  Engine<D> full(context(), options());
  full.load(tiny_gguf("Q8_0"));
  const auto want_prefill = full.forward_logits(prompt);
  full.reset();
  const auto want_decode = full.core().forward_logits(std::span(prompt).first(40), detail::EngineCore::Pass::Decode);
  full.reset();
  std::vector<int32_t> want_tokens{full.prefill(prompt)};
  for (int i = 0; i < 4; ++i) want_tokens.push_back(full.decode(want_tokens.back()));
  const DeviceMemory full_memory = full.core().device_memory();
  EXPECT_EQ(full.core().context_size(), 256u);
  EXPECT_EQ(sum(full.core().layout().kv_slab_bytes), tiny_kv_bytes(256, 1, Format::F16));

  // 100 positions: the global layers shrink, the ring does not; 40: both.
  for (uint32_t ctx : {100u, 40u}) {
    Engine<D> engine(context(), options({.context = ctx}));
    engine.load(tiny_gguf("Q8_0"));
    auto& core = engine.core();
    EXPECT_EQ(core.context_size(), ctx);
    EXPECT_EQ(core.context_limit(), ctx);
    EXPECT_EQ(core.layout().global_kv_slots, ctx);
    EXPECT_EQ(core.layout().local_kv_slots, std::min(ctx, 48u));
    const uint64_t kv = tiny_kv_bytes(ctx, 1, Format::F16);
    EXPECT_EQ(sum(core.layout().kv_slab_bytes), kv);
    const DeviceMemory m = core.device_memory();
    EXPECT_GE(m[Pool::Vram].kv_cache, kv);
    EXPECT_LT(m[Pool::Vram].kv_cache, full_memory[Pool::Vram].kv_cache);
    EXPECT_LT(m.device(), full_memory.device());
    EXPECT_EQ(m[Pool::Vram].weights, full_memory[Pool::Vram].weights);
    EXPECT_EQ(m[Pool::Vram].activations, full_memory[Pool::Vram].activations);
    std::printf("[ context ] %3u positions: KV cache %llu bytes allocated (%llu at 256), device %llu (%llu)\n", ctx,
                (unsigned long long)m.kv_cache(), (unsigned long long)full_memory.kv_cache(),
                (unsigned long long)m.device(), (unsigned long long)full_memory.device());

    const size_t fits = std::min<size_t>(prompt.size(), ctx);
    const auto prefill = engine.forward_logits(std::span(prompt).first(fits));
    EXPECT_EQ(std::memcmp(prefill.data(), want_prefill.data(), fits * V * 4), 0)
        << "context " << ctx << ": the prefill pass's logits differ from the full context's";
    engine.reset();
    const auto decode = core.forward_logits(std::span(prompt).first(40), detail::EngineCore::Pass::Decode);
    EXPECT_EQ(std::memcmp(decode.data(), want_decode.data(), 40 * V * 4), 0)
        << "context " << ctx << ": the decode pass's logits differ from the full context's";
    engine.reset();
    if (ctx >= prompt.size() + 4) {  // the prompt and 4 tokens: the greedy continuation up to the context
      std::vector<int32_t> tokens{engine.prefill(prompt)};
      for (int i = 0; i < 4; ++i) tokens.push_back(engine.decode(tokens.back()));
      EXPECT_EQ(tokens, want_tokens);
      EXPECT_EQ(engine.position(), ctx);
      EXPECT_THROW_WITH(engine.decode(tokens.back()), "exceed the context of " + std::to_string(ctx) + " tokens");
      EXPECT_EQ(engine.position(), ctx) << "a refused token moved the sequence";
    } else {
      EXPECT_THROW_WITH(engine.prefill(prompt), "exceed the context of " + std::to_string(ctx) + " tokens");
      EXPECT_EQ(engine.position(), 0u);
    }
    EXPECT_THROW_WITH(core.set_context_limit(ctx + 1), "holds 1 to " + std::to_string(ctx));
  }
  EXPECT_THROW_WITH(Engine<D>(context(), options({.context = 257})), "compiled for at most 256");
}

namespace {
// The tiny model on 18 streams, for the batched tests below.
using Wide = TinyWide<Format::Q8_0, 18>;
// Streams 4, 0 and 9 prefilled with prompts of their own, then the raw logits
// of one batched step of the three.
std::vector<float> step_logits(Engine<Wide>& engine) {
  const auto& prompt = golden().prompt;
  std::vector<StreamToken> batch;
  for (uint32_t s : {4u, 0u, 9u}) batch.push_back({s, engine.prefill(s, std::span(prompt).subspan(s, 20 + s))});
  return engine.core().forward_logits(batch);
}
}  // namespace

// Several streams with a shorter context: each stream's rows shrink, and a
// batched step's logits are the bits of the full-context engine's.
TEST_F(Model, ShorterContextBatchedDecode) {
  using D = Wide;
  Engine<D> full(context(), options());
  full.load(tiny_gguf("Q8_0"));
  Engine<D> engine(context(), options({.context = 64}));
  engine.load(tiny_gguf("Q8_0"));
  EXPECT_EQ(sum(engine.core().layout().kv_slab_bytes), tiny_kv_bytes(64, 18, Format::F16));
  EXPECT_LT(engine.core().device_memory().kv_cache(), full.core().device_memory().kv_cache());
  const auto want = step_logits(full), got = step_logits(engine);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
}

// The KV cache of Gemma 3 27B (Google's QAT file: F16 cache) for its whole
// 128K context, the 32K its official engine takes by default, and 8K, from the
// run-time layout the engine allocates (no device): 10 global layers keep
// every position, 52 sliding-window layers a ring of 1024 + 512; K and V of
// 16 heads of 128 in F16 are 8 KiB per layer and position.
TEST(Layout, ContextSetsTheKvBytesOf27B) {
  const DeploymentConfig& c = deployments::Gemma3_27B_QAT::kConfig;
  EXPECT_EQ(c.max_context, 131072u);
  EXPECT_EQ(c.context_by_default(), 32768u);
  const uint64_t per_slot = 2ull * 16 * 128 * 2;
  for (uint32_t ctx : {131072u, 32768u, 8192u}) {
    const RunLayout L(c.with_context(ctx));
    const uint64_t kv = sum(L.view().kv_slab_bytes), weights = sum(L.view().weight_slab_bytes);
    EXPECT_EQ(kv, per_slot * (10ull * ctx + 52ull * (1024 + 512))) << ctx;
    std::printf("[ layout ] gemma3-27b Q4_0 QAT, context %6u: KV cache %.3f GiB (%llu bytes), weights %.3f GiB\n",
                ctx, kv / 1073741824.0, (unsigned long long)kv, weights / 1073741824.0);
  }
}

// A deployment compiled for 256 positions that takes 64 unless asked
// (DeploymentConfig::default_context, as Gemma 3's 128K engines take 32K):
// its engine's KV cache holds 64; asked for the whole, 256; more is refused.
namespace {
struct TinyDefault64 {
  static constexpr DeploymentConfig kConfig = Tiny<Format::Q8_0, Format::F16>::kConfig.with_default_context(64);
};
}  // namespace
TEST_F(Model, DefaultContextBelowTheCompiledOne) {
  using D = TinyDefault64;
  static_assert(D::kConfig.max_context == 256 && D::kConfig.context_by_default() == 64);
  Engine<D> engine(context(), options());
  EXPECT_EQ(engine.context_size(), 64u);
  EXPECT_EQ(sum(engine.core().layout().kv_slab_bytes), tiny_kv_bytes(64, 1, Format::F16));
  Engine<D> whole(context(), options({.context = 256}));
  EXPECT_EQ(whole.context_size(), 256u);
  EXPECT_EQ(sum(whole.core().layout().kv_slab_bytes), tiny_kv_bytes(256, 1, Format::F16));
  EXPECT_THROW_WITH(Engine<D>(context(), options({.context = 257})), "compiled for at most 256");
}

// --- the streams chosen at creation (EngineOptions::streams, a server's slots) ---
// Fewer streams than compiled allocate a KV cache for those alone, and a
// batched step of them gives the bits of the compiled engine's; one stream
// runs as a one-stream engine does. A stream past them does not exist, and
// more than compiled is refused at creation.
TEST_F(Model, FewerStreamsAllocateLessAndComputeTheSame) {
  using D = Wide;
  const auto& prompt = golden().prompt;
  Engine<D> full(context(), options());
  full.load(tiny_gguf("Q8_0"));
  EXPECT_EQ(full.streams(), 18u);
  Engine<D> engine(context(), options({.streams = 10}));
  engine.load(tiny_gguf("Q8_0"));
  EXPECT_EQ(engine.streams(), 10u);
  EXPECT_EQ(sum(engine.core().layout().kv_slab_bytes), tiny_kv_bytes(256, 10, Format::F16));
  EXPECT_LT(engine.core().device_memory().kv_cache(), full.core().device_memory().kv_cache());
  const auto want = step_logits(full), got = step_logits(engine);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
  EXPECT_THROW_WITH(engine.prefill(10, std::span(prompt).first(4)), "stream 10 does not exist: this engine has 10");

  Engine<D> one(context(), options({.streams = 1}));
  one.load(tiny_gguf("Q8_0"));
  EXPECT_EQ(sum(one.core().layout().kv_slab_bytes), tiny_kv_bytes(256, 1, Format::F16));
  full.reset();
  std::vector<int32_t> want_tokens{full.prefill(0, prompt)}, tokens{one.prefill(0, prompt)};
  for (int i = 0; i < 3; ++i) {
    want_tokens.push_back(full.decode(std::vector<StreamToken>{{0, want_tokens.back()}})[0]);
    tokens.push_back(one.decode(std::vector<StreamToken>{{0, tokens.back()}})[0]);
  }
  EXPECT_EQ(tokens, want_tokens);
  EXPECT_THROW_WITH(Engine<D>(context(), options({.streams = 19})), "compiled for at most 18");
}

// The bisection of engine/fit.hpp with made-up heaps: 2 GiB that every count
// of streams takes and 1 GiB a stream, in a heap of 10 GiB free, of which a
// 32nd (320 MiB) is kept: 7 streams; no more than compiled; 56 in the other
// heap's 60 GiB; none where the fixed part alone leaves no room; pools on one
// heap summed.
TEST(Fit, MostStreamsThatFitAHeap) {
  const gpu::Context::Heap heaps[] = {{.size = GiB(12), .available = GiB(10), .device_local = true},
                                      {.size = GiB(64), .available = GiB(60), .device_local = false}};
  const auto vram = [](uint64_t fixed, uint64_t per, uint32_t heap) {
    return [=](uint32_t n) { return std::vector<gpu::PoolNeed>{{Pool::Vram, fixed + n * per, heap}}; };
  };
  EXPECT_EQ(fit_headroom(GiB(10)), MiB(320));
  EXPECT_EQ(fit_headroom(GiB(4)), MiB(256));
  EXPECT_EQ(most_streams_that_fit(64, vram(GiB(2), GiB(1), 0), heaps), 7u);
  EXPECT_EQ(most_streams_that_fit(5, vram(GiB(2), GiB(1), 0), heaps), 5u);
  EXPECT_EQ(most_streams_that_fit(64, vram(GiB(2), GiB(1), 1), heaps), 56u);  // 60 GiB less 1.875 less 2
  EXPECT_EQ(most_streams_that_fit(64, vram(GiB(10), GiB(1), 0), heaps), 0u);
  const auto both = [](uint32_t n) {
    return std::vector<gpu::PoolNeed>{{Pool::Vram, GiB(2) + n * GiB(1), 0}, {Pool::Gtt, n * GiB(1), 0}};
  };
  EXPECT_EQ(most_streams_that_fit(64, both, heaps), 3u);
}

// On the device: with its memory whole, every compiled stream fits; with
// what the engine's budget for 5 streams needs, the headroom and half a
// stream's KV cache, 5 fit, and an engine of them is created and runs.
TEST_F(Model, StreamsThatFitTheDevice) {
  using D = Wide;
  const StreamsFit all = streams_that_fit(context(), D::kConfig);
  EXPECT_EQ(all.streams, 18u);
  EXPECT_EQ(all.compiled, 18u);
  EXPECT_EQ(all.kv_bytes_per_stream, tiny_kv_bytes(256, 1, Format::F16));
  EXPECT_EQ(streams_that_fit(context(), D::kConfig, 64).kv_bytes_per_stream, tiny_kv_bytes(64, 1, Format::F16));
  const auto need = [](uint32_t n) {
    const DeploymentConfig c = D::kConfig.with_streams(n);
    const RunLayout layout(c);
    const Budget b = placement_budget(c, layout.view());
    return b.need(Pool::Vram) + b.need(Pool::Gtt);
  };
  gpu::Context limited(tools::device_from_env());
  limited.limit_memory(need(5) + MiB(256) + all.kv_bytes_per_stream / 2);
  const StreamsFit five = streams_that_fit(limited, D::kConfig);
  EXPECT_EQ(five.streams, 5u);
  EXPECT_EQ(five.free_bytes, need(5) + MiB(256) + all.kv_bytes_per_stream / 2);
  Engine<D> engine(limited, options({.streams = five.streams}));
  engine.load(tiny_gguf("Q8_0"));
  EXPECT_EQ(engine.streams(), 5u);
  EXPECT_GE(engine.prefill(4, std::span(golden().prompt).first(8)), 0);
  limited.limit_memory(MiB(64));
  EXPECT_EQ(streams_that_fit(limited, D::kConfig).streams, 1u) << "none fits: 1, whose engine then says why";
}
