// Label golden (and loader): the tiny Gemma 3 model, end to end on the Vulkan
// device, against Hugging Face transformers' fp32 logits (fixtures/tiny, made
// by make_golden.py). Both file paths (safetensors converted on the GPU, GGUF
// written by unicorn-convert) and both recorded passes (prefill, decode).

#include "model_fixture.hpp"

// --- safetensors: F32 weights converted to each format on the GPU ---
TEST_F(Model, SafetensorsF32) { expect_matches_golden<Tiny<Format::F32>>(tiny_dir(), "f32", kF32Tolerance); }
TEST_F(Model, SafetensorsBF16) { expect_matches_golden<Tiny<Format::BF16>>(tiny_dir(), "bf16", 1e-3); }
TEST_F(Model, SafetensorsQ8_0) { expect_matches_golden<Tiny<Format::Q8_0>>(tiny_dir(), "q8_0", 1e-3); }
TEST_F(Model, SafetensorsQ4_0) { expect_matches_golden<Tiny<Format::Q4_0>>(tiny_dir(), "q4_0", 1e-3); }

// --- GGUF: the same weights written by unicorn-convert (ggml's quantizers) ---
TEST_F(Model, GgufF32) { expect_matches_golden<Tiny<Format::F32>>(tiny_gguf("F32"), "f32", kF32Tolerance); }

// Products follow the scheme (EngineOptions::products): an F32 deployment
// never takes fp16 operands unless asked, every other scheme takes them
// wherever the device has tensor units; asked for fp16, an F32 deployment
// runs on them (where there are some) within their tolerance; asked for fp32,
// a quantized one keeps the fp32 tolerance in prefill.
TEST_F(Model, ProductsFollowTheScheme) {
  using Rule = detail::EngineCore;
  static_assert(!Rule::fp16_products(Products::by_scheme, Tiny<Format::F32>::kConfig.scheme));
  static_assert(Rule::fp16_products(Products::by_scheme, Tiny<Format::BF16>::kConfig.scheme));
  static_assert(Rule::fp16_products(Products::by_scheme, Tiny<Format::Q4_0>::kConfig.scheme));
  static_assert(Rule::fp16_products(Products::fp16, Tiny<Format::F32>::kConfig.scheme));
  static_assert(!Rule::fp16_products(Products::fp32, Tiny<Format::Q8_0>::kConfig.scheme));
  const bool units = context().info().coopmat;
  EngineOptions fp16 = options(), fp32 = options();
  fp16.products = Products::fp16;
  fp32.products = Products::fp32;
  EXPECT_FALSE(Engine<Tiny<Format::F32>>(context(), options()).tensor_units());
  EXPECT_EQ(Engine<Tiny<Format::F32>>(context(), fp16).tensor_units(), units);
  EXPECT_EQ(Engine<Tiny<Format::Q8_0>>(context(), options()).tensor_units(), units);
  expect_matches_golden<Tiny<Format::F32>>(tiny_dir(), "f32", kF32Tolerance, fp16);
  expect_matches_golden<Tiny<Format::Q8_0>>(tiny_gguf("Q8_0"), "q8_0", 1e-3, fp32);
}
TEST_F(Model, GgufBF16) { expect_matches_golden<Tiny<Format::BF16>>(tiny_gguf("BF16"), "bf16", 1e-3); }
TEST_F(Model, GgufQ8_0) { expect_matches_golden<Tiny<Format::Q8_0>>(tiny_gguf("Q8_0"), "q8_0", 1e-3); }
TEST_F(Model, GgufQ4_0) { expect_matches_golden<Tiny<Format::Q4_0>>(tiny_gguf("Q4_0"), "q4_0", 1e-3); }
// The same on integer dot products wherever the device has them (lavapipe
// emulates them, so by default it keeps the float kernel).
TEST_F(Model, GgufQ4_0OnIntegerDotProducts) {
  if (!context().info().int_dot) GTEST_SKIP() << "no VK_KHR_shader_integer_dot_product";
  EngineOptions o = options();
  o.tuning.matvec_int_dot = Tuning::IntDot::WhereSupported;
  expect_matches_golden<Tiny<Format::Q4_0>>(tiny_gguf("Q4_0"), "q4_0", 1e-3, o);
  Engine<Tiny<Format::Q4_0>> engine(context(), o);
  EXPECT_TRUE(engine.core().int_dot());
  // K split over workgroups, as the 27B's down projection is: here every row
  // of more than 64 inputs (o: 128 in 2 slices, down: 192 in 3).
  o.tuning.matvec_dot_split_in_features = 64;
  expect_matches_golden<Tiny<Format::Q4_0>>(tiny_gguf("Q4_0"), "q4_0", 1e-3, o);
}

