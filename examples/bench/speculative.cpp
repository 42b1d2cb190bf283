// examples/bench/speculative.cpp — unicorn-bench --draft: speculative
// decoding's costs (target step, draft step, verify passes of k + 1 rows)
// and its speed in rounds of guesses.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "catalog.hpp"
#include "options.hpp"  // examples/generate: --products, as the generator takes it
#include "unicorn/engine.hpp"
#include "unicorn/engine/pick.hpp"
#include "unicorn/grammar/json_schema.hpp"
#include "unicorn/grammar/matcher.hpp"
#include "unicorn/io/file_output.hpp"
#include "unicorn/text/load_tokenizer.hpp"
#include "program_exit.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/gpu/timing.hpp"
#include "unicorn/layout/print.hpp"
#include "ollama_env.hpp"
#include "tuning_env.hpp"
#include "bench.hpp"

namespace unicorn::examples::bench {

// --draft: speculative decoding's costs and speed on this file. Measured
// apart: a target decode step, a draft decode step, and the target's verify
// pass of k + 1 rows for k = 1 .. --draft-max (each token row checked
// in one pass over the weights). Then -n tokens made in rounds of --draft-max
// guesses, -r times: the draft guesses (its decode steps), the target checks
// (verify), and keeps the guesses up to the first it would not have chosen —
// or, with --draft-accept P, a count drawn as if each guess were right with
// probability P (the mechanics' speed, whatever the weights: random weights
// accept nothing). Printed: acceptance, tokens per verify pass, tokens/s
// beside the target alone, and the speed-up the measured costs give at
// acceptance 0.5, 0.7 and 0.9.
int run_speculative(AnyEngine& target, gpu::Context& ctx, const Options& o, const EngineOptions& options,
                    const SamplingParams& sampling, std::vector<int32_t> prompt, nlohmann::json& j) {
  const ModelFile file(o.draft);
  const Entry* entry = nullptr;
  const std::vector<Entry> all = catalog();
  for (const Entry& e : all)
    if (e.placement == BenchPlacement::Vram && e.deployment.config.streams == 1 &&
        !e.deployment.config.scheme.separate_lm_head() && file.runs_in(e.deployment)) {
      entry = &e;
      break;
    }
  if (!entry) throw Error(o.draft + ": no compiled-in one-stream bench deployment runs this draft file");
  if (entry->deployment.config.model.vocab != target.config().model.vocab)
    throw Error(o.draft + ": the draft's vocabulary has " + std::to_string(entry->deployment.config.model.vocab) +
                " tokens, the model's " + std::to_string(target.config().model.vocab));
  AnyEngine draft(ctx, entry->deployment, options);
  draft.load(o.draft);
  draft.set_sampling(sampling);  // the target's, so that its guesses can be right
  const uint32_t kmax = target.verify_rows() - 1;
  if (o.draft_max < 1 || o.draft_max > kmax)
    throw Error("--draft-max " + std::to_string(o.draft_max) + ": this engine verifies 1 to " + std::to_string(kmax));
  if (!o.text.empty()) {  // the prompts: the text's tokens
    std::ifstream in(o.text, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.good() && !in.eof()) throw Error(o.text + ": cannot be read");
    prompt = target.tokenizer().encode(text, /*add_bos=*/false);
    if (prompt.size() < size_t(o.prompt) * (o.repetitions + 1))
      throw Error(o.text + ": " + std::to_string(prompt.size()) + " tokens; -p " + std::to_string(o.prompt) + " x " +
                  std::to_string(o.repetitions + 1) + " runs need more");
  }
  const auto prompt_of = [&](uint32_t r) {  // each run its own prompt where the text gives one
    std::vector<int32_t> p{2};                // <bos>
    const size_t from = o.text.empty() ? 0 : size_t(r) * o.prompt;
    p.insert(p.end(), prompt.begin() + from, prompt.begin() + from + o.prompt - 1);
    return p;
  };
  const auto ms_since = [](Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); };
  const auto median = [](std::vector<double> x) { std::sort(x.begin(), x.end()); return x[x.size() / 2]; };
  // Costs, at the prompt's end: each a median of 32 (the stream rewound after each).
  const std::vector<int32_t> p0 = prompt_of(0);
  target.reset(0), draft.reset(0);
  int32_t last = target.prefill(0, p0);
  draft.feed(p0);
  const uint32_t pos = target.position(0);
  std::vector<int32_t> rows{last};
  for (uint32_t i = 0; i < kmax; ++i) rows.push_back(draft.decode(rows.back()));
  draft.rewind(0, pos);
  std::vector<double> step_ms, draft_ms;
  for (int i = 0; i < 33; ++i) {
    auto a = Clock::now();
    (void)target.decode(last);
    if (i) step_ms.push_back(ms_since(a));
    target.rewind(0, pos);
    a = Clock::now();
    (void)draft.decode(last);
    if (i) draft_ms.push_back(ms_since(a));
    draft.rewind(0, pos);
  }
  const double t_step = median(step_ms), t_draft = median(draft_ms);
  std::vector<double> t_verify(kmax + 1);
  for (uint32_t k = 1; k <= o.draft_max; ++k) {
    std::vector<double> v;
    for (int i = 0; i < 33; ++i) {
      const auto a = Clock::now();
      (void)target.verify(0, std::span(rows).first(k + 1));
      if (i) v.push_back(ms_since(a));
      target.rewind(0, pos);
    }
    t_verify[k] = median(v);
  }
  // Tokens per round at acceptance a, and what a round costs: k draft steps,
  // the verify pass, and the draft's feed of its last guess when all are kept.
  const auto speedup = [&](double a, uint32_t k) {
    const double tokens = (1 - std::pow(a, k + 1)) / (1 - a);
    return tokens * t_step / (k * t_draft + t_verify[k] + std::pow(a, k) * t_draft);
  };
  // Rounds: -n tokens, -r times after a warm-up.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<double> alone_tps, drafted_tps;
  uint64_t drafted = 0, accepted = 0, passes = 0;
  const uint32_t k = o.draft_max;
  for (uint32_t r = 0; r <= o.repetitions; ++r) {
    const std::vector<int32_t> p = prompt_of(r);
    target.reset(0);
    int32_t next = target.prefill(0, p);
    auto a = Clock::now();
    for (uint32_t i = 0; i < o.generate; ++i) next = target.decode(next);
    const double alone_ms = ms_since(a);
    target.reset(0), draft.reset(0);
    last = target.prefill(0, p);
    draft.feed(p);
    uint32_t made = 0;
    uint64_t r_drafted = 0, r_accepted = 0, r_passes = 0;
    a = Clock::now();
    while (made < o.generate) {
      const uint32_t q = target.position(0);
      std::vector<int32_t> guess{last};
      draft.set_draws(0, target.draws(0));  // the draws the target takes at these positions
      for (uint32_t i = 0; i < k; ++i) guess.push_back(draft.decode(guess.back()));
      const std::vector<int32_t> chosen = target.verify(0, guess);
      uint32_t kept = 0;
      if (o.draft_accept)
        while (kept < k && coin(rng) < *o.draft_accept) ++kept;
      else
        while (kept < k && chosen[kept] == guess[kept + 1]) ++kept;
      target.rewind(0, q + kept + 1);
      if (kept < k) draft.rewind(0, q + kept + 1);
      else draft.feed(std::span(guess).last(1));
      last = o.draft_accept ? guess[kept] : chosen[kept];
      made += kept + 1, r_drafted += k, r_accepted += kept, r_passes += 1;
    }
    const double drafted_ms = ms_since(a);
    if (r == 0) continue;
    alone_tps.push_back(o.generate / alone_ms * 1e3);
    drafted_tps.push_back(made / drafted_ms * 1e3);
    drafted += r_drafted, accepted += r_accepted, passes += r_passes;
  }
  const double alone = median(alone_tps), with_draft = median(drafted_tps);
  nlohmann::json table = nlohmann::json::array();
  for (uint32_t kk = 1; kk <= o.draft_max; ++kk)
    table.push_back({{"k", kk}, {"verify_ms", t_verify[kk]}, {"times_one_step", t_verify[kk] / t_step},
                     {"speedup_at_0.5", speedup(0.5, kk)}, {"speedup_at_0.7", speedup(0.7, kk)},
                     {"speedup_at_0.9", speedup(0.9, kk)}});
  j["speculative"] = {{"draft", o.draft},
                      {"draft_model", std::string(entry->deployment.config.model.name)},
                      {"draft_max", k},
                      {"acceptance", o.draft_accept ? nlohmann::json(*o.draft_accept) : nlohmann::json("measured")},
                      {"prompts", o.text.empty() ? "random tokens" : o.text},
                      {"target_step_ms", t_step},
                      {"draft_step_ms", t_draft},
                      {"verify", table},
                      {"accepted_fraction", drafted ? double(accepted) / drafted : 0.0},
                      {"tokens_per_verify_pass", passes ? double(accepted + passes) / passes : 0.0},
                      {"target_alone_tokens_per_s", alone},
                      {"speculative_tokens_per_s", with_draft},
                      {"speedup", with_draft / alone}};
  if (o.json) {
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  print_header(j);
  std::printf("speculative: draft %s (%s), a target step %.3f ms, a draft step %.3f ms\n", o.draft.c_str(),
              std::string(entry->deployment.config.model.name).c_str(), t_step, t_draft);
  std::printf("| k  | verify pass ms | x one step | speed-up at 0.5 | at 0.7 | at 0.9 |\n");
  for (uint32_t kk = 1; kk <= o.draft_max; ++kk)
    std::printf("| %-2u | %14.3f | %10.2f | %15.2f | %6.2f | %6.2f |\n", kk, t_verify[kk], t_verify[kk] / t_step,
                speedup(0.5, kk), speedup(0.7, kk), speedup(0.9, kk));
  std::printf("rounds of %u guesses, %s: %.1f %% kept, %.2f tokens a verify pass; %.1f tokens/s against %.1f alone "
              "(x%.2f; median of %u runs of %u tokens)\n",
              k, o.draft_accept ? ("acceptance forced to " + std::to_string(*o.draft_accept)).c_str() : "acceptance measured",
              100.0 * j["speculative"]["accepted_fraction"].get<double>(),
              j["speculative"]["tokens_per_verify_pass"].get<double>(), with_draft, alone, with_draft / alone,
              o.repetitions, o.generate);
  return 0;
}

}  // namespace unicorn::examples::bench
