// Label golden: speculative decoding (generation/speculative.hpp) on the tiny
// Gemma 3 model. The verify pass chooses, row by row, what decode steps
// choose one token at a time; text generated with a draft is the target's
// own, token for token, greedy and sampled (every filter and penalty), with a
// draft that guesses well (the same weights at Q4_0) and one that guesses
// badly (other random weights), and the stream is left as without a draft.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "../tools/tuning_env.hpp"
#include "temp_dir.hpp"
#include "unicorn/engine.hpp"

namespace fs = std::filesystem;
using namespace unicorn;

namespace {

struct TinyDraft {  // the tiny model at Q4_0: a draft that guesses well
  static constexpr DeploymentConfig kConfig = make_deployment(kGemma3Tiny, schemes::all(Format::Q4_0, Format::F32), 256, 32);
};
struct TinyTarget {  // Q8_0, drafting up to 6 tokens a round: a verify pass of 7 rows
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3Tiny, schemes::all(Format::Q8_0, Format::F32), 256, 32).with_draft(TinyDraft::kConfig, 6);
};

fs::path from_env(const char* name) {
  const char* value = std::getenv(name);
  if (!value) throw std::runtime_error(std::string(name) + " is not set (run through ctest)");
  return value;
}

fs::path temp_dir() {
  static const unicorn::test::TempDir dir("unicorn-speculative-tests");
  return dir.path();
}
// unicorn-convert ARGS --out temp_dir()/NAME, once per process.
fs::path converted(const std::string& name, const std::string& args) {
  const fs::path out = temp_dir() / name;
  if (!fs::exists(out)) {
    const std::string cmd = from_env("UNICORN_CONVERT").string() + " " + args + " --out " + out.string() + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }
  return out;
}

// Integer dot products, and the down projection's K (192) split in two for
// one token, as the 12B's and 27B's are on the H100 (kMatVecDotSplitInFeatures):
// lavapipe takes neither by default, and a verify pass must do the same.
EngineOptions split_k(EngineOptions o) {
  o.tuning.matvec_int_dot = Tuning::IntDot::WhereSupported;
  o.tuning.matvec_dot_split_in_features = 128;
  return o;
}

struct World {
  gpu::Context ctx{tools::device_from_env()};
  EngineOptions options = tools::engine_options_from_env({});
  Engine<TinyTarget> target{ctx, options};
  Engine<TinyTarget> target_split{ctx, split_k(options)};
  Engine<TinyDraft> good{ctx, options};  // the target's weights at Q4_0
  Engine<TinyDraft> bad{ctx, options};   // other random weights of the same shape
  World() {
    const fs::path tiny = from_env("UNICORN_FIXTURES") / "tiny";
    target.load(tiny, {.tokenizer = from_env("UNICORN_TINY_TOKENIZER")});
    target_split.load(tiny, {.tokenizer = from_env("UNICORN_TINY_TOKENIZER")});
    good.load(converted("tiny-q4_0.gguf", "--hf " + tiny.string() + " --type Q4_0"));
    bad.load(converted("other-q4_0.gguf", "--random gemma3-tiny --type Q4_0 --seed 3"));
  }
};
World& world() {
  static World w;
  return w;
}

class Speculative : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(world().ctx.validation_errors(), 0u) << "Vulkan validation errors"; }
};

const std::vector<int32_t> kPrompt = {2, 17, 301, 44, 9, 120, 77, 5, 260, 33, 41, 88, 150, 6, 212, 19, 90, 4, 11, 70};

SamplingParams sampled(uint32_t seed) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.02f;
  p.repeat_penalty = 1.3f;
  p.presence_penalty = 0.2f;
  p.frequency_penalty = 0.1f;
  p.seed = seed;
  p.logit_bias = {{3, 2.0f}, {100, -1.5f}};
  return p;
}

// The tokens decode steps choose after each of `rows`, fed one at a time from
// the stream's position (which they leave where they found it).
// With `last`: the log-probabilities of the last choice (the raw logits'
// bits, where the sampling asks for them).
std::vector<int32_t> decoded_one_at_a_time(detail::EngineCore& core, std::span<const int32_t> rows,
                                           TokenLogprobs* last = nullptr) {
  const uint32_t pos = core.position(0);
  std::vector<int32_t> chosen;
  for (int32_t t : rows) chosen.push_back(core.decode(t));
  if (last) *last = core.logprobs(0);
  core.rewind(0, pos);
  return chosen;
}

