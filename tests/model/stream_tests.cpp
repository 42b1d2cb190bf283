// Label golden: several streams of the tiny model at once, against one
// stream alone: batched decode steps (matrix-vector and split-K passes), the
// server's batch invariance, several prompts in one prefill pass, a prefill
// pass beside decode steps, and what each stream samples (logprobs, scores,
// constraints, copied prefixes). Compiled with model_tests.cpp as one
// translation unit (tests/model/CMakeLists.txt).

#include "model_fixture.hpp"

// Several streams decoding together (engine/core.hpp's batched passes) against
// one stream alone: six streams with different prompts (so different
// positions; the 16-position window's ring wraps) through batched steps in
// varying order, some steps leaving streams out (steps of two streams or more
// take the tensor-unit pass where the device has one: kernels::kSplitKFromStreams;
// a step of one the single-token pass). Each stream's logits of each
// batched step must equal, within 1e-5 of the logit scale, the single-stream
// decode pass's for the same history (the matrix-vector kernels keep a row's
// sums in the same order, so they come out bit for bit; the count is
// printed); the greedy tokens of batched decode() steps must be the single
// stream's. Where the device has tensor units the batched pass runs its
// products there (matmul_coop_splitk: fp16 inputs), and is held to the
// tolerance of the tensor-unit prefill instead; its greedy tokens must then be
// within that tolerance of the single stream's best logit.
template <Format F, const ModelDims& M = kGemma3Tiny>
struct TinyStreams {
  static constexpr DeploymentConfig kConfig =
      make_deployment(M, schemes::all(F, Format::F32), 256, 32).with_streams(6);
};
// One stream of model M (Tiny's for kGemma3Tiny).
template <Format F, const ModelDims& M = kGemma3Tiny>
struct OneStream {
  static constexpr DeploymentConfig kConfig = make_deployment(M, schemes::all(F, Format::F32), 256, 32);
};