// The load's report says where its time went: the file's check, then the
// staging ring's waits, copies and submissions, within the whole.
TEST_F(Model, LoadReportHasItsPhases) {
  Engine<Tiny<Format::Q4_0>> engine(context(), options());
  const LoadReport r = engine.load(tiny_gguf("Q4_0"));
  EXPECT_EQ(r.format, "GGUF");
  EXPECT_GT(r.staging.submissions, 0u) << "the Q4_0 blocks go through the staging ring";
  EXPECT_GT(r.staging.copy_seconds, 0.0);
  EXPECT_GT(r.check_seconds, 0.0);
  EXPECT_LE(r.check_seconds + r.staging.wait_seconds + r.staging.copy_seconds + r.staging.submit_seconds,
            r.seconds);
}

// Teacher forcing through the decode pass, then through prefill: every row of
// the prefill's logits, as a fresh engine's (the pass with a row of logits per
// token was recorded by whichever call came first, and a decode's recorded it
// with one row: rows 1.. of each chunk were never written).
TEST_F(Model, PrefillLogitsAfterDecodeLogits) {
  Engine<Tiny<Format::Q8_0>> a(context(), options()), b(context(), options());
  a.load(tiny_gguf("Q8_0"));
  b.load(tiny_gguf("Q8_0"));
  const auto& g = golden();
  const auto fresh = b.forward_logits(g.prompt);
  (void)a.core().forward_logits(std::span(g.prompt).first(3), detail::EngineCore::Pass::Decode);
  a.reset();
  const auto after = a.forward_logits(g.prompt);
  ASSERT_EQ(after.size(), fresh.size());
  size_t differ = 0;
  for (size_t i = 0; i < fresh.size(); ++i)
    differ += std::bit_cast<uint32_t>(fresh[i]) != std::bit_cast<uint32_t>(after[i]);
  EXPECT_EQ(differ, 0u) << "of " << fresh.size() << " logits";
}

// --- products split over K (matmul_coop's SPLITS; the post-norms and geglu add the slices) ---
// The tiny model's K is too short to split by default (kernels::kCoopMinSplitSteps);
// Tuning::coop_split_steps = 1 lets each range be a single step, so the prefill
// on tensor units splits its o, up and down projections, and must still match.
TEST_F(Model, SplitProjectionsQ4_0) {
  EngineOptions split = options();
  split.tuning.coop_split_steps = 1;
  using D = Tiny<Format::Q4_0>;
  if (context().info().coopmat) {
    Engine<D> engine(context(), split);
    engine.load(tiny_gguf("Q4_0"));
    const auto profile = engine.core().profile(std::span(golden().prompt).first(D::kConfig.prefill_chunk));
    const auto split = std::ranges::count_if(profile.dispatches, [](const auto& d) {
      return d.kernel.starts_with("matmul_coop") && d.groups[2] > 1;
    });
    EXPECT_EQ(split, 3 * kGemma3Tiny.layers) << "every o, up and down projection split over K";
  }
  expect_matches_golden<D>(tiny_gguf("Q4_0"), "q4_0", 1e-3, split);
}

// The server's prompt cache (server/scheduler.hpp) prefills a prompt after
// the prefix a slot already holds, so its chunks start elsewhere than a whole
// prefill's. Attention walks keys in tiles at fixed positions, so every row's
// logits must come out bit for bit those of the whole prefill: a cached prefix
// cannot change a seeded request's text. Prefixes cut inside and across the
// 32-token chunks and the 16-position window (F16 cache, as the server's).
TEST_F(Model, PrefillAfterACachedPrefixIsBitExact) {
  Engine<Tiny<Format::Q8_0, Format::F16>> engine(context(), options());
  engine.load(tiny_gguf("Q8_0"));
  const auto& prompt = golden().prompt;
  const uint32_t V = kGemma3Tiny.vocab;
  const auto whole = engine.forward_logits(prompt);
  for (size_t cut : {1, 5, 17, 31, 32, 40, 70}) {
    engine.reset();
    engine.core().feed(0, std::span(prompt).first(cut));
    const auto rest = engine.forward_logits(std::span(prompt).subspan(cut));
    size_t differing = 0;
    for (size_t row = cut; row < prompt.size(); ++row)
      differing += std::memcmp(whole.data() + row * V, rest.data() + (row - cut) * V, V * 4) != 0;
    EXPECT_EQ(differing, 0u) << "after a prefix of " << cut << " tokens, " << differing << " of "
                             << prompt.size() - cut << " rows' logits differ from the whole prefill's";
  }
}

