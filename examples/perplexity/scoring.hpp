// examples/perplexity/scoring.hpp — what unicorn-perplexity computes from each
// scored position's logits, and the totals it reports.
//
// This is evaluation on the host, over logits the engine read back, as
// llama-perplexity does it: not an inference op, which the engine runs on the GPU only.
// Rows are scored on threads into per-row results that are summed in row
// order, so a report does not depend on the number of threads.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "kld_base.hpp"

namespace unicorn::perplexity {

// One scored position: the next token's negative log-likelihood, and against a
// base row, the KL divergence from the base, the base's figures and whether
// both put the same token on top.
struct RowScore {
  double nll = 0;
  double nll_base = 0, kld = 0, p_diff = 0;
  bool same_top = false;
};

struct LogSoftmax {
  float max;         // the largest logit
  int32_t argmax;    // its first index
  double log_sum;    // log sum_i exp(logit_i - max)
};
inline LogSoftmax log_softmax_of(std::span<const float> logits) {
  LogSoftmax s{logits[0], 0, 0};
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > s.max) s = {logits[i], int32_t(i), 0};
  double sum = 0;
  for (const float l : logits) sum += std::exp(double(l - s.max));
  s.log_sum = std::log(sum);
  return s;
}

// A row of a base file: what kld_base.hpp stores beside the steps.
struct SavedRow {
  float floor = 0, next_log_prob = 0;
};

// The row's score; with `save`, also its log-probabilities quantized for a
// base file (q has the row's length).
inline RowScore score_row(std::span<const float> logits, int32_t target, std::span<uint16_t> save, SavedRow* saved) {
  const LogSoftmax s = log_softmax_of(logits);
  RowScore r;
  r.nll = double(s.max) + s.log_sum - double(logits[size_t(target)]);
  if (!save.empty()) {
    std::vector<float> lp(logits.size());
    for (size_t i = 0; i < lp.size(); ++i) lp[i] = float(double(logits[i] - s.max) - s.log_sum);
    *saved = {quantize_log_probs(lp, float(-s.log_sum), save), float(-r.nll)};
  }
  return r;
}

// The row's score against a base row (kld_base.hpp), the base renormalized
// over the tokens it kept.
inline RowScore compare_row(std::span<const float> logits, int32_t target, const LogProbRow& base) {
  const LogSoftmax s = log_softmax_of(logits);
  RowScore r;
  r.nll = double(s.max) + s.log_sum - double(logits[size_t(target)]);
  double z = 0;
  uint16_t top_q = 0;
  int32_t top_base = 0;
  for (size_t i = 0; i < base.q.size(); ++i) {
    if (base.q[i] == 0) continue;
    z += std::exp(double(base.floor) + base.q[i] * double(kLogProbStep));
    if (base.q[i] > top_q) top_q = base.q[i], top_base = int32_t(i);
  }
  const double log_z = std::log(z);
  auto base_lp = [&](size_t i) { return double(base.floor) + base.q[i] * double(kLogProbStep) - log_z; };
  const double lse = double(s.max) + s.log_sum;
  double kld = 0;
  for (size_t i = 0; i < base.q.size(); ++i) {
    if (base.q[i] == 0) continue;
    const double lb = base_lp(i);
    kld += std::exp(lb) * (lb - (double(logits[i]) - lse));
  }
  r.kld = kld;
  r.nll_base = -double(base.next_log_prob);
  r.p_diff = std::exp(-r.nll) - std::exp(-r.nll_base);
  r.same_top = top_base == s.argmax;
  return r;
}

// Runs fn(row) for rows [0, n) on the machine's threads.
template <class Fn>
void for_rows(uint32_t n, Fn&& fn) {
  const uint32_t threads = std::min<uint32_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (uint32_t t = 1; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (uint32_t i = t; i < n; i += threads) fn(i);
    });
  for (uint32_t i = 0; i < n; i += threads) fn(i);
  for (auto& th : pool) th.join();
}

// A mean and its standard error.
struct Estimate {
  double value = 0, uncertainty = 0;
};
inline Estimate mean_of(double sum, double sum2, size_t n) {
  if (n == 0) return {};
  const double mean = sum / double(n), var = sum2 / double(n) - mean * mean;
  return {mean, n > 1 && var > 0 ? std::sqrt(var / double(n - 1)) : 0.0};
}

// The value below which `fraction` of the sorted values lie (linear between neighbours).
inline double percentile(const std::vector<double>& sorted, double fraction) {
  const double at = fraction * double(sorted.size() - 1);
  const size_t i = size_t(at);
  const double w = at - double(i);
  return i + 1 < sorted.size() ? (1 - w) * sorted[i] + w * sorted[i + 1] : sorted.back();
}

// Every scored position's results, in order.
struct Totals {
  std::vector<RowScore> rows;
  bool against_base = false;

  Estimate mean_nll() const { return mean(&RowScore::nll); }
  // PPL and its uncertainty: exp(mean NLL) and PPL times the mean's standard error.
  Estimate ppl() const { return exp_of(mean_nll()); }
  Estimate ppl_base() const { return exp_of(mean(&RowScore::nll_base)); }
  // ln(PPL / PPL(base)): the mean of the per-token differences, whose standard
  // error counts the correlation of the two runs.
  Estimate log_ppl_ratio() const {
    double s = 0, s2 = 0;
    for (const auto& r : rows) s += r.nll - r.nll_base, s2 += (r.nll - r.nll_base) * (r.nll - r.nll_base);
    return mean_of(s, s2, rows.size());
  }
  Estimate kld() const { return mean(&RowScore::kld); }
  Estimate p_diff() const { return mean(&RowScore::p_diff); }
  double rms_p_diff() const {
    double s2 = 0;
    for (const auto& r : rows) s2 += r.p_diff * r.p_diff;
    return rows.empty() ? 0 : std::sqrt(s2 / double(rows.size()));
  }
  Estimate same_top() const {
    const double n = double(rows.size()), p = double(std::count_if(rows.begin(), rows.end(), [](const RowScore& r) {
                                             return r.same_top;
                                           })) / n;
    return {p, rows.size() > 1 ? std::sqrt(p * (1 - p) / (n - 1)) : 0.0};
  }
  std::vector<double> sorted(double RowScore::*field) const {
    std::vector<double> v;
    for (const auto& r : rows) v.push_back(r.*field);
    std::sort(v.begin(), v.end());
    return v;
  }

 private:
  Estimate mean(double RowScore::*field) const {
    double s = 0, s2 = 0;
    for (const auto& r : rows) s += r.*field, s2 += r.*field * r.*field;
    return mean_of(s, s2, rows.size());
  }
  static Estimate exp_of(Estimate log) {
    const double v = std::exp(log.value);
    return {v, v * log.uncertainty};
  }
};

}  // namespace unicorn::perplexity