template <Format F, const ModelDims& M = kGemma3Tiny>
void expect_batched_decode_matches_single_stream(const fs::path& model, const EngineOptions& engine_options = options()) {
  Engine<TinyStreams<F, M>> batched(context(), engine_options);
  batched.load(model);
  const auto& g = golden();
  const uint32_t V = M.vocab, streams = 6;
  auto argmax = [&](const float* row) { return int32_t(std::max_element(row, row + V) - row); };
  struct History {
    std::vector<int32_t> prompt, fed;       // the prompt, then each token fed to a batched step
    std::vector<std::vector<float>> logits;  // the logits of each of those steps
    std::vector<int32_t> decoded;            // decode()'s tokens for the last steps
    int32_t first = -1;                      // prefill's token
  };
  std::vector<History> h(streams);
  for (uint32_t s : {2u, 0u, 5u, 3u, 1u, 4u}) {  // prefill in another order than the streams'
    h[s].prompt.assign(g.prompt.begin() + 7 * s, g.prompt.begin() + 7 * s + 5 + 9 * s);
    h[s].first = batched.prefill(s, h[s].prompt);
  }
  std::vector<int32_t> next(streams);
  for (uint32_t s = 0; s < streams; ++s) next[s] = h[s].first;
  const std::vector<std::vector<uint32_t>> order = {{0, 1, 2, 3, 4, 5}, {3, 1, 0, 2}, {2, 0}, {5, 1, 3, 2, 4},
                                                    {0, 1, 2, 3, 4, 5}, {3},          {4, 0, 5, 1, 2, 3}, {2, 3, 0, 1}};
  for (size_t step = 0; step < 2 * order.size(); ++step) {
    std::vector<StreamToken> batch;
    for (uint32_t s : order[step % order.size()]) batch.push_back({s, next[s]});
    if (step < order.size()) {  // teacher forcing through the batched pass: logits
      const auto logits = batched.core().forward_logits(batch);
      for (size_t i = 0; i < batch.size(); ++i) {
        History& hs = h[batch[i].stream];
        hs.fed.push_back(batch[i].token);
        hs.logits.emplace_back(logits.begin() + i * V, logits.begin() + (i + 1) * V);
        next[batch[i].stream] = argmax(logits.data() + i * V);
      }
    } else {  // decode(): the sampler's tokens (greedy)
      const auto tokens = batched.decode(batch);
      for (size_t i = 0; i < batch.size(); ++i) {
        h[batch[i].stream].fed.push_back(batch[i].token);
        h[batch[i].stream].decoded.push_back(tokens[i]);
        next[batch[i].stream] = tokens[i];
      }
    }
  }

  Engine<OneStream<F, M>> single(context(), engine_options);
  single.load(model);
  const bool tensor_units = single.tensor_units();
  const double tolerance = single.core().int_dot() ? kIntDotDecodeTolerance : tensor_units ? kCoopPrefillTolerance : 1e-5;
  size_t rows = 0, identical = 0;
  double worst = 0;
  for (uint32_t s = 0; s < streams; ++s) {
    single.reset();
    EXPECT_EQ(single.prefill(h[s].prompt), h[s].first) << "stream " << s << " prefill";
    const size_t forced = h[s].logits.size();
    for (size_t i = 0; i < h[s].fed.size(); ++i) {
      const int32_t one[] = {h[s].fed[i]};
      if (i < forced) {
        const auto want = single.core().forward_logits(one, detail::EngineCore::Pass::Decode);
        const double e = relative_error(h[s].logits[i], want);
        worst = std::max(worst, e);
        EXPECT_LE(e, tolerance) << "stream " << s << " batched step " << i;
        identical += std::memcmp(want.data(), h[s].logits[i].data(), V * 4) == 0;
        ++rows;
      } else if (!tensor_units) {
        EXPECT_EQ(single.decode(h[s].fed[i]), h[s].decoded[i - forced])
            << "stream " << s << " decode() step " << i;
      } else {
        const auto want = single.core().forward_logits(one, detail::EngineCore::Pass::Decode);
        const float best = *std::max_element(want.begin(), want.end());
        double scale = 0;
        for (float v : want) scale = std::max(scale, double(std::abs(v)));
        EXPECT_GE(want[size_t(h[s].decoded[i - forced])], best - tolerance * scale)
            << "stream " << s << " decode() step " << i << ": the batched token's logit is not within "
            << "tolerance of the single stream's best";
      }
    }
  }
  std::printf("[ batch  ] %-12s %zu batched rows vs single-stream decode (%s): %zu bit for bit, worst %.2e "
              "(tolerance %.0e)\n", model.filename().c_str(), rows,
              tensor_units ? "tensor units" : "matrix-vector", identical, worst, tolerance);

  // Bad input: a stream past the compiled ones, a stream twice, a full context.
  const StreamToken past[] = {{6, 1}}, twice[] = {{1, 1}, {1, 2}};
  EXPECT_THROW_WITH(batched.decode(past), "stream 6 does not exist: this engine has 6 streams");
  EXPECT_THROW_WITH(batched.decode(twice), "stream 1 appears twice");
  EXPECT_THROW_WITH(batched.prefill(7, h[0].prompt), "stream 7 does not exist");
  batched.core().set_context_limit(batched.position(3));
  const StreamToken full[] = {{0, 1}, {3, 1}};
  EXPECT_THROW_WITH(batched.decode(full), "of stream 3");
}