// A rewind the engine allows reads only keys the sliding-window layers' ring
// still holds. Here the first sequence wraps the 48-position ring (16-token
// window + 32-token chunk), so positions 0..11 are overwritten; a second
// sequence goes back to a shared prefix of 40 and stops at 43, short of the
// ring's length. Its tokens 0..11 are still listed, but their keys are gone:
// going back to 1 (a new prompt that shares only <bos>, as the server's prompt
// cache would) must be refused, and every rewind allowed must give the bits
// of a whole prefill. (The server once allowed it: a slot's short last
// sequence hid the wrap of an earlier one, and a prompt reusing <bos> there
// read another position's key in its first 16 tokens.)
TEST_F(Model, RewindNeverReadsKeysTheRingLost) {
  Engine<Tiny<Format::Q8_0, Format::F16>> engine(context(), options());
  engine.load(tiny_gguf("Q8_0"));
  auto& core = engine.core();
  const auto& prompt = golden().prompt;
  ASSERT_GE(prompt.size(), 70u);
  const uint32_t V = kGemma3Tiny.vocab;
  const auto whole = engine.forward_logits(prompt);
  const auto wrapped_then_short = [&] {
    core.reset();
    core.feed(0, std::span(prompt).first(60));     // positions 0..59: the ring wraps
    core.rewind(0, 40);                            // a shared prefix of 40
    core.feed(0, std::span(prompt).subspan(40, 3));  // and on to 43 < 48
  };
  wrapped_then_short();
  EXPECT_FALSE(core.can_rewind(0, 1)) << "position 0's key was overwritten by position 48's";
  EXPECT_THROW(core.rewind(0, 1), Error);
  // Position 26 sees back to 11, overwritten; 27 sees back to 12, the first
  // the ring still holds: the tightest rule that is safe.
  EXPECT_FALSE(core.can_rewind(0, 26));
  EXPECT_TRUE(core.can_rewind(0, 27));
  uint32_t allowed = 0;
  for (uint32_t pos : {1u, 12u, 26u, 27u, 35u, 43u}) {
    wrapped_then_short();
    if (!core.can_rewind(0, pos)) continue;
    ++allowed;
    core.rewind(0, pos);
    const auto rest = engine.forward_logits(std::span(prompt).subspan(pos, 70 - pos));
    size_t differing = 0;
    for (size_t row = pos; row < 70; ++row)
      differing += std::memcmp(whole.data() + row * V, rest.data() + (row - pos) * V, V * 4) != 0;
    EXPECT_EQ(differing, 0u) << "back to " << pos << ": " << differing << " rows differ from the whole prefill's";
  }
  EXPECT_GT(allowed, 0u) << "no rewind allowed at all: the check is too strict to serve a prompt cache";
}

// The default F16 KV cache: rounding keys and values to half precision costs
// accuracy against the fp32 reference, but far less than a wrong kernel would.
TEST_F(Model, F16KvCache) {
  expect_matches_golden<Tiny<Format::Q8_0, Format::F16>>(tiny_dir(), "q8_0", 2e-3);
}

// --- a separate, quantized LM head (Scheme::with_lm_head) ---
namespace {
// Google's QAT layout in the tiny model: Q8_0 weights, F16 embedding; tied, or
// with the LM head read from a copy of the embedding in `Head`.
template <Format Head = Format::F16>
struct TinyQat {
  static constexpr Scheme kScheme = Scheme{Format::F16, Format::Q8_0, Format::Q8_0, Format::F32}.with_lm_head(Head);
  static constexpr DeploymentConfig kConfig = make_deployment(kGemma3Tiny, kScheme, 256, 32);
};

// Logits of the whole golden prompt through the prefill pass and its greedy continuation.
template <class D>
std::pair<std::vector<float>, std::vector<int32_t>> run_golden_prompt(const fs::path& model) {
  Engine<D> engine(context(), options());
  engine.load(model);
  const auto logits = engine.forward_logits(golden().prompt);
  engine.reset();
  std::vector<int32_t> out{engine.prefill(golden().prompt)};
  while (out.size() < 8) out.push_back(engine.decode(out.back()));
  return {logits, out};
}
}  // namespace

