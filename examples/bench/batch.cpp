// examples/bench/batch.cpp — unicorn-bench --batch N: N streams prefilled as
// the server prefills waiting prompts, then batched decode steps (S_PP, S_TG
// and S, as llama-batched-bench's); and --invariance, which checks bits
// instead of timing.
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

// One pass of prefill_together: its chunks, their prompt tokens, the rows it
// computes (each chunk after the first starts at a multiple of the engine's
// prefill_alignment(), so the rows between hold padding) and its time.
struct PrefillPass {
  uint32_t chunks = 0, tokens = 0, rows = 0;
  double ms = 0;
};

// The prompts, one a stream, prefilled as the server's scheduler does it
// (server/scheduler.hpp, start_prefill): each pass takes the prompts still
// prefilling, in stream order, as AnyEngine::prefill_pass packs them.
// Returns each stream's first token; fills `passes` with each pass.
std::vector<int32_t> prefill_together(AnyEngine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                      std::vector<PrefillPass>& passes) {
  passes.clear();
  std::vector<int32_t> first(prompts.size(), -1);
  std::vector<size_t> fed(prompts.size(), 0);
  for (size_t oldest = 0; oldest < prompts.size();) {
    std::vector<PromptChunk> rest;  // each unfinished prompt's tokens still to feed
    for (size_t s = oldest; s < prompts.size(); ++s) rest.push_back({uint32_t(s), std::span(prompts[s]).subspan(fed[s]), true});
    const std::vector<PromptChunk> chunks = engine.prefill_pass(rest);
    const auto start = Clock::now();
    const std::vector<int32_t> next = engine.prefill(chunks);
    PrefillPass p{uint32_t(chunks.size()), 0, 0, std::chrono::duration<double, std::milli>(Clock::now() - start).count()};
    for (const PromptChunk& c : chunks) {
      p.rows = engine.prefill_segment_start(p.rows) + uint32_t(c.tokens.size());
      p.tokens += uint32_t(c.tokens.size());
    }
    passes.push_back(p);
    for (size_t i = 0; i < chunks.size(); ++i) {
      fed[chunks[i].stream] += chunks[i].tokens.size();
      if (chunks[i].ends_prompt) first[chunks[i].stream] = next[i];
    }
    while (oldest < prompts.size() && fed[oldest] == prompts[oldest].size()) ++oldest;
  }
  return first;
}