// The server's batch invariance (EngineCore::BatchPasses::Fixed): a stream's
// logits are the same bits whatever the size of the step it runs in. One step
// of every stream, then (each stream rewound one position) the same tokens in
// steps of 9 and of 1: on a device with tensor units the split-K pass of all
// the streams, then the 16-token one; elsewhere matvec throughout. With 64
// streams the pass of all of them pairs query heads in decode attention and
// the 16-token one does not (kernels::attention_query_heads), as the 4B's
// 32- and 16-stream passes do.
template <uint32_t Streams>
void expect_fixed_batch_passes_invariant() {
  Engine<TinyWide<Format::Q4_0, Streams>> engine(context(), options());
  engine.load(tiny_gguf("Q4_0"));
  auto& core = engine.core();
  core.set_batch_passes(detail::EngineCore::BatchPasses::Fixed);
  const auto& g = golden();
  const uint32_t V = kGemma3Tiny.vocab;
  std::vector<StreamToken> all;
  for (uint32_t s = 0; s < Streams; ++s)
    all.push_back({s, engine.prefill(s, std::span(g.prompt).subspan(s % 40, 10 + s % 23))});
  const auto whole = core.forward_logits(all);
  const auto again = [&](std::span<const StreamToken> part) {
    for (const StreamToken& t : part) core.rewind(t.stream, core.position(t.stream) - 1);
    return core.forward_logits(part);
  };
  std::vector<float> parts;
  for (uint32_t s = 0; s < Streams; s += 9) {
    const auto step = again(std::span(all).subspan(s, std::min(9u, Streams - s)));
    parts.insert(parts.end(), step.begin(), step.end());
  }
  const auto one = again(std::span(all).subspan(3, 1));
  size_t differing = 0;
  for (uint32_t s = 0; s < Streams; ++s)
    differing += std::memcmp(whole.data() + s * V, parts.data() + s * V, V * 4) != 0;
  EXPECT_EQ(differing, 0u) << differing << " of " << Streams << " streams' logits differ between a step of "
                           << Streams << " and steps of 9";
  EXPECT_EQ(std::memcmp(whole.data() + 3 * V, one.data(), V * 4), 0)
      << "stream 3 alone differs from a step of " << Streams;
  std::printf("[ batch  ] fixed passes: %s for %u, %s for 9 and 1\n", core.batch_linear_path(Streams).c_str(),
              Streams, core.batch_linear_path(9).c_str());
}
TEST_F(Model, FixedBatchPassesAreBatchInvariant) { expect_fixed_batch_passes_invariant<18>(); }
TEST_F(Model, FixedBatchPassesAreBatchInvariantWherePassesPairHeads) {
  static_assert(kernels::attention_query_heads(kGemma3Tiny.heads, kGemma3Tiny.kv_heads, 64) == 2 &&
                kernels::attention_query_heads(kGemma3Tiny.heads, kGemma3Tiny.kv_heads,
                                               kernels::kSplitKSmallTokens) == 1,
                "the premise: the 64-stream pass pairs query heads, the 16-token one does not");
  expect_fixed_batch_passes_invariant<64>();
}

// The server prefills several requests' prompts in one pass
// (EngineCore::prefill of several chunks): each chunk's logits must be the bits
// of the same chunk prefilled alone. Four streams, one with a prefix fed
// before, one whose chunk does not end its prompt (its next chunk, alone,
// must then give the logits of the whole prompt fed alone).
template <Format F>
void expect_prompts_prefilled_together_bit_exact() {
  Engine<TinyWide<F, 18>> engine(context(), options());
  engine.load(tiny_gguf(std::string(format_name(F))));
  auto& core = engine.core();
  const auto& p = golden().prompt;
  const uint32_t V = kGemma3Tiny.vocab;
  const auto span_of = [&](size_t at, size_t n) { return std::span(p).subspan(at, n); };
  // Stream 0: 5 tokens; 1: 4 fed earlier, then 7; 2: 6 of a 9-token prompt; 3: 3.
  const auto alone = [&](uint32_t stream, std::span<const int32_t> prefix, std::span<const int32_t> chunk) {
    core.reset(stream);
    if (!prefix.empty()) core.feed(stream, prefix);
    const PromptChunk c{stream, chunk, true};
    return core.forward_logits(std::span(&c, 1));
  };
  const auto want0 = alone(0, {}, span_of(0, 5)), want1 = alone(1, span_of(10, 4), span_of(14, 7)),
             want2 = alone(2, span_of(30, 6), span_of(36, 3)), want3 = alone(3, {}, span_of(50, 3));
  for (uint32_t s = 0; s < 4; ++s) core.reset(s);
  core.feed(1, span_of(10, 4));
  const PromptChunk together[] = {{0, span_of(0, 5), true}, {1, span_of(14, 7), true},
                                  {2, span_of(30, 6), false}, {3, span_of(50, 3), true}};
  const auto got = core.forward_logits(together);
  ASSERT_EQ(got.size(), 3u * V);
  EXPECT_EQ(std::memcmp(got.data(), want0.data(), V * 4), 0) << "stream 0 differs in a shared pass";
  EXPECT_EQ(std::memcmp(got.data() + V, want1.data(), V * 4), 0) << "stream 1 (after a prefix) differs";
  EXPECT_EQ(std::memcmp(got.data() + 2 * V, want3.data(), V * 4), 0) << "stream 3 differs";
  const PromptChunk rest{2, span_of(36, 3), true};
  EXPECT_EQ(std::memcmp(core.forward_logits(std::span(&rest, 1)).data(), want2.data(), V * 4), 0)
      << "stream 2's prompt, fed in a shared pass, then finished alone, differs from it fed alone";
  EXPECT_EQ(core.position(2), 9u);
  std::printf("[ prefill ] segments start at multiples of %u tokens\n", core.prefill_alignment());
  // A pass that cannot hold its chunks is refused before anything runs.
  std::vector<PromptChunk> too_many;
  for (uint32_t s = 0; s < 18; ++s) too_many.push_back({s, span_of(0, 17), true});
  EXPECT_THROW(core.prefill(too_many), Error);
  EXPECT_EQ(core.position(5), 0u) << "a refused pass moved a stream";
}
// Q4_0: the LM head on integer dot products where the device has them, for
// one row of logits (a prompt alone) and for several (prompts together).
TEST_F(Model, PromptsPrefilledTogetherAreBitExact) {
  expect_prompts_prefilled_together_bit_exact<Format::Q8_0>();
  expect_prompts_prefilled_together_bit_exact<Format::Q4_0>();
}