void expect_verify_chooses_what_decode_steps_choose(detail::EngineCore& core) {
  ASSERT_EQ(core.verify_rows(), 7u);
  for (SamplingParams p : {SamplingParams{}, sampled(5), sampled(6)}) {
    p.logprobs = true;  // the last row's log-probabilities: its logits, to the bit
    p.top_logprobs = 4;
    core.reset(0);
    core.set_sampling(0, p);
    const int32_t first = core.prefill(0, kPrompt);
    const uint32_t pos = core.position(0), draws = core.draws(0);
    // Rows the model would choose (a draft that is always right), then rows
    // it would not (wrong from the third on).
    std::vector<int32_t> right{first};
    for (int i = 0; i < 6; ++i) right.push_back(core.decode(right.back()));
    core.rewind(0, pos);
    EXPECT_EQ(core.draws(0), draws) << "a rewind takes the draw counter back with the positions";
    std::vector<int32_t> wrong = right;
    for (size_t i = 3; i < wrong.size(); ++i) wrong[i] = int32_t((wrong[i] + 7 * i) % kGemma3Tiny.vocab);
    for (const auto& rows : {right, wrong, std::vector<int32_t>{first}, std::vector<int32_t>(right.begin(), right.begin() + 4)}) {
      TokenLogprobs want_last;
      const auto want = decoded_one_at_a_time(core, rows, &want_last);
      ASSERT_EQ(core.draws(0), draws);
      const auto got = core.verify(0, rows);
      EXPECT_EQ(got, want) << "temperature " << p.temperature << ", " << rows.size() << " rows";
      const TokenLogprobs got_last = core.logprobs(0);
      EXPECT_EQ(got_last.logprob, want_last.logprob) << rows.size() << " rows: the last row's logits differ";
      EXPECT_EQ(got_last.top, want_last.top) << rows.size() << " rows";
      EXPECT_EQ(core.position(0), pos + rows.size()) << "the stream keeps every token verified";
      EXPECT_EQ(core.draws(0), draws + rows.size());
      core.rewind(0, pos);
    }
    // The first guesses right, so the step after them is the one decode gives.
    const auto got = core.verify(0, std::span(right).first(3));
    const auto after = decoded_one_at_a_time(core, std::vector<int32_t>{got[2]});
    EXPECT_EQ(core.decode(got[2]), after[0]);
  }
}

TEST_F(Speculative, VerifyChoosesWhatDecodeStepsChooseRowByRow) {
  expect_verify_chooses_what_decode_steps_choose(world().target.core());
}

// Every row's logits, not only the last row's: the verify pass over 20 tokens
// (3 passes of 7 rows, the last of 6) against the decode pass one token at a time.
TEST_F(Speculative, VerifyLogitsAreTheDecodeStepsBitForBit) {
  for (detail::EngineCore* core : {&world().target.core(), &world().target_split.core()}) {
    core->reset(0);
    const auto decoded = core->forward_logits(kPrompt, detail::EngineCore::Pass::Decode);
    core->reset(0);
    const auto verified = core->forward_logits(kPrompt, detail::EngineCore::Pass::Verify);
    ASSERT_EQ(decoded.size(), verified.size());
    size_t differ = 0;
    for (size_t i = 0; i < decoded.size(); ++i) differ += std::memcmp(&decoded[i], &verified[i], 4) != 0;
    EXPECT_EQ(differ, 0u) << differ << " of " << decoded.size() << " logits differ"
                          << (core == &world().target.core() ? "" : " (K split, integer dot products)");
  }
}

TEST_F(Speculative, VerifySplitsKAsTheDecodeStepDoes) {
  SCOPED_TRACE("integer dot products, K split");
  expect_verify_chooses_what_decode_steps_choose(world().target_split.core());
}

TEST_F(Speculative, VerifyRefusesWhatItCannotDo) {
  detail::EngineCore& core = world().target.core();
  core.reset(0);
  core.set_sampling(0, SamplingParams{});
  core.prefill(0, kPrompt);
  EXPECT_THROW(core.verify(0, std::vector<int32_t>(8, 5)), Error) << "8 rows in a 7-row pass";
  EXPECT_THROW(core.verify(0, std::vector<int32_t>{}), Error);
  EXPECT_THROW(core.verify(0, std::vector<int32_t>{int32_t(kGemma3Tiny.vocab)}), Error);
  EXPECT_THROW(world().good.core().verify(0, std::vector<int32_t>{5}), Error) << "a deployment that drafts nothing has no verify pass";
  std::vector<uint32_t> mask(detail::token_mask_words(kGemma3Tiny.vocab), ~0u);
  core.constrain(0, mask);
  EXPECT_THROW(core.verify(0, std::vector<int32_t>{5}), Error) << "a constrained stream";
  core.constrain(0, {});
}