// The LM head from a Q8_0 / Q4_0 copy of the F16 embedding, made at load time
// (GGUF and safetensors): logits close to the F16 head's, and not identical
// (the copy is what the head reads). The error printed is the figure the
// performance notes quote.
TEST_F(Model, QuantizedLmHeadCopy) {
  static_assert(!TinyQat<>::kScheme.separate_lm_head() && TinyQat<Format::Q8_0>::kScheme.separate_lm_head());
  static_assert(kLayoutOf<TinyQat<Format::Q8_0>>.view().weight(Role::LmHead).format == Format::Q8_0);
  static_assert(kLayoutOf<TinyQat<>>.view().weight(Role::LmHead).role == Role::Embedding);
  const fs::path gguf = temp_dir() / "tiny-q8_0-embf16.gguf";
  const std::string cmd = std::string(std::getenv("UNICORN_CONVERT")) + " --hf " + tiny_dir().string() +
                          " --type Q8_0 --embedding F16 --out " + gguf.string() + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const fs::path& model : {gguf, tiny_dir()}) {
    const auto [f16, f16_tokens] = run_golden_prompt<TinyQat<>>(model);
    const auto [q8, q8_tokens] = run_golden_prompt<TinyQat<Format::Q8_0>>(model);
    const auto [q4, q4_tokens] = run_golden_prompt<TinyQat<Format::Q4_0>>(model);
    const double e8 = relative_error(q8, f16), e4 = relative_error(q4, f16);
    std::printf("[ lm head ] %-22s Q8_0 head vs F16: %.2e, Q4_0 head vs F16: %.2e\n",
                model.filename().c_str(), e8, e4);
    EXPECT_GT(e8, 0.0) << "the Q8_0 head gave the F16 head's logits bit for bit: is the copy read?";
    EXPECT_LE(e8, 1e-2);  // measured 3.8e-3 on this model
    EXPECT_GT(e4, e8) << "Q4_0 keeps fewer bits than Q8_0";
    EXPECT_LE(e4, 1e-1);  // 16 levels per block: measured 6.9e-2 on this model
    EXPECT_EQ(q8_tokens, f16_tokens) << model;
  }
}