// --batch N --invariance: whether a stream's logits are the same bits run
// after run, and alone or among N streams, on this file and device: what the
// server's batch invariance (AnyEngine::BatchPasses::Fixed) rests on. Each
// check compares raw logits rows; one line each, and an exit status of 1 if
// any differs. Prompts of o.prompt random tokens, then o.generate steps.
int run_invariance(AnyEngine& engine, const Options& o, std::mt19937& rng) {
  const uint32_t n = o.batch, V = engine.config().model.vocab;
  if (n < 2 || n > engine.config().streams)
    throw Error("--invariance: --batch between 2 and " + std::to_string(engine.config().streams));
  engine.set_batch_passes(AnyEngine::BatchPasses::Fixed);
  std::uniform_int_distribution<int32_t> token(3, int32_t(V) - 1);
  std::vector<std::vector<int32_t>> prompts(n, std::vector<int32_t>(o.prompt));
  for (auto& p : prompts)
    for (auto& t : p) t = token(rng);
  int failures = 0;
  // Rows of a and b that differ, and the largest difference relative to the logits' scale.
  const auto report = [&](const char* what, const float* a, const float* b, size_t rows) {
    size_t differing = 0;
    double diff = 0, scale = 0;
    for (size_t r = 0; r < rows; ++r) {
      differing += std::memcmp(a + r * V, b + r * V, size_t(V) * 4) != 0;
      for (size_t i = r * V; i < (r + 1) * V; ++i)
        diff = std::max(diff, double(std::fabs(a[i] - b[i]))), scale = std::max(scale, double(std::fabs(b[i])));
    }
    failures += differing != 0;
    std::printf("%-58s %s", what, differing ? "DIFFER" : "same bits");
    if (differing) std::printf(" (%zu of %zu rows, worst %.2e of the scale)", differing, rows, diff / scale);
    std::printf("\n");
  };
  // Prefill: stream 0's prompt alone, twice; then every prompt packed into
  // passes as the server packs waiting prompts.
  const auto alone = [&] {
    engine.reset(0);
    std::vector<float> last;
    for (size_t done = 0; done < prompts[0].size(); done += engine.config().prefill_chunk) {
      const size_t len = std::min<size_t>(engine.config().prefill_chunk, prompts[0].size() - done);
      const PromptChunk c{0, std::span(prompts[0]).subspan(done, len), done + len == prompts[0].size()};
      last = engine.forward_logits(std::span(&c, 1));
    }
    return last;
  };
  const auto prefill_alone = alone(), prefill_again = alone();
  report("prefill: a prompt alone, run twice", prefill_again.data(), prefill_alone.data(), 1);
  engine.reset();
  std::vector<float> prefill_shared;  // each prompt's last row, stream order
  std::vector<size_t> fed(n, 0);
  for (size_t oldest = 0; oldest < n;) {
    std::vector<PromptChunk> rest;
    for (size_t s = oldest; s < n; ++s) rest.push_back({uint32_t(s), std::span(prompts[s]).subspan(fed[s]), true});
    const std::vector<PromptChunk> chunks = engine.prefill_pass(rest);
    const std::vector<float> logits = engine.forward_logits(chunks);
    prefill_shared.insert(prefill_shared.end(), logits.begin(), logits.end());
    for (const PromptChunk& c : chunks) fed[c.stream] += c.tokens.size();
    while (oldest < n && fed[oldest] == prompts[oldest].size()) ++oldest;
  }
  report("prefill: a prompt alone, and packed with others", prefill_shared.data(), prefill_alone.data(), 1);
  // Decode: each step of all n streams, then (rewound) the same tokens again,
  // then stream 0 alone and in steps of at most 16 (the small pass), all fixed.
  std::vector<StreamToken> batch(n);
  for (uint32_t s = 0; s < n; ++s)
    batch[s] = {s, int32_t(std::max_element(prefill_shared.begin() + size_t(s) * V,
                                            prefill_shared.begin() + size_t(s + 1) * V) -
                           (prefill_shared.begin() + size_t(s) * V))};
  const auto rerun = [&](std::span<const StreamToken> part) {  // the same tokens, each stream rewound one
    for (const StreamToken& t : part) engine.rewind(t.stream, engine.position(t.stream) - 1);
    return engine.forward_logits(part);
  };
  const auto append = [](std::vector<float>& to, const std::vector<float>& rows) {
    to.insert(to.end(), rows.begin(), rows.end());
  };
  std::vector<float> whole, again, one, small;
  for (uint32_t step = 0; step < o.generate; ++step) {
    const auto w = engine.forward_logits(batch);
    append(whole, w);
    append(again, rerun(batch));
    append(one, rerun(std::span(batch).first(1)));
    for (uint32_t s = 0; s < n; s += 16) append(small, rerun(std::span(batch).subspan(s, std::min(16u, n - s))));
    for (uint32_t s = 0; s < n; ++s)
      batch[s].token = int32_t(std::max_element(w.begin() + size_t(s) * V, w.begin() + size_t(s + 1) * V) -
                               (w.begin() + size_t(s) * V));
  }
  std::vector<float> whole0;  // stream 0's row of each step of all
  for (uint32_t step = 0; step < o.generate; ++step)
    whole0.insert(whole0.end(), whole.begin() + size_t(step) * n * V, whole.begin() + (size_t(step) * n + 1) * V);
  char line[96];
  std::snprintf(line, sizeof line, "decode: %u steps of %u streams, run twice", o.generate, n);
  report(line, again.data(), whole.data(), size_t(o.generate) * n);
  std::snprintf(line, sizeof line, "decode: stream 0 alone, and among %u", n);
  report(line, one.data(), whole0.data(), o.generate);
  std::snprintf(line, sizeof line, "decode: steps of at most 16, and of all %u", n);
  report(line, small.data(), whole.data(), size_t(o.generate) * n);
  std::printf("fixed passes: %s for %u streams, %s for 16 and 1\n", engine.batch_linear_path(n).c_str(), n,
              engine.batch_linear_path(16).c_str());
  return failures ? 1 : 0;
}

