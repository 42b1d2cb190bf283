// The sampler on the device: logits_max.comp's partials, sample.comp's greedy
// and random draws (top-k, top-p, min-p, penalties, logit bias, allowed-token
// masks) and logprobs.comp.
#include "kernel_harness.hpp"

namespace unicorn {
namespace {

// The sampler's parameters and penalty history, as the engine writes them, for
// `rows` logit rows: the same state in each, row r drawing as stream r.
HostBuffer sampler_buffer(detail::SamplerState st, std::span<const uint32_t> history = {},
                          uint32_t rows = 1, std::span<const uint32_t> counts = {}) {
  st.history_len = uint32_t(history.size());
  HostBuffer b(detail::kSamplerRowBytes * rows);
  std::vector<std::byte> bytes(detail::kSamplerRowBytes * rows);
  for (uint32_t r = 0; r < rows; ++r) {
    st.key = r;
    std::byte* p = bytes.data() + r * detail::kSamplerRowBytes;
    std::memcpy(p, &st, sizeof st);
    if (!history.empty()) std::memcpy(p + sizeof st, history.data(), history.size_bytes());
    if (!counts.empty()) std::memcpy(p + sizeof st + 4 * detail::kMaxPenaltyHistory, counts.data(), counts.size_bytes());
  }
  b.fill<std::byte>(bytes);
  return b;
}
detail::SamplerState greedy_state() { return {0.f, 0, 1.f, 0.f, 1.f, 0, 0, 0, 0}; }

// logits_max then sample, dispatched as the Recorder does ((PARTS, rows, 1),
// then (rows, 1, 1)), on `l` [rows, V] (penalised in place) with the sampler
// parameters `params`; `dispatch_rows` plays the graph's logit rows. Returns
// the partials buffer [rows, PARTS] of vec2 (max, index bits).
HostBuffer logits_max_then_sample(const HostBuffer& l, const HostBuffer& out, const HostBuffer& params,
                                  uint32_t V, uint32_t parts, uint32_t dispatch_rows,
                                  uint32_t logit_count, const HostBuffer* masks = nullptr,
                                  const HostBuffer* step_rows = nullptr) {
  HostBuffer partials(size_t(dispatch_rows) * parts * 8);
  const auto chunk = step_buffer({dispatch_rows, 0, 0, logit_count});
  const HostBuffer& step = step_rows ? *step_rows : chunk;
  run("logits_max", kernels::kLogitsMaxBindings, kernels::LogitsMax{V, parts},
      {&l, &partials, &params, &step, masks ? masks : &l}, {}, {parts, dispatch_rows, 1});
  run("sample", kernels::kSampleBindings, kernels::Sample{V, parts},
      {&l, &out, &params, &step, &partials}, {}, {dispatch_rows, 1, 1});
  return partials;
}

// logits_max's partial results of one row: slice j = [j * SLICE, min(V, +SLICE)),
// SLICE = ceil(V / PARTS); (largest logit, its lowest index), or (-inf, ~0u)
// for an empty slice. Checked bit for bit.
::testing::AssertionResult check_partials(const std::string& what, const HostBuffer& partials,
                                          uint32_t row, std::span<const float> logits,
                                          uint32_t parts) {
  const uint32_t V = uint32_t(logits.size()), slice = (V + parts - 1) / parts;
  const auto got = partials.as<uint32_t>();
  for (uint32_t j = 0; j < parts; ++j) {
    const uint32_t lo = std::min(V, j * slice), hi = std::min(V, lo + slice);
    float m = -INFINITY;
    uint32_t id = 0xffffffffu;
    if (lo < hi) id = lo + reference::argmax(logits.subspan(lo, hi - lo)), m = logits[id];
    uint32_t mb;
    std::memcpy(&mb, &m, 4);
    const size_t at = (size_t(row) * parts + j) * 2;
    if (got[at] != mb || got[at + 1] != id) {
      float gm;
      std::memcpy(&gm, &got[at], 4);
      return ::testing::AssertionFailure()
             << what << ": partial of row " << row << " slice " << j << " [" << lo << "," << hi
             << ") is (" << gm << ", " << got[at + 1] << "), want (" << m << ", " << id << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

struct GreedyCase {
  uint32_t V, parts;
};
class Greedy : public ::testing::TestWithParam<GreedyCase> {};

// Temperature 0 is argmax. Rows: (0) small integers, so the maximum repeats
// (lowest index wins, also across slices); (1) continuous values with the
// maximum planted twice; (2) all equal -> 0; (3) continuous, the maximum the
// very last logit (in the last, possibly short, slice); (4) past logit_count:
// neither kernel may write it. logits_max's partials are checked too.
TEST_P(Greedy, FirstMaximumOfEachLogitRow) {
  const uint32_t V = GetParam().V, parts = GetParam().parts, rows = 5, logit_count = 4;
  const std::string what = "logits_max+sample (greedy) V=" + std::to_string(V) +
                           " PARTS=" + std::to_string(parts);
  std::vector<float> logits(size_t(rows) * V);  // [rows, V]
  std::uniform_int_distribution<int> small(0, 40);
  for (uint32_t i = 0; i < V; ++i) logits[i] = float(small(rng()));
  const auto cont = random_floats(V, -10.f, 10.f);
  std::copy(cont.begin(), cont.end(), logits.begin() + V);
  std::uniform_int_distribution<uint32_t> where(0, V - 1);
  const uint32_t a = where(rng()), b = where(rng());
  logits[V + a] = logits[V + b] = 11.f;
  std::fill(logits.begin() + 2 * V, logits.begin() + 3 * V, 0.25f);
  const auto cont2 = random_floats(V, -10.f, 10.f);
  std::copy(cont2.begin(), cont2.end(), logits.begin() + 3 * V);
  logits[4 * V - 1] = 10.5f;
  const auto last = random_floats(V);
  std::copy(last.begin(), last.end(), logits.begin() + 4 * V);

  HostBuffer l(logits.size() * 4), best(rows * 4);
  l.fill<float>(logits);
  const auto params = sampler_buffer(greedy_state(), {}, rows);
  const auto partials = logits_max_then_sample(l, best, params, V, parts, rows, logit_count);
  for (uint32_t r = 0; r < logit_count; ++r) {
    const auto row = std::span<const float>(logits).subspan(size_t(r) * V, V);
    EXPECT_TRUE(check_partials(what, partials, r, row, parts));
    EXPECT_EQ(best.as<uint32_t>()[r], reference::argmax(row)) << what << " row " << r;
  }
  EXPECT_EQ(best.as<uint32_t>()[3], V - 1) << what << ": the maximum in the last slice";
  for (uint32_t j = 0; j < parts * 2; ++j)
    EXPECT_EQ(partials.as<uint32_t>()[size_t(logit_count) * parts * 2 + j], 0xffffffffu)
        << what << ": logits_max wrote row 4, past logit_count";
  EXPECT_EQ(best.as<uint32_t>()[4], 0xffffffffu) << what << ": sample wrote row 4, past logit_count";
  for (size_t i = 0; i < logits.size(); ++i)
    if (l.as<float>()[i] != logits[i]) {
      ADD_FAILURE() << what << ": logits_max changed logit " << i << " without a penalty";
      break;
    }
}
INSTANTIATE_TEST_SUITE_P(
    Kernel, Greedy,
    ::testing::Values(GreedyCase{512, kernels::kLogitParts}, GreedyCase{1000, kernels::kLogitParts},
                      // V % PARTS != 0: the last slice holds one logit, two slices none.
                      GreedyCase{1001, kernels::kLogitParts},
                      GreedyCase{100, kernels::kLogitParts},  // V < PARTS: many empty slices
                      GreedyCase{5000, 7},                     // short last slice (710 of 715)
                      GreedyCase{512, kernels::logit_parts(512)},  // the tiny models' one slice
                      GreedyCase{262144, kernels::kLogitParts}),
    [](const auto& info) {
      return "sample_greedy_V" + std::to_string(info.param.V) + "_PARTS" +
             std::to_string(info.param.parts);
    });

// Draws `rows` samples at once (one per row, each its own random stream) from
// the same logits; returns the chosen ids.
std::vector<uint32_t> draw(const std::vector<float>& row, uint32_t rows, detail::SamplerState st,
                           std::span<const uint32_t> history = {},
                           uint32_t parts = kernels::kLogitParts) {
  const uint32_t V = uint32_t(row.size());
  std::vector<float> logits;
  for (uint32_t r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());
  HostBuffer l(logits.size() * 4), out(rows * 4);
  l.fill<float>(logits);
  const auto params = sampler_buffer(st, history, rows);
  logits_max_then_sample(l, out, params, V, parts, rows, rows);
  const auto ids = out.as<uint32_t>();
  return {ids.begin(), ids.end()};
}

// Draws `batches` x `rows` tokens from a row of V logits at -60 but logits 2,
// 1 and 0 at ids[0..2] (temperature 0.8, the rest of `st` as given): each
// live token's frequency within 5 standard deviations of softmax(l / T), and
// no other token drawn.
void expect_frequencies(uint32_t V, std::array<uint32_t, 3> ids, detail::SamplerState st, int batches,
                        uint32_t rows, const char* what) {
  std::vector<float> row(V, -60.f);
  const float logit[] = {2.0f, 1.0f, 0.0f};
  for (size_t i = 0; i < 3; ++i) row[ids[i]] = logit[i];
  st.temperature = 0.8f;
  double z = 0;
  for (float v : logit) z += std::exp(v / st.temperature);
  std::map<uint32_t, int> count;
  for (int b = 0; b < batches; ++b) {
    st.counter = uint32_t(b);
    for (uint32_t id : draw(row, rows, st)) count[id]++;
  }
  const double n = double(batches) * rows;
  for (size_t i = 0; i < 3; ++i) {
    const double p = std::exp(logit[i] / st.temperature) / z, sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(count[ids[i]], n * p, 5 * sd) << what << ": token " << ids[i];
  }
  EXPECT_EQ(count[ids[0]] + count[ids[1]] + count[ids[2]], int(n)) << what;
}

// Frequencies follow softmax(l / T): three live tokens, 2048 draws.
TEST(Sample, FrequenciesFollowTheDistribution) {
  expect_frequencies(1000, {10, 500, 999}, {0.8f, 0, 1.f, 0.f, 1.f, 1234, 0, 0}, 8, 256,
                     "a token of probability ~e^-75 was drawn");
}

// The same through top-k's candidates (sample.comp gathers the logits a top-k
// cut keeps and runs top-p's bisection and the draw over them): top-k 3 keeps
// the three live tokens, top-p 0.99 all three of them.
TEST(Sample, TopKCandidatesFollowTheDistribution) {
  expect_frequencies(32768, {10, 16384, 32767}, {0.8f, 3, 0.99f, 0.f, 1.f, 4321, 0, 0}, 4, 256,
                     "top-k 3, top-p 0.99");
}

// Top-k keeps its cut's ties: 600 equal top logits with top-k 5 (candidates
// in shared memory) and 3000 (more than it holds: the whole-row way) are all
// drawn from, and never a token below them.
TEST(Sample, TopKKeepsTiesOnEitherPath) {
  for (uint32_t ties : {600u, 3000u}) {
    std::vector<float> row(20000, -5.f);
    for (uint32_t i = 0; i < ties; ++i) row[i * 6] = 1.0f;
    const auto ids = draw(row, 256, {1.0f, 5, 1.f, 0.f, 1.f, 99, 0, 0});
    std::set<uint32_t> seen;
    for (uint32_t id : ids) {
      EXPECT_TRUE(id % 6 == 0 && id / 6 < ties) << ties << " ties: drew token " << id << ", below the cut";
      seen.insert(id);
    }
    EXPECT_GT(seen.size(), 150u) << ties << " ties: 256 draws from them look degenerate";
  }
}

// Every draw lies in the set that top-k, top-p and min-p keep (computed here
// on the CPU), the same seed and counter give the same draws, another seed
// other draws.
TEST(Sample, FiltersAndSeeds) {
  const uint32_t V = 5000;
  const auto row = random_floats(V, -4.f, 4.f);
  const detail::SamplerState st{0.9f, 40, 0.8f, 0.02f, 1.f, 77, 5, 0, 0};
  // Reference kept set: temperature, top-k, top-p, min-p (Hugging Face's order).
  std::vector<uint32_t> order(V);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return row[a] > row[b]; });
  const double m = row[order[0]];
  std::vector<uint32_t> kept(order.begin(), order.begin() + st.top_k);
  double total = 0, run_mass = 0;
  for (uint32_t id : kept) total += std::exp((row[id] - m) / st.temperature);
  size_t keep_p = 0;
  while (run_mass < st.top_p * total) run_mass += std::exp((row[kept[keep_p++]] - m) / st.temperature);
  kept.resize(keep_p);
  std::erase_if(kept, [&](uint32_t id) { return std::exp((row[id] - m) / st.temperature) < st.min_p; });
  const std::set<uint32_t> allowed(kept.begin(), kept.end());

  const auto a = draw(row, 256, st), b = draw(row, 256, st);
  auto other = st;
  other.seed = 78;
  const auto c = draw(row, 256, other);
  EXPECT_EQ(a, b) << "same seed and counter must give the same tokens";
  EXPECT_NE(a, c) << "another seed must give other tokens";
  std::set<uint32_t> seen;
  for (uint32_t id : a) {
    EXPECT_TRUE(allowed.count(id)) << "drew token " << id << ", outside the " << allowed.size()
                                   << " tokens top-k/top-p/min-p keep";
    seen.insert(id);
  }
  EXPECT_GT(seen.size(), 3u) << "256 draws from " << allowed.size() << " tokens look degenerate";
  // Top-k 40 over 7 slices: no bound from the slices' maxima (k > slices),
  // the cut from the whole row, then the same candidates.
  for (uint32_t id : draw(row, 256, st, {}, 7))
    EXPECT_TRUE(allowed.count(id)) << "7 slices: drew token " << id << ", outside the kept set";
}

// The repetition penalty divides positive logits and multiplies negative ones
// of the history tokens (greedy here, so the effect is exact).
TEST(Sample, RepetitionPenalty) {
  std::vector<float> row(512, -50.f);
  row[5] = 10.f, row[7] = 6.f, row[9] = -1.f, row[11] = -1.5f;
  auto st = greedy_state();
  st.repeat_penalty = 2.0f;
  const uint32_t hist1[] = {5};
  EXPECT_EQ(draw(row, 1, st, hist1)[0], 7u) << "10 / 2 = 5 < 6";
  const uint32_t hist2[] = {5, 7};
  EXPECT_EQ(draw(row, 1, st, hist2)[0], 5u) << "5 > 3";
  std::vector<float> neg(512, -50.f);
  neg[9] = -1.f, neg[11] = -1.5f;
  const uint32_t hist3[] = {9};
  EXPECT_EQ(draw(neg, 1, st, hist3)[0], 11u) << "-1 * 2 = -2 < -1.5";
}

// OpenAI's penalties (the server's presence_penalty and frequency_penalty):
// each history token's logit loses frequency x its count, plus presence once,
// after the repetition penalty; other logits are untouched.
TEST(Sample, PresenceAndFrequencyPenalties) {
  const uint32_t V = 3000;
  std::vector<float> row(V, -50.f);
  row[5] = 10.f, row[7] = 9.f, row[9] = 8.f, row[11] = -2.f;
  const uint32_t hist[] = {5, 7, 11}, counts[] = {3, 1, 2};
  auto st = greedy_state();
  st.presence_penalty = 0.5f;
  st.frequency_penalty = 1.0f;
  st.repeat_penalty = 2.0f;
  HostBuffer l(V * 4), out(4);
  l.fill<float>(row);
  logits_max_then_sample(l, out, sampler_buffer(st, hist, 1, counts), V, kernels::kLogitParts, 1, 1);
  const auto got = l.as<float>();
  EXPECT_EQ(got[5], 10.f / 2 - 3 - 0.5f);   // 1.5
  EXPECT_EQ(got[7], 9.f / 2 - 1 - 0.5f);    // 3.0
  EXPECT_EQ(got[11], -2.f * 2 - 2 - 0.5f);  // -6.5
  EXPECT_EQ(got[9], 8.f) << "not in the history";
  EXPECT_EQ(out.as<uint32_t>()[0], 9u) << "8 now leads";
  // Negative penalties favour the history, as OpenAI's do.
  st.repeat_penalty = 1.f;
  st.presence_penalty = -3.f;
  st.frequency_penalty = 0.f;
  l.fill<float>(row);
  logits_max_then_sample(l, out, sampler_buffer(st, hist, 1, counts), V, kernels::kLogitParts, 1, 1);
  EXPECT_EQ(l.as<float>()[7], 12.f);
  EXPECT_EQ(out.as<uint32_t>()[0], 5u) << "13 leads";
}

// logits_max applies the penalty in place, each slice its own history tokens:
// a history longer than the workgroup (300 ids over a 5001-logit row whose last
// slice is short, the row maximum among them), checked against
// reference::repetition_penalty element by element (untouched logits bit for
// bit), with the partials and the greedy choice over the penalised row.
TEST(Sample, RepetitionPenaltyAcrossSlices) {
  const uint32_t V = 5001, parts = kernels::kLogitParts, rows = 2;
  auto row = random_floats(V, -8.f, 8.f);
  std::vector<uint32_t> ids(V);
  std::iota(ids.begin(), ids.end(), 0u);
  std::shuffle(ids.begin(), ids.end(), rng());
  std::vector<uint32_t> history(ids.begin(), ids.begin() + 300);  // distinct, as the engine's
  std::erase(history, V - 1);
  history.push_back(V - 1);  // the last slice, which holds only this logit
  row[V - 1] = 9.f;  // the maximum, penalised to 9 / 1.5 = 6
  const uint32_t top = reference::argmax(row);
  auto st = greedy_state();
  st.repeat_penalty = 1.5f;
  std::vector<float> logits;
  for (uint32_t r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());
  HostBuffer l(logits.size() * 4), out(rows * 4);
  l.fill<float>(logits);
  const auto params = sampler_buffer(st, history, rows);
  const auto partials = logits_max_then_sample(l, out, params, V, parts, rows, rows);
  auto want = row;
  reference::repetition_penalty(want, history, st.repeat_penalty);
  const std::set<uint32_t> penalised(history.begin(), history.end());
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t i = 0; i < V; ++i) {
      const float got = l.as<float>()[size_t(r) * V + i];
      if (penalised.count(i))
        ASSERT_NEAR(got, want[i], std::abs(want[i]) * 1e-6) << "row " << r << " logit " << i;
      else
        ASSERT_EQ(got, want[i]) << "row " << r << " logit " << i << " is not in the history";
    }
    const auto got_row = l.as<float>().subspan(size_t(r) * V, V);
    EXPECT_TRUE(check_partials("logits_max (penalty)", partials, r, got_row, parts));
    EXPECT_EQ(out.as<uint32_t>()[r], reference::argmax(want)) << "row " << r;
  }
  EXPECT_NE(reference::argmax(want), top) << "the test's premise: the penalty moves the maximum";
}

// Sampling (temperature > 0) draws from the penalised logits: token 3 leads by
// 0.1 before the penalty and trails token 4 by ~2.9 after it; at T = 0.1
// (e^-29 odds) all 64 draws are 4; without the penalty they are mixed (73% 3).
TEST(Sample, PenaltyAppliesToDraws) {
  std::vector<float> row(3000, -60.f);
  row[3] = 3.0f, row[4] = 2.9f;
  detail::SamplerState st{0.1f, 0, 1.f, 0.f, 100.f, 99, 1, 0, 0};
  const uint32_t hist[] = {3};
  for (uint32_t id : draw(row, 64, st, hist)) ASSERT_EQ(id, 4u);
  st.repeat_penalty = 1.f;
  std::set<uint32_t> seen;
  for (uint32_t id : draw(row, 64, st, hist)) seen.insert(id);
  EXPECT_EQ(seen, (std::set<uint32_t>{3, 4}));
}

// Logit biases (OpenAI's logit_bias) on the GPU, before the penalties: -100
// bans the greedy choice and every draw of it, +80 makes a far token the only
// one drawn at T = 1, and a token both biased and in the penalty history gets
// both (the bias first). Tokens at both ends of the row and in several
// slices, in a row of Gemma 3's 262,144 tokens.
TEST(Sample, LogitBias) {
  const uint32_t V = 262144;
  std::vector<float> row(V, -60.f);
  row[3] = 4.f, row[V - 1] = 3.9f, row[100000] = 3.8f;
  const auto with_bias = [&](detail::SamplerState st, std::vector<std::pair<uint32_t, float>> bias,
                             std::span<const uint32_t> history = {}) {
    st.bias_len = uint32_t(bias.size());
    const uint32_t rows = 8;
    std::vector<float> logits;
    for (uint32_t r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());
    HostBuffer l(logits.size() * 4), out(rows * 4);
    l.fill<float>(logits);
    // The engine's row: the state, the history, then the biases (ids, then values).
    std::vector<std::byte> bytes(detail::kSamplerRowBytes * rows);
    for (uint32_t r = 0; r < rows; ++r) {
      st.key = r;
      st.history_len = uint32_t(history.size());
      std::byte* p = bytes.data() + r * detail::kSamplerRowBytes;
      std::memcpy(p, &st, sizeof st);
      if (!history.empty()) std::memcpy(p + sizeof st, history.data(), history.size_bytes());
      for (size_t i = 0; i < bias.size(); ++i) {
        std::memcpy(p + detail::kSamplerBiasOffset + 4 * i, &bias[i].first, 4);
        std::memcpy(p + detail::kSamplerBiasOffset + 4ull * kMaxLogitBias + 4 * i, &bias[i].second, 4);
      }
    }
    HostBuffer params(bytes.size());
    params.fill<std::byte>(bytes);
    logits_max_then_sample(l, out, params, V, kernels::kLogitParts, rows, rows);
    const auto ids = out.as<uint32_t>();
    return std::vector<uint32_t>(ids.begin(), ids.end());
  };
  for (uint32_t id : with_bias(greedy_state(), {})) EXPECT_EQ(id, 3u);
  for (uint32_t id : with_bias(greedy_state(), {{3, -100.f}})) EXPECT_EQ(id, V - 1) << "3 is banned";
  for (uint32_t id : with_bias(greedy_state(), {{3, -100.f}, {V - 1, -0.2f}})) EXPECT_EQ(id, 100000u);
  for (uint32_t id : with_bias(greedy_state(), {{7, 70.f}})) EXPECT_EQ(id, 7u);
  detail::SamplerState warm{1.f, 0, 1.f, 0.f, 1.f, 5, 0, 0, 0};
  for (uint32_t id : with_bias(warm, {{3, -100.f}, {V - 1, -100.f}})) EXPECT_EQ(id, 100000u) << "only one left near the top";
  for (uint32_t id : with_bias(warm, {{50000, 80.f}})) EXPECT_EQ(id, 50000u);
  // Biased to 6 (first), then a repetition penalty of 3 on positive logits: 2, below 3.9.
  const uint32_t hist[] = {7};
  detail::SamplerState penalised = greedy_state();
  penalised.repeat_penalty = 3.f;
  for (uint32_t id : with_bias(penalised, {{7, 66.f}}, hist)) EXPECT_EQ(id, 3u);
  for (uint32_t id : with_bias(penalised, {{7, 75.f}}, hist)) EXPECT_EQ(id, 7u) << "(-60 + 75) / 3 = 5 > 4";
}

// Allowed-token masks (structured output: EngineCore::constrain) after the
// biases: a masked row chooses only among its stream's allowed tokens, greedy
// or drawn, and leaves the others at -inf for sample and logprobs; an
// unmasked row ignores its stream's mask. Rows take streams out of order (the
// mask is the row's stream's, not the row's), in a row of Gemma 3's vocabulary.
TEST(Sample, AllowedTokenMask) {
  const uint32_t V = 262144, rows = 3, words = detail::token_mask_words(V);
  std::vector<float> row(V, -60.f);
  row[3] = 4.f, row[V - 1] = 3.9f, row[100000] = 3.8f;
  std::vector<uint32_t> masks(size_t(rows) * words, 0);
  const auto allow = [&](uint32_t stream, uint32_t id) { masks[size_t(stream) * words + id / 32] |= 1u << (id % 32); };
  allow(2, V - 1), allow(2, 100000), allow(2, 5);  // row 0's stream
  allow(1, 50000);                                // row 1's stream, but row 1 is not masked
  allow(0, 50000), allow(0, 7);                   // row 2's stream
  const detail::StepRow step_rows[rows] = {{0, 0, 2, 0}, {0, 0, 1, 1}, {0, 0, 0, 2}};
  for (const bool drawn : {false, true}) {
    std::vector<float> logits;
    for (uint32_t r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());
    logits[size_t(2) * V + 7] = -61.f;  // row 2: 50000 (-60) beats 7 whatever the draw
    HostBuffer l(logits.size() * 4), out(rows * 4), m(masks.size() * 4);
    l.fill<float>(logits);
    m.fill<uint32_t>(masks);
    detail::SamplerState st = greedy_state();
    if (drawn) st.temperature = 0.5f, st.seed = 9;
    std::vector<std::byte> bytes(detail::kSamplerRowBytes * rows);
    for (uint32_t r = 0; r < rows; ++r) {
      st.key = r;
      st.masked = r != 1;
      std::memcpy(bytes.data() + r * detail::kSamplerRowBytes, &st, sizeof st);
    }
    HostBuffer params(bytes.size());
    params.fill<std::byte>(bytes);
    const auto step = step_buffer(step_rows, rows);
    logits_max_then_sample(l, out, params, V, kernels::kLogitParts, rows, rows, &m, &step);
    const auto ids = out.as<uint32_t>();
    const std::string how = drawn ? "drawn at T = 0.5" : "greedy";
    if (!drawn) EXPECT_EQ(ids[0], V - 1) << how << ": 3 is the largest but not allowed";
    EXPECT_TRUE(ids[0] == V - 1 || ids[0] == 100000) << how << ": " << ids[0];
    if (!drawn) EXPECT_EQ(ids[1], 3u) << how << ": the unmasked row";
    EXPECT_TRUE(ids[1] == 3 || ids[1] == V - 1 || ids[1] == 100000) << how << ": the unmasked row, " << ids[1];
    EXPECT_EQ(ids[2], 50000u) << how;
    const auto after = l.as<float>();
    EXPECT_EQ(after[3], -INFINITY) << "banned tokens are -inf for logprobs";
    EXPECT_EQ(after[5], -60.f) << "allowed tokens keep their logits";
    EXPECT_EQ(after[size_t(V) + 3], 4.f) << "the unmasked row is untouched";
    EXPECT_EQ(after[size_t(2) * V + V - 1], -INFINITY);
  }
}

// logprobs after sample, as the Recorder dispatches it: per row, the chosen
// token's log-probability and the `top` most likely (largest first, the lower
// id first among equals) against a log-softmax in double on the host; a row
// that asks for none is left as it was. Gemma 3's vocabulary and a small one,
// ties at the top, greedy and drawn rows.
TEST(Sample, Logprobs) {
  for (const uint32_t V : {262144u, 512u}) {
    const uint32_t parts = kernels::logit_parts(V), rows = 3;
    std::vector<float> logits(size_t(rows) * V);
    uint32_t x = 12345;
    for (float& l : logits) {
      x = x * 1664525u + 1013904223u;
      l = float(x >> 8) / float(1u << 24) * 20.f - 10.f;
    }
    for (uint32_t r = 0; r < rows; ++r) {  // three tokens tie at the top
      logits[size_t(r) * V + 9] = logits[size_t(r) * V + 4] = logits[size_t(r) * V + V - 2] = 12.5f;
      logits[size_t(r) * V + 200] = 12.25f;
    }
    HostBuffer l(logits.size() * 4), chosen(rows * 4), out(size_t(rows) * detail::kLogprobRowFloats * 4);
    l.fill<float>(logits);
    out.fill<float>(std::vector<float>(size_t(rows) * detail::kLogprobRowFloats, 7.f));
    const uint32_t asked[rows] = {0, 1 + 5, 1 + 20};
    std::vector<std::byte> bytes(detail::kSamplerRowBytes * rows);
    for (uint32_t r = 0; r < rows; ++r) {
      detail::SamplerState st = greedy_state();
      if (r == 2) st.temperature = 1.f, st.seed = 3;
      st.key = r;
      st.logprobs = asked[r];
      std::memcpy(bytes.data() + r * detail::kSamplerRowBytes, &st, sizeof st);
    }
    HostBuffer params(bytes.size());
    params.fill<std::byte>(bytes);
    const HostBuffer partials = logits_max_then_sample(l, chosen, params, V, parts, rows, rows);
    const auto step = step_buffer({rows, 0, 0, rows});
    run("logprobs", kernels::kLogprobsBindings, kernels::Logprobs{V, parts},
        {&l, &partials, &params, &step, &chosen, &out}, {}, {rows, 1, 1});
    const auto got = out.as<float>();
    for (uint32_t j = 0; j < detail::kLogprobRowFloats; ++j) ASSERT_EQ(got[j], 7.f) << "row 0 asked for none";
    for (uint32_t r = 1; r < rows; ++r) {
      const std::span<const float> row(logits.data() + size_t(r) * V, V);
      double m = -INFINITY, sum = 0;
      for (float v : row) m = std::max<double>(m, v);
      for (float v : row) sum += std::exp(double(v) - m);
      const double log_z = m + std::log(sum);
      const uint32_t c = chosen.as<uint32_t>()[r];
      const float* g = got.data() + size_t(r) * detail::kLogprobRowFloats;
      EXPECT_NEAR(g[0], row[c] - log_z, 2e-4) << "V " << V << " row " << r << " chosen " << c;
      uint32_t top;
      std::memcpy(&top, &g[1], 4);
      ASSERT_EQ(top, asked[r] - 1);
      std::vector<uint32_t> order(V);
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return row[a] > row[b]; });
      for (uint32_t j = 0; j < top; ++j) {
        uint32_t id;
        std::memcpy(&id, &g[2 + 2 * j], 4);
        EXPECT_EQ(id, order[j]) << "V " << V << " row " << r << " alternative " << j;
        EXPECT_NEAR(g[3 + 2 * j], row[order[j]] - log_z, 2e-4);
      }
      EXPECT_EQ(std::vector<uint32_t>(order.begin(), order.begin() + 4), (std::vector<uint32_t>{4, 9, V - 2, 200}));
    }
  }
}

}  // namespace
}  // namespace unicorn