// generate() with and without a draft: the same text, the same tokens in the
// stream, the same pending token and reason to stop.
struct Generated {
  text::GenerateResult result;
  std::vector<int32_t> stream;
};
Generated run(detail::EngineCore* draft, const text::GenerateOptions& opt) {
  World& w = world();
  detail::EngineCore& core = w.target.core();
  core.reset(0);
  Generated r;
  r.result = text::detail::generate(core, w.target.tokenizer(), 0, kPrompt, opt, {}, nullptr, {}, draft);
  r.stream.assign(core.tokens(0).begin(), core.tokens(0).end());
  return r;
}
void expect_same(const Generated& alone, const Generated& drafted, const std::string& what) {
  EXPECT_EQ(drafted.result.text, alone.result.text) << what;
  EXPECT_EQ(drafted.stream, alone.stream) << what << ": the stream's tokens";
  EXPECT_EQ(drafted.result.pending, alone.result.pending) << what;
  EXPECT_EQ(drafted.result.generated, alone.result.generated) << what;
  EXPECT_EQ(drafted.result.stopped_by, alone.result.stopped_by) << what;
}

TEST_F(Speculative, TextIsTheTargetsTokenForToken) {
  World& w = world();
  for (auto [name, draft] : {std::pair{"good draft", &w.good.core()}, std::pair{"bad draft", &w.bad.core()}}) {
    int drafted = 0, accepted = 0;
    for (uint32_t seed = 0; seed < 6; ++seed) {
      text::GenerateOptions opt{.max_tokens = 40};
      if (seed > 0) opt.sampling = sampled(seed);
      if (seed == 2) opt.draft_min = 1;  // the count adapts
      if (seed == 3) opt.draft_max = 2;
      const Generated alone = run(nullptr, opt), drafted_run = run(draft, opt);
      expect_same(alone, drafted_run, std::string(name) + ", seed " + std::to_string(seed));
      EXPECT_GT(drafted_run.result.verify_passes, 0) << name;
      // draft_min 0: every round drafts draft_max (6, or 2 with draft_max 2);
      // draft_min 1: the bad draft's rounds fall to one guess.
      const int k = seed == 3 ? 2 : 6;
      if (seed != 2) EXPECT_EQ(drafted_run.result.drafted, k * drafted_run.result.verify_passes) << name << " seed " << seed;
      if (seed == 2 && draft == &w.bad.core())
        EXPECT_LT(drafted_run.result.drafted, 6 * drafted_run.result.verify_passes) << "the count adapts";
      EXPECT_EQ(alone.result.verify_passes, 0);
      drafted += drafted_run.result.drafted;
      accepted += drafted_run.result.accepted;
    }
    std::printf("[ speculative ] %s: %d of %d guesses kept\n", name, accepted, drafted);
    if (draft == &w.good.core()) EXPECT_GT(accepted * 2, drafted) << "the same weights at Q4_0 guess mostly right";
  }
  // Stopped inside a round (a stop string, the token limit): the stream is
  // left as without a draft, and a second request continues the same way.
  text::GenerateOptions opt{.max_tokens = 9, .sampling = sampled(9)};
  const Generated alone = run(nullptr, opt), drafted_run = run(&w.good.core(), opt);
  expect_same(alone, drafted_run, "limit 9");
  const std::string cut = alone.result.text.substr(alone.result.text.size() / 2, 3);
  if (!cut.empty()) {
    opt = {.max_tokens = 40, .stop = {cut}};
    expect_same(run(nullptr, opt), run(&w.good.core(), opt), "stop string '" + cut + "'");
  }
  opt = {.max_tokens = 40, .draft_max = 0};
  EXPECT_EQ(run(&w.good.core(), opt).result.verify_passes, 0) << "draft_max 0 turns it off";
}

// The distribution check: the third token's frequencies over many
// seeds, with and without the draft, agree within 5 standard deviations (they
// are the same draws, so here they agree exactly; a draft that shifted the
// draws would move them).
TEST_F(Speculative, SampledTokensHaveTheTargetsFrequencies) {
  World& w = world();
  const int draws = 60;
  std::map<int32_t, int> alone, drafted;
  for (int seed = 100; seed < 100 + draws; ++seed) {
    text::GenerateOptions opt{.max_tokens = 4, .sampling = sampled(uint32_t(seed))};
    opt.sampling.repeat_penalty = 1.0f;
    const Generated a = run(nullptr, opt), d = run(&w.good.core(), opt);
    if (a.stream.size() > kPrompt.size() + 2) alone[a.stream[kPrompt.size() + 2]] += 1;
    if (d.stream.size() > kPrompt.size() + 2) drafted[d.stream[kPrompt.size() + 2]] += 1;
  }
  std::map<int32_t, int> tokens = alone;
  for (auto [t, n] : drafted) tokens[t] += 0;
  for (auto [t, unused] : tokens) {
    const double p = (alone[t] + drafted[t]) / (2.0 * draws);
    const double sd = std::sqrt(2 * draws * p * (1 - p)) + 1e-9;
    EXPECT_LE(std::abs(alone[t] - drafted[t]), 5 * sd) << "token " << t;
  }
}

}  // namespace