// SamplingParams::logprobs through the engine: after the prefill that ends
// two prompts and after a batched decode step, each stream's log-probabilities
// (computed on the GPU) are the log-softmax of the logits the same passes
// give under teacher forcing: the chosen token's, and the most likely ones in
// order. A stream that did not ask has none to read.
TEST_F(Model, LogprobsAreTheLogSoftmaxOfTheChosenRow) {
  Engine<TinyWide<Format::Q8_0, 18>> engine(context(), options());
  engine.load(tiny_gguf("Q8_0"));
  auto& core = engine.core();
  const uint32_t V = engine.config().model.vocab;
  const auto& p = golden().prompt;
  const auto a = std::span(p).subspan(0, 12), b = std::span(p).subspan(20, 9);
  SamplingParams greedy5;
  greedy5.logprobs = true, greedy5.top_logprobs = 5;
  SamplingParams drawn20 = greedy5;
  drawn20.top_logprobs = 20, drawn20.temperature = 1.0f, drawn20.seed = 4;
  const auto expect_log_softmax = [&](const TokenLogprobs& got, const float* row, int32_t chosen, uint32_t top,
                                      const std::string& what) {
    double m = -INFINITY, sum = 0;
    for (uint32_t i = 0; i < V; ++i) m = std::max<double>(m, row[i]);
    for (uint32_t i = 0; i < V; ++i) sum += std::exp(double(row[i]) - m);
    const double log_z = m + std::log(sum);
    EXPECT_NEAR(got.logprob, row[chosen] - log_z, 1e-4) << what;
    std::vector<int32_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return row[x] > row[y]; });
    ASSERT_EQ(got.top.size(), top) << what;
    for (uint32_t j = 0; j < top; ++j) {
      EXPECT_EQ(got.top[j].token, order[j]) << what << ", alternative " << j;
      EXPECT_NEAR(got.top[j].logprob, row[order[j]] - log_z, 1e-4) << what << ", alternative " << j;
    }
  };
  core.set_sampling(0, greedy5);
  core.set_sampling(1, drawn20);
  const PromptChunk both[] = {{0, a, true}, {1, b, true}};
  const auto first = core.prefill(both);
  const TokenLogprobs first0 = core.logprobs(0), first1 = core.logprobs(1);
  const StreamToken step[] = {{0, first[0]}, {1, first[1]}};
  const auto second = core.decode(step);
  const TokenLogprobs second0 = core.logprobs(0), second1 = core.logprobs(1);
  EXPECT_THROW((void)core.logprobs(2), Error) << "stream 2's sampling asked for none";

  core.reset();  // the same passes, teacher-forced
  const auto prompt_rows = core.forward_logits(both);
  const auto step_rows = core.forward_logits(step);
  expect_log_softmax(first0, prompt_rows.data(), first[0], 5, "stream 0's prompt");
  expect_log_softmax(first1, prompt_rows.data() + V, first[1], 20, "stream 1's prompt");
  expect_log_softmax(second0, step_rows.data(), second[0], 5, "stream 0's step");
  expect_log_softmax(second1, step_rows.data() + V, second[1], 20, "stream 1's step");
  EXPECT_EQ(first0.top[0].token, first[0]) << "greedy: the chosen token is the most likely";
}