// --- loader errors: each names what is wrong ---
namespace {
template <class D = Tiny<Format::Q8_0>>
std::string load_error(const fs::path& model) {
  try {
    Engine<D> engine(context(), options());
    engine.load(model);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_F(Model, LoaderTruncatedGguf) {
  const fs::path src = tiny_gguf("Q8_0"), cut = temp_dir() / "truncated.gguf";
  fs::copy_file(src, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, fs::file_size(src) - 1000);
  EXPECT_CONTAINS(load_error(cut), "truncated");
}

TEST_F(Model, LoaderWrongMagic) {
  const fs::path bad = temp_dir() / "not-a-model.gguf";
  std::ofstream(bad) << "this is not a model file at all";
  EXPECT_CONTAINS(load_error(bad), "not a GGUF file");
}

TEST_F(Model, LoaderWrongTensorType) {
  // F16 file, Q8_0 engine: the embedding is held as it is, the first matrix differs.
  const std::string e = load_error(tiny_gguf("F16"));
  EXPECT_CONTAINS(e, "'blk.0.attn_q.weight' is F16");
  EXPECT_CONTAINS(e, "Q8_0");
}

TEST_F(Model, LoaderWrongTensorShape) {
  // Same hyperparameters, but one tensor of another shape: rewrite the file.
  const auto g = io::GgufFile::open(tiny_gguf("F32"));
  io::GgufWriter w;
  for (const auto& kv : g.metadata()) w.set(kv.key, kv.value);
  std::vector<float> wrong(kGemma3Tiny.hidden * 2, 0.5f);
  for (const auto& t : g.tensors()) {
    if (t.name == "blk.0.ffn_norm.weight")
      w.add_tensor(t.name, t.ggml_type, {kGemma3Tiny.hidden * 2},
                   std::as_bytes(std::span(wrong)));
    else
      w.add_tensor(t.name, t.ggml_type, t.dims, t.data);
  }
  const fs::path bad = temp_dir() / "wrong-shape.gguf";
  w.write(bad);
  const std::string e = load_error<Tiny<Format::F32>>(bad);
  EXPECT_CONTAINS(e, "'blk.0.ffn_norm.weight' has shape [192]");
  EXPECT_CONTAINS(e, "expects [96]");
}

TEST_F(Model, LoaderConfigOfAnotherSize) {
  // The tiny engine given a Gemma 3 1B config: names the key and the binary to use.
  const fs::path dir = temp_dir() / "gemma3-1b-config";
  fs::create_directories(dir);
  auto cfg = nlohmann::json::parse(std::ifstream(tiny_dir() / "config.json"));
  cfg["hidden_size"] = 1152;
  cfg["num_hidden_layers"] = 26;
  cfg.erase("layer_types");
  std::ofstream(dir / "config.json") << cfg.dump();
  const std::string e = load_error(dir);
  EXPECT_CONTAINS(e, "hidden_size is 1152");
  EXPECT_CONTAINS(e, "use unicorn-gemma3-1b");
}

TEST_F(Model, LoaderTruncatedSafetensors) {
  const fs::path dir = temp_dir() / "truncated-hf";
  fs::create_directories(dir);
  fs::copy_file(tiny_dir() / "config.json", dir / "config.json", fs::copy_options::overwrite_existing);
  fs::copy_file(tiny_dir() / "model.safetensors", dir / "model.safetensors",
                fs::copy_options::overwrite_existing);
  fs::resize_file(dir / "model.safetensors", fs::file_size(dir / "model.safetensors") / 2);
  EXPECT_CONTAINS(load_error(dir), "model.safetensors");
}

TEST_F(Model, LoaderMissingFile) {
  EXPECT_CONTAINS(load_error(temp_dir() / "nothing-here.gguf"), "no such file");
}

TEST_F(Model, PromptLongerThanContext) {
  Engine<Tiny<Format::Q8_0>> engine(context(), options());
  engine.load(tiny_dir());
  const std::vector<int32_t> prompt(257, 5);
  try {
    engine.prefill(prompt);
    FAIL() << "an over-long prompt must be refused";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "exceed the context of 256 tokens");
  }
  EXPECT_EQ(engine.position(), 0u) << "a refused prompt must leave the sequence as it was";
}

// Engines on one context share their pipelines (Context::kernel_cache): a
// second engine of a deployment, made after the first is gone, compiles none
// and computes the same logits; another deployment adds only its own; another
// context has its own set.
TEST_F(Model, EnginesOnOneContextShareTheirPipelines) {
  gpu::Context ctx(tools::device_from_env());
  const EngineOptions o = options();
  const std::shared_ptr<gpu::KernelCache> cache = ctx.kernel_cache(o.pipeline_cache);
  EXPECT_EQ(cache->size(), 0u);
  auto logits = [&]<class D>(Engine<D>& engine) {
    engine.load(tiny_gguf("Q8_0"));
    return engine.forward_logits(std::span(golden().prompt).first(40));
  };
  std::vector<float> first;
  {
    Engine<Tiny<Format::Q8_0>> engine(ctx, o);
    first = logits(engine);
  }
  const size_t compiled = cache->size();
  EXPECT_GT(compiled, 0u);
  Engine<Tiny<Format::Q8_0>> again(ctx, o);
  EXPECT_EQ(cache->size(), compiled) << "the second engine compiled pipelines the first had";
  EXPECT_EQ(logits(again), first);
  Engine<Tiny<Format::Q8_0, Format::F16>> f16_cache(ctx, o);  // attention over an fp16 cache
  EXPECT_GT(cache->size(), compiled);
  EXPECT_EQ(ctx.kernel_cache(o.pipeline_cache), cache);
  gpu::Context other(tools::device_from_env());
  EXPECT_NE(other.kernel_cache(o.pipeline_cache), cache);
  EXPECT_EQ(other.kernel_cache(o.pipeline_cache)->size(), 0u);
}