// --batch: o.batch streams, each with its own random prompt of o.prompt
// tokens, prefilled together (timed), then o.generate timed steps of all of them.
int run_batch(AnyEngine& engine, const Options& o, std::mt19937& rng, double roofline, nlohmann::json& j) {
  const uint32_t n = o.batch;
  if (n > engine.config().streams)
    throw Error("--batch " + std::to_string(n) + ": at most " + std::to_string(engine.config().streams) +
                " streams are compiled in");
  std::uniform_int_distribution<int32_t> token(3, int32_t(engine.config().model.vocab) - 1);
  std::vector<std::vector<int32_t>> prompts(n, std::vector<int32_t>(o.prompt));
  for (auto& p : prompts)
    for (auto& t : p) t = token(rng);
  std::vector<double> pp, agg, whole;
  std::vector<PrefillPass> passes;  // the last repetition's
  std::vector<StreamToken> batch(n);
  for (uint32_t r = 0; r <= o.repetitions; ++r) {  // a warm-up, then timed repetitions
    engine.reset();
    const auto a = Clock::now();
    const std::vector<int32_t> first = prefill_together(engine, prompts, passes);
    const auto b = Clock::now();
    for (uint32_t s = 0; s < n; ++s) batch[s] = {s, first[s]};
    for (uint32_t i = 0; i < o.generate; ++i) {
      const auto next = engine.decode(batch);
      for (uint32_t s = 0; s < n; ++s) batch[s].token = next[s];
    }
    const auto c = Clock::now();
    if (r == 0) continue;
    pp.push_back(double(n) * o.prompt / std::chrono::duration<double>(b - a).count());
    agg.push_back(double(n) * o.generate / std::chrono::duration<double>(c - b).count());
    whole.push_back(double(n) * o.generate / std::chrono::duration<double>(c - a).count());
  }
  const Stats st = stats(agg), pst = stats(pp), wst = stats(whole);
  j["batch"] = {{"streams", n},
                {"linear", engine.batch_linear_path(n)},
                {"prompt_tokens", o.prompt},
                {"tokens", o.generate},
                {"tokens_per_s", st.median},
                {"min", st.min},
                {"max", st.max},
                {"per_stream_tokens_per_s", st.median / n},
                {"roofline_tokens_per_s", roofline * n},
                {"roofline_percent", 100.0 * st.median / (roofline * n)},
                {"prefill_tokens_per_s", pst.median},
                {"whole_run_tokens_per_s", wst.median}};
  // The prefill's passes (the last repetition's): where the prompts' rows
  // went, alignment padding included.
  uint32_t pass_tokens = 0, pass_rows = 0;
  j["batch"]["prefill_alignment"] = engine.prefill_alignment();
  j["batch"]["prefill_passes"] = nlohmann::json::array();
  for (const PrefillPass& p : passes) {
    j["batch"]["prefill_passes"].push_back({{"chunks", p.chunks}, {"tokens", p.tokens}, {"rows", p.rows}, {"ms", p.ms}});
    pass_tokens += p.tokens, pass_rows += p.rows;
  }
  if (o.profile) {
    const auto p = engine.profile_batch(n);
    for (const auto& k : p.kernels)
      j["profile"]["batch"].push_back({{"kernel", k.kernel}, {"ms", k.ms}, {"dispatches", k.dispatches}});
    for (const auto& d : p.dispatches)  // every dispatch of a batched step, in order
      j["profile_batch_dispatches"].push_back({{"kernel", d.kernel}, {"us", d.us}, {"groups", d.groups}});
  }
  if (o.json) {
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  print_header(j);
  std::printf("%u streams, each with %u random prompt tokens, prefilled together, then %u steps of all of them (%s)\n",
              n, o.prompt, o.generate, engine.batch_linear_path(n).c_str());
  std::printf("| test                  | tokens/s (median ± half range, %u runs) | per stream | roofline | %% roofline |\n",
              o.repetitions);
  std::printf("| batch%-3u pp%-4u        | %s |            |          |            |\n", n, o.prompt,
              fmt_stats(pst).c_str());
  std::printf("| batch%-3u tg%-4u        | %s | %10.1f | %8.1f | %9.1f%% |\n", n, o.generate,
              fmt_stats(st).c_str(), st.median / n, roofline * n, 100.0 * st.median / (roofline * n));
  std::printf("| batch%-3u pp%-4u+tg%-4u | %s | %10.1f |          |            |\n", n, o.prompt, o.generate,
              fmt_stats(wst).c_str(), wst.median / n);
  std::printf("prefill: %zu passes of up to %u rows; %u prompt tokens in %u rows (segments start at multiples of %u)\n",
              passes.size(), engine.config().prefill_chunk, pass_tokens, pass_rows,
              engine.prefill_alignment());
  if (o.profile)
    for (const auto& k : j["profile"]["batch"])
      std::printf("  %-16s %9.3f ms  (%u dispatches)\n", k["kernel"].template get<std::string>().c_str(),
                  k["ms"].template get<double>(), k["dispatches"].template get<uint32_t>());
  return 0;
}

}  // namespace unicorn::examples::bench