// EngineCore::score: a text's tokens after the first, each given those before
// it, against the log-softmax of teacher forcing's rows; a text longer than a
// pass's logit rows goes in several passes, and the stream holds the text but
// its last token afterwards, its sampling untouched.
TEST_F(Model, ScoreIsTheLogSoftmaxOfTeacherForcing) {
  Engine<TinyWide<Format::Q8_0, 18>> engine(context(), options());
  engine.load(tiny_gguf("Q8_0"));
  auto& core = engine.core();
  const uint32_t V = engine.config().model.vocab;
  std::vector<int32_t> text(golden().prompt.begin(), golden().prompt.end());
  while (text.size() < 150) text.push_back(int32_t(text.size() * 37 % V));
  const auto scored = core.score(3, text, 4);
  ASSERT_EQ(scored.size(), text.size() - 1);
  EXPECT_EQ(core.position(3), text.size() - 1);
  EXPECT_EQ(core.tokens(3).back(), text[text.size() - 2]);
  core.reset(3);
  const auto rows = core.forward_logits(std::span(text).first(text.size() - 1));
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    const float* row = rows.data() + i * V;
    double m = -INFINITY, sum = 0;
    for (uint32_t t = 0; t < V; ++t) m = std::max<double>(m, row[t]);
    for (uint32_t t = 0; t < V; ++t) sum += std::exp(double(row[t]) - m);
    const double log_z = m + std::log(sum);
    EXPECT_NEAR(scored[i].logprob, row[text[i + 1]] - log_z, 1e-4) << "token " << i + 1;
    int32_t best = 0;
    for (uint32_t t = 1; t < V; ++t) best = row[t] > row[best] ? int32_t(t) : best;
    ASSERT_EQ(scored[i].top.size(), 4u);
    EXPECT_EQ(scored[i].top[0].token, best) << "token " << i + 1;
    EXPECT_NEAR(scored[i].top[0].logprob, row[best] - log_z, 1e-4);
  }
  EXPECT_TRUE(core.score(3, std::span(text).first(1), 0).empty()) << "one token: nothing to score";
  EXPECT_THROW((void)core.score(3, text, 21), Error);
}

// Structured output's mask (EngineCore::constrain): a constrained stream
// chooses only allowed tokens, from the prompt's last chunk and from decode
// steps, and its log-probabilities are of the constrained choice (the allowed
// tokens' sum to 1); a stream beside it in the same passes gets what it gets
// alone; set_sampling lifts the mask; masks of the wrong size or allowing
// nothing are refused.
TEST_F(Model, ConstrainedStreamsChooseOnlyAllowedTokens) {
  Engine<TinyWide<Format::Q8_0, 18>> engine(context(), options());
  engine.load(tiny_gguf("Q8_0"));
  auto& core = engine.core();
  const uint32_t V = engine.config().model.vocab;
  const auto& p = golden().prompt;
  const auto a = std::span(p).subspan(0, 12), b = std::span(p).subspan(20, 9);
  SamplingParams sampling;
  sampling.logprobs = true, sampling.top_logprobs = 3;
  const auto run = [&](bool masked) {
    core.reset();
    core.set_sampling(0, sampling);
    core.set_sampling(1, sampling);
    std::vector<uint32_t> mask(core.mask_words(), 0);
    for (const int32_t id : {17, 300, 301}) mask[size_t(id) / 32] |= 1u << (id % 32);
    if (masked) core.constrain(0, mask);
    const PromptChunk both[] = {{0, a, true}, {1, b, true}};
    std::vector<int32_t> t0, t1;
    std::vector<TokenLogprobs> lp0;
    auto next = core.prefill(both);
    for (int step = 0; step < 4; ++step) {
      t0.push_back(next[0]), t1.push_back(next[1]), lp0.push_back(core.logprobs(0));
      const StreamToken batch[] = {{0, next[0]}, {1, next[1]}};
      next = core.decode(batch);
    }
    return std::tuple{t0, t1, lp0};
  };
  const auto [free0, free1, free_lp] = run(false);
  const auto [t0, t1, lp0] = run(true);
  EXPECT_EQ(t1, free1) << "the unconstrained stream beside it";
  for (size_t i = 0; i < t0.size(); ++i) {
    EXPECT_TRUE(t0[i] == 17 || t0[i] == 300 || t0[i] == 301) << "token " << i << ": " << t0[i];
    ASSERT_EQ(lp0[i].top.size(), 3u);
    double sum = 0;
    for (const auto& alt : lp0[i].top) {
      EXPECT_TRUE(alt.token == 17 || alt.token == 300 || alt.token == 301) << alt.token;
      sum += std::exp(double(alt.logprob));
    }
    EXPECT_NEAR(sum, 1.0, 1e-4) << "the allowed tokens share all the probability";
    EXPECT_EQ(lp0[i].top[0].token, t0[i]) << "greedy";
  }
  EXPECT_NE(t0, free0) << "the tiny model's greedy choices are not all allowed";
  EXPECT_TRUE(core.constrained(0));
  core.set_sampling(0, sampling);
  EXPECT_FALSE(core.constrained(0)) << "set_sampling lifts the mask";
  std::vector<uint32_t> none(core.mask_words(), 0);
  EXPECT_THROW(core.constrain(0, none), Error) << "no token allowed";
  none.pop_back();
  EXPECT_THROW(core.constrain(0, none), Error) << "the wrong size";
  EXPECT_EQ(core.mask_words(), (V + 31) / 32);
}

// copy_prefix (the API's n choices share one prefill): a stream given another
// one's prefix by a device copy continues with the bits of a stream that
// prefilled that prefix itself, for prefixes inside and past the local
// layers' ring (48 positions here), and its source keeps going unchanged.
TEST_F(Model, CopiedPrefixContinuesAsItsOwnPrefill) {
  Engine<TinyWide<Format::Q8_0, 18>> engine(context(), options());
  engine.load(tiny_gguf("Q8_0"));
  const auto& prompt = golden().prompt;
  auto& core = engine.core();
  for (size_t cut : {17, 60}) {  // inside and past the ring; forward_logits runs stream 0
    ASSERT_LT(cut, prompt.size());
    engine.reset();
    core.feed(0, std::span(prompt).first(cut));  // the reference: its own prefill
    const auto own = core.forward_logits(std::span(prompt).subspan(cut));
    core.feed(1, std::span(prompt).first(cut));
    core.copy_prefix(1, 0, uint32_t(cut));  // onto a stream that held more
    EXPECT_EQ(core.position(0), cut);
    const auto copied = core.forward_logits(std::span(prompt).subspan(cut));
    ASSERT_EQ(copied.size(), own.size());
    EXPECT_EQ(std::memcmp(copied.data(), own.data(), own.size() * 4), 0) << "after a copied prefix of " << cut;
    EXPECT_EQ(core.position(1), cut) << "the source keeps its own";
  }
  EXPECT_THROW(core.copy_prefix(0, 0, 1), Error);
  EXPECT_THROW(core.copy_prefix(3, 1, 5), Error) << "stream 3 holds one token";
}

// A server starts a prefill pass and keeps decoding other streams while it
// runs (EngineCore::begin_prefill; on the second queue where the device has
// one). Both streams must get the bits they get when nothing overlaps, and
// while the pass is in flight its stream takes no other work.
TEST_F(Model, PrefillBesideDecodeStepsIsBitExact) {
  Engine<TinyWide<Format::Q8_0, 18>> engine(context(), options());
  engine.load(tiny_gguf("Q8_0"));
  auto& core = engine.core();
  const auto& p = golden().prompt;
  const auto a = std::span(p).subspan(0, 12), b = std::span(p).subspan(20, 9);
  struct Run {
    std::vector<int32_t> tokens0, tokens1;
    std::vector<float> logits;  // one more step of both streams
  };
  const auto finish = [&](Run& r) {
    for (int i = 0; i < 3; ++i) {
      const StreamToken step[] = {{0, r.tokens0.back()}, {1, r.tokens1.back()}};
      const auto next = core.decode(step);
      r.tokens0.push_back(next[0]);
      r.tokens1.push_back(next[1]);
    }
    const StreamToken last[] = {{0, r.tokens0.back()}, {1, r.tokens1.back()}};
    r.logits = core.forward_logits(last);
  };
  const auto decode0 = [&](Run& r, int steps) {
    for (int i = 0; i < steps; ++i) {
      const StreamToken step[] = {{0, r.tokens0.back()}};
      r.tokens0.push_back(core.decode(step)[0]);
    }
  };
  Run alone;
  alone.tokens0.push_back(core.prefill(0, a));
  decode0(alone, 6);
  alone.tokens1.push_back(core.prefill(1, b));
  finish(alone);

  core.reset();
  Run beside;
  beside.tokens0.push_back(core.prefill(0, a));
  const PromptChunk chunk{1, b, true};
  core.begin_prefill(std::span(&chunk, 1));
  EXPECT_TRUE(core.prefill_in_flight());
  decode0(beside, 6);  // while stream 1's prompt is in flight
  const StreamToken with_one[] = {{0, beside.tokens0.back()}, {1, 7}};
  EXPECT_THROW(core.decode(with_one), Error) << "decoded a stream whose prompt is in flight";
  EXPECT_THROW(core.begin_prefill(std::span(&chunk, 1)), Error) << "a second pass started";
  EXPECT_THROW(core.rewind(1, 0), Error);
  EXPECT_THROW(core.reset(1), Error);
  EXPECT_THROW(core.set_sampling(1, SamplingParams{}), Error);
  beside.tokens1.push_back(core.finish_prefill()[0]);
  EXPECT_FALSE(core.prefill_in_flight());
  EXPECT_THROW(core.finish_prefill(), Error) << "finished a pass never started";
  finish(beside);

  EXPECT_EQ(beside.tokens0, alone.tokens0) << "stream 0 decoded other tokens beside the prefill pass";
  EXPECT_EQ(beside.tokens1, alone.tokens1) << "stream 1's prompt, prefilled beside decode steps, differs";
  EXPECT_EQ(core.position(1), alone.tokens1.size() + b.size());
  ASSERT_EQ(beside.logits.size(), alone.logits.size());
  EXPECT_EQ(std::memcmp(beside.logits.data(), alone.logits.data(), alone.logits.size() * 4), 0)
      << "the next step's logits differ after a prefill beside decode steps";
  std::printf("[ lanes  ] prefill passes %s decode steps on this device\n",
              core.prefill_overlaps_decode() ? "overlap" : "queue behind");
}

// --- several streams: batched decode against one stream alone ---
TEST_F(Model, BatchedDecodeQ4_0) { expect_batched_decode_matches_single_stream<Format::Q4_0>(tiny_gguf("Q4_0")); }
TEST_F(Model, BatchedDecodeQ8_0) { expect_batched_decode_matches_single_stream<Format::Q8_0>(tiny_gguf("Q8_0")); }
TEST_F(Model, BatchedDecodeF32) { expect_batched_decode_matches_single_stream<Format::F32>(tiny_gguf("F32")); }

// --- a batched step's products split over K (matmul_coop_splitk's SPLITS) ---
// Where the device has tensor units, a batched step splits the output
// projections over K, and q, k and v too (attention's PREP adds their
// slices), where their row tiles leave the GPU idle. The tiny model's K (96)
// is too short to split even at one step a range; kGemma3TinyK's (256: 8
// steps) splits with Tuning::splitk_split_steps = 1: q, k and v in two
// ranges, o in two, down in four. Random weights (unicorn-convert --random);
// the batched steps must match one stream alone as the tiny model's do.
TEST_F(Model, BatchedDecodeSplitsProductsQ4_0) {
  constexpr const ModelDims& M = kGemma3TinyK;
  EngineOptions split = options();
  split.tuning.splitk_split_steps = 1;
  static_assert(kernels::splitk_splits(M.hidden, M.q_dim() + 2 * M.kv_dim(), kernels::kSplitKTiles[0],
                                       detail::kDecodeQkvSlices,
                                       kernels::kSplitKGroupsPerMultiprocessor * 132 /* the H100's */, 1) == 2);
  const fs::path model = random_gguf(std::string(M.name), "Q4_0");
  if (context().info().coopmat) {
    Engine<TinyStreams<Format::Q4_0, M>> engine(context(), split);
    engine.load(model);
    const auto profile = engine.core().profile_batch(6);
    const auto split_products = std::ranges::count_if(profile.dispatches, [](const auto& d) {
      return d.kernel.starts_with("matmul_coop_splitk") && d.groups[2] > 1;
    });
    EXPECT_EQ(split_products, 5 * M.layers) << "q, k, v, o and down of every layer split over K";
  }
  expect_batched_decode_matches_single_stream<Format::Q4_0, M>(model, split);
}
