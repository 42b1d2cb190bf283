// unicorn-bench — prompt processing and generation speed, like llama-bench's
// pp512 / tg128, printed beside the decode roofline (measured read bandwidth /
// bytes read per token).
//
//   unicorn-bench --model gemma3-27b-q4_0.gguf -p 512 -n 128 -r 5 [--json] [--profile]
//   unicorn-bench --model gemma3-1b-q4_0.gguf --placement gtt     # weights in host memory
//   unicorn-bench --model gemma3-27b-qat.gguf --lm-head q8_0       # quantized copy for the LM head
//   unicorn-bench --model gemma3-4b-q4_0.gguf --batch 32 -p 128 -n 128   # 32 streams at once
//
// The engine for the file is picked from the deployments compiled in
// (catalog.hpp: official sizes x {Q4_0, Q8_0, QAT Q4_0 with F16 embedding} x
// placement); their code is compiled once (AnyEngine over engine/core.hpp), so
// each entry costs only its constexpr layout and budget, computed in one
// translation unit per model (catalog_*.cpp) that the build runs in parallel.
//
// --placement: vram (everything device-local, the default); gtt (every weight in
// Gtt — host-visible system memory the GPU reads, over PCIe on a discrete GPU —
// with the KV cache and activations in Vram); gtt-ffn (Q4_0 only: the FFN
// weights in Gtt). The roofline then uses each pool's measured read bandwidth.
//
// --batch N: N streams decoding together (Q4_0 and Q8_0, vram; an engine
// compiled for kBatchStreams streams runs N of them). Each stream gets its own
// random prompt of -p tokens, prefilled as the server prefills waiting prompts
// (several a pass), then -n batched steps feed every stream its last token.
// Three figures, as llama-batched-bench's S_PP, S_TG and S: prompt tokens/s of
// the prefill; aggregate tokens/s = N * n / the steps' time (its roofline reads
// the weights once per step: N times the single-stream one); and N * n / the
// whole run's time, prefill included: the same work as N clients of a server.
// The JSON also lists the prefill's passes (chunks, prompt tokens, the rows
// computed with the padding that aligns each stream's segment, time).
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

namespace {

using namespace unicorn;
using Clock = std::chrono::steady_clock;
using namespace unicorn::examples::bench;

struct Options {
  std::string model;
  uint32_t prompt = 512, generate = 128, repetitions = 5;
  uint32_t batch = 0;  // streams decoding together; 0: the single-stream pp/tg runs
  bool json = false, profile = false;
  bool plan = false;  // print the recorded passes and stop
  BenchPlacement placement = BenchPlacement::Vram;
  std::optional<Format> lm_head;  // a separate LM head in this format; none: tied to the embedding
  Products products = Products::by_scheme;
  bool sample = false;  // decode with llama.cpp's default sampling instead of greedy
  std::optional<uint32_t> logprobs;  // each token's log-probability and this many alternatives (the server's logprobs)
  bool invariance = false;  // with --batch: check bits instead of timing (run_invariance)
  // Structured output: every generated token constrained by a grammar (GBNF)
  // or a JSON schema, its mask computed on the host as the server does; the
  // vocabulary is the tokenizer's (--tokenizer).
  std::string grammar, json_schema, tokenizer;
  // An image through the encoder (--mmproj, or the one beside the model), and
  // a prompt that holds it: the image's own costs beside the text's.
  std::string image, mmproj;
  // Speculative decoding: a draft model's file, the most tokens it drafts a
  // round, a forced acceptance rate (the mechanics' speed whatever the
  // weights), and a text whose tokens are the prompts (real acceptance).
  std::string draft, text;
  uint32_t draft_max = 8;
  std::optional<double> draft_accept;
};

// The grammar of --grammar or --json-schema (its matcher's state restarts
// whenever a document ends), and the host time of each token's mask.
struct Constraint {
  std::shared_ptr<const grammar::Grammar> rules;
  std::shared_ptr<const grammar::Vocabulary> vocabulary;
  std::optional<grammar::Matcher> matcher;
  std::vector<uint32_t> mask;
  std::vector<double> mask_us;  // allowed_tokens and the mask's copy to the engine, per token
  uint32_t documents = 0;       // ended, so far
  // Before a token: the mask of what may come next, to the engine.
  void before(AnyEngine& engine) {
    const auto t0 = Clock::now();
    if (!matcher || matcher->ended() || matcher->exhausted()) {
      documents += matcher.has_value();
      matcher.emplace(rules, vocabulary);
    }
    mask.assign(engine.mask_words(), 0);
    matcher->allowed_tokens(mask);
    engine.constrain(0, mask);
    mask_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  // After it: the chosen token advances the grammar (it was allowed).
  void after(int32_t token) {
    if (!matcher->accept(token))
      throw Error("internal: token " + std::to_string(token) + " was chosen but the grammar does not allow it");
  }
};
std::optional<Constraint> make_constraint(const Options& o) {
  if (o.grammar.empty() && o.json_schema.empty()) return std::nullopt;
  if (o.tokenizer.empty()) throw Error("--grammar and --json-schema need --tokenizer FILE (the model's vocabulary)");
  const auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot be read");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  Constraint c;
  const std::string gbnf = !o.grammar.empty() ? read(o.grammar) : [&] {
    const nlohmann::json schema = nlohmann::json::parse(read(o.json_schema), nullptr, false);
    if (schema.is_discarded()) throw Error(o.json_schema + ": not JSON");
    return grammar::gbnf_from_json_schema(schema);
  }();
  c.rules = grammar::compile_gbnf(gbnf);
  c.vocabulary = grammar::Vocabulary::from_tokenizer(text::load_tokenizer(o.tokenizer));
  return c;
}

struct Stats {
  double median = 0, min = 0, max = 0;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

// Whether entry `e` runs the file for these options: its placement, streams
// and LM head are the options', and the file fits it (engine/pick.hpp:
// every hyperparameter, and every tensor's type and shape).
bool matches(const Entry& e, const ModelFile& file, const Options& o) {
  const DeploymentConfig& c = e.deployment.config;
  const bool streams_fit = o.batch ? c.streams > 1 : c.streams == 1;
  const bool head_fits = o.lm_head ? c.scheme.separate_lm_head() && c.scheme.lm_head == *o.lm_head
                                   : !c.scheme.separate_lm_head();
  return e.placement == o.placement && streams_fit && head_fits &&
         file.runs_in(e.deployment);
}

std::string fmt_stats(const Stats& s) {
  char b[64];
  std::snprintf(b, sizeof b, "%9.1f ± %-7.1f", s.median, (s.max - s.min) / 2);
  return b;
}

// The lines every table starts with.
void print_header(const nlohmann::json& j) {
  std::printf("device: %s, read bandwidth %.0f GB/s (measured), %u multiprocessors (%s)\n",
              j["device"].get<std::string>().c_str(), j["read_bandwidth_gbps"].get<double>(),
              j["multiprocessors"].get<unsigned>(), j["multiprocessors_from"].get<std::string>().c_str());
  if (j["weight_bytes_gtt"].get<uint64_t>())
    std::printf("placement %s: %.2f GiB of weights in Gtt, read at %.1f GB/s (measured)\n",
                j["placement"].get<std::string>().c_str(),
                j["weight_bytes_gtt"].get<uint64_t>() / 1073741824.0,
                j["gtt_read_bandwidth_gbps"].get<double>());
  std::printf("prefill linear layers: %s\n", j["prefill_linear"].get<std::string>().c_str());
  std::printf("model: %s, %s weights %.2f GiB, loaded in %.2f s (%.2f GB/s; host-to-device copies %.1f GB/s: "
              "%.2f s at best)\n",
              j["model"].get<std::string>().c_str(), j["file"].get<std::string>().c_str(),
              j["weight_bytes"].get<uint64_t>() / 1073741824.0, j["load_seconds"].get<double>(),
              j["load_gbps"].get<double>(), j["upload_bandwidth_gbps"].get<double>(),
              j["load_bound_seconds"].get<double>());
  const auto& cache = j["startup"]["pipeline_cache"];
  std::printf("start-up: engine %.3f s (pipeline cache %s)\n", j["startup"]["engine_seconds"].get<double>(),
              cache["path"].get<std::string>().empty() ? "off"
              : cache["loaded_bytes"].get<uint64_t>()   ? "read from disk"
                                                        : "empty, written");
}

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

// --image: the file decoded and resized on the host, the encoder alone on
// the device (median of the repetitions after a warm-up), and the first token
// of a short question about the image (the image's rows and the question in
// one prefill), each timed as a user meets it.
int run_image(AnyEngine& engine, const Options& o, nlohmann::json& j) {
  std::ifstream in(o.image, std::ios::binary);
  const std::string file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.good() && !in.eof()) throw Error(o.image + ": cannot be read");
  vision::VisionEncoder& encoder = engine.vision_encoder();
  const VisionDims& v = engine.config().vision;
  const uint32_t hidden = engine.config().model.hidden;
  std::vector<double> decode_ms, encode_ms, first_token_ms;
  std::vector<float> pixels;
  const std::vector<std::string> files{file};
  for (uint32_t r = 0; r <= o.repetitions; ++r) {
    auto a = Clock::now();
    pixels = image::pixel_values(image::decode_image(std::as_bytes(std::span(file)), o.image), v);
    const double d_ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    a = Clock::now();
    encoder.encode(pixels);  // returns when the device is done
    const double e_ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    // A question about the image, from the file: what a user waits for.
    a = Clock::now();
    text::GenerateOptions q{.max_tokens = 1, .images = files};
    (void)engine.generate("Describe this image.", q);
    const double t_ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    if (r == 0) continue;  // warm-up: pipelines, caches
    decode_ms.push_back(d_ms), encode_ms.push_back(e_ms), first_token_ms.push_back(t_ms);
  }
  const auto median = [](std::vector<double> x) { std::sort(x.begin(), x.end()); return x[x.size() / 2]; };
  const double flops = double(vision::VisionEncoder::flops(v, hidden));
  const double enc = median(encode_ms);
  j["image"] = {{"file", o.image},
                {"encoder", std::string(v.name)},
                {"encoder_tensor_units", encoder.tensor_units()},
                {"decode_resize_ms", median(decode_ms)},
                {"encode_ms", enc},
                {"encode_tflops", flops / (enc * 1e-3) / 1e12},
                {"encode_tflop_per_image", flops / 1e12},
                {"first_token_ms", median(first_token_ms)},
                {"first_token_what", "decode + encode + prefill of the image's rows and a 5-token question"}};
  if (o.json) {
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  print_header(j);
  const auto& im = j["image"];
  std::printf("image %s: decode and resize %.2f ms (host), encoder %.2f ms on %s (%.2f TFLOP: %.1f TFLOP/s), "
              "first token of a question about it %.2f ms (median of %u)\n",
              o.image.c_str(), im["decode_resize_ms"].get<double>(), enc,
              encoder.tensor_units() ? "tensor units" : "fp32 tiles", flops / 1e12,
              im["encode_tflops"].get<double>(), im["first_token_ms"].get<double>(), o.repetitions);
  return 0;
}

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

int run(const CompiledDeployment& d, BenchPlacement placement, const Options& o) {
  gpu::Context ctx(tools::device_from_env());
  if (o.plan) {  // what the engine would run on this device, before any measurement
    EngineOptions options = tools::engine_options_from_env();
    options.products = o.products;
    const AnyEngine engine(ctx, d, options);
    std::printf("%s on %s (%u multiprocessors, %s)\n%s", std::string(d.config.model.name).c_str(),
                ctx.info().name.c_str(), ctx.info().multiprocessors, ctx.info().multiprocessors_source.c_str(),
                engine.plan().c_str());
    return 0;
  }
  if (o.prompt + o.generate + 1 > d.config.max_context)
    throw Error("-p + -n must stay under the bench context of " +
                std::to_string(d.config.max_context) + " tokens");
  const double bandwidth = gpu::measure_read_bandwidth(ctx);
  const double upload_bandwidth = gpu::measure_upload_bandwidth(ctx);
  auto t0 = Clock::now();
  // Buffers, pipelines (through the on-disk cache), recorded passes; tuning
  // from UNICORN_* variables for sweeps (tools/matvec_sweep.sh).
  EngineOptions options = tools::engine_options_from_env();
  options.products = o.products;
  AnyEngine engine(ctx, d, options);
  const double engine_s = std::chrono::duration<double>(Clock::now() - t0).count();
  t0 = Clock::now();
  const LoadReport load = engine.load(o.model, {.tokenizer = o.tokenizer, .mmproj = o.mmproj});
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  // The engine as loaded: the embedding in the file's format (Scheme::takes_embedding).
  const DeploymentConfig& config = engine.config();
  const LayoutView& layout = engine.layout();
  const uint64_t weight_bytes = layout.weight_bytes();
  // Weight bytes a decode step reads from each pool: all of them, but for the
  // embedding when the LM head has its own copy (then one row per token).
  const Budget budget = placement_budget(config, layout);
  const TensorSlot& embedding = layout.weight(Role::Embedding);
  const uint64_t unread = config.scheme.separate_lm_head() ? embedding.bytes : 0;
  const auto weights_in = [&](Pool p) {
    const auto& g = budget[p].group_bytes;
    return g[size_t(Group::Embeddings)] + g[size_t(Group::Attention)] + g[size_t(Group::Ffn)] -
           (embedding.pool == p ? unread : 0);
  };
  const uint64_t gtt_weight_bytes = weights_in(Pool::Gtt);
  const double gtt_bandwidth =
      gtt_weight_bytes ? gpu::measure_read_bandwidth(ctx, 7, gpu::MemoryKind::Gtt) : 0.0;

  std::mt19937 rng(42);
  std::uniform_int_distribution<int32_t> token(3, int32_t(d.config.model.vocab) - 1);
  std::vector<int32_t> prompt(o.prompt);
  for (auto& t : prompt) t = token(rng);
  // Decode reads every weight once per step, each from its pool.
  const double roofline =
      1.0 / (weights_in(Pool::Vram) / bandwidth + (gtt_weight_bytes ? gtt_weight_bytes / gtt_bandwidth : 0.0));
  const std::string device = ctx.info().name;
  const gpu::PipelineCache::Stats& cache = engine.pipeline_cache();
  nlohmann::json j = {
      {"model", std::string(d.config.model.name)},
      {"file", o.model},
      {"scheme", {{"embedding", format_name(config.scheme.embedding)},
                  {"weights", format_name(config.scheme.attention)},
                  {"formats", scheme_text(config)},
                  {"kv_cache", format_name(config.scheme.kv_cache)},
                  {"lm_head", config.scheme.separate_lm_head() ? format_name(config.scheme.lm_head)
                                                                    : "tied to the embedding"}}},
      {"device", device},
      {"multiprocessors", ctx.info().multiprocessors},
      {"multiprocessors_from", ctx.info().multiprocessors_source},
      {"placement", std::string(placement_name(placement))},
      {"prefill_linear", engine.prefill_linear_path()},
      {"decode_linear", engine.decode_linear_path()},
      {"weight_bytes", weight_bytes},
      {"weight_bytes_gtt", gtt_weight_bytes},
      {"read_bandwidth_gbps", bandwidth / 1e9},
      {"gtt_read_bandwidth_gbps", gtt_bandwidth / 1e9},
      {"repetitions", o.repetitions},
      {"load_seconds", load_s},
      {"load_gbps", load.bytes / load_s / 1e9},
      // The loading bound: the file's bytes at the measured host-to-device copy rate.
      {"upload_bandwidth_gbps", upload_bandwidth / 1e9},
      {"load_bound_seconds", load.bytes / upload_bandwidth},
      // Where the load's time went (LoadReport): the file opened and checked,
      // then the staging ring's waits for a free slot, copies and submissions.
      {"load_phases",
       {{"check_seconds", load.check_seconds},
        {"slot_wait_seconds", load.staging.wait_seconds},
        {"copy_seconds", load.staging.copy_seconds},
        {"submit_seconds", load.staging.submit_seconds},
        {"submissions", load.staging.submissions}}},
      {"startup",
       {{"engine_seconds", engine_s},
        {"pipeline_cache", {{"path", cache.path}, {"loaded_bytes", cache.loaded_bytes},
                            {"saved_bytes", cache.saved_bytes}, {"ignored", cache.ignored}}}}},
  };
  SamplingParams p;
  if (o.sample)  // llama-cli's defaults: the sampler's own cost is in tg
    p.temperature = 0.8f, p.top_k = 40, p.top_p = 0.95f, p.min_p = 0.05f, p.seed = 1;
  if (o.logprobs) p.logprobs = true, p.top_logprobs = *o.logprobs;
  engine.set_sampling(p);
  j["sampling"] = std::string(o.sample ? "temperature 0.8, top-k 40, top-p 0.95, min-p 0.05" : "greedy") +
                  (o.logprobs ? ", logprobs with " + std::to_string(*o.logprobs) + " alternatives" : "");
  if (!o.image.empty()) return run_image(engine, o, j);
  if (!o.draft.empty()) return run_speculative(engine, ctx, o, options, p, prompt, j);
  if (o.batch && o.invariance) return run_invariance(engine, o, rng);
  if (o.batch) return run_batch(engine, o, rng, roofline, j);
  std::optional<Constraint> constraint = make_constraint(o);
  if (constraint) j["sampling"] = j["sampling"].get<std::string>() + ", constrained by " +
                                  (o.grammar.empty() ? o.json_schema : o.grammar);

  // Warm-up (driver shader compilation, caches), then timed repetitions.
  // The warm-up's prefill is the first work after loading: the cold first-token
  // latency; the timed ones give the warm latency.
  std::vector<double> pp, tg;
  double first_token_cold_s = 0;
  for (uint32_t r = 0; r <= o.repetitions; ++r) {
    engine.reset();
    auto a = Clock::now();
    int32_t next = engine.prefill(prompt);
    const double pp_s = std::chrono::duration<double>(Clock::now() - a).count();
    if (r == 0) first_token_cold_s = pp_s;
    engine.reset();
    if (constraint) engine.set_sampling(p), constraint->matcher.reset(), constraint->before(engine);
    next = engine.prefill(std::span(prompt).first(1));
    a = Clock::now();
    if (constraint) {  // the host's mask between steps is in the time, as in the server
      for (uint32_t i = 0; i < o.generate; ++i) {
        constraint->after(next);
        constraint->before(engine);
        next = engine.decode(next);
      }
    } else {
      for (uint32_t i = 0; i < o.generate; ++i) next = engine.decode(next);
    }
    const double tg_s = std::chrono::duration<double>(Clock::now() - a).count();
    if (r == 0) continue;
    pp.push_back(o.prompt / pp_s);
    tg.push_back(o.generate / tg_s);
  }
  const Stats pps = stats(pp), tgs = stats(tg);
  j["pp"] = {{"tokens", o.prompt}, {"tokens_per_s", pps.median}, {"min", pps.min}, {"max", pps.max}};
  j["tg"] = {{"tokens", o.generate}, {"tokens_per_s", tgs.median}, {"min", tgs.min}, {"max", tgs.max}};
  j["roofline_tokens_per_s"] = roofline;
  j["roofline_percent"] = 100.0 * tgs.median / roofline;
  if (constraint) {
    auto& us = constraint->mask_us;
    std::sort(us.begin(), us.end());
    j["constraint"] = {{"masks", us.size()}, {"documents_ended", constraint->documents},
                       {"mask_us_median", us[us.size() / 2]}, {"mask_us_p99", us[us.size() * 99 / 100]},
                       {"mask_us_max", us.back()}};
  }
  j["startup"]["first_token_ms_cold"] = first_token_cold_s * 1e3;
  j["startup"]["first_token_ms_warm"] = o.prompt / pps.median * 1e3;
  if (o.profile) {
    nlohmann::json prof;
    engine.reset();
    for (const auto& [pass, n] : {std::pair{"decode", 1u}, std::pair{"prefill", o.prompt}}) {
      std::vector<int32_t> ids(std::min<uint32_t>(n, d.config.prefill_chunk), 5);
      const auto p = engine.profile(ids);
      for (const auto& k : p.kernels)
        prof[pass].push_back({{"kernel", k.kernel}, {"ms", k.ms}, {"dispatches", k.dispatches}});
      if (pass == std::string_view("decode")) {  // every dispatch of a decode step, in order
        uint32_t barriers = 0;
        for (const auto& step : p.dispatches) {
          j["profile_decode_dispatches"].push_back({{"kernel", step.kernel}, {"us", step.us},
                                                    {"groups", step.groups}, {"barrier", step.barrier_after}});
          barriers += step.barrier_after;
        }
        const double layers = d.config.model.layers;
        j["decode_step"] = {{"dispatches", p.dispatches.size()}, {"barriers", barriers},
                            {"dispatches_per_layer", double(p.dispatches.size()) / layers},
                            {"barriers_per_layer", barriers / layers}};
      }
    }
    j["profile"] = prof;
  }
  if (o.json) {
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  print_header(j);
  std::printf("start-up: first token after a %u-token prompt: %.1f ms cold, %.1f ms warm\n", o.prompt,
              first_token_cold_s * 1e3, o.prompt / pps.median * 1e3);
  std::printf("| test   | tokens/s (median ± half range, %u runs) | roofline | %% roofline |\n", o.repetitions);
  std::printf("| pp%-4u | %s |          |            |\n", o.prompt, fmt_stats(pps).c_str());
  std::printf("| tg%-4u | %s | %8.1f | %9.1f%% |\n", o.generate, fmt_stats(tgs).c_str(), roofline,
              100.0 * tgs.median / roofline);
  if (constraint) {
    const auto& c = j["constraint"];
    std::printf("constrained: each token's mask on the host %.1f us median, %.1f us p99 (%u masks, %u documents ended)\n",
                c["mask_us_median"].template get<double>(), c["mask_us_p99"].template get<double>(),
                c["masks"].template get<uint32_t>(), c["documents_ended"].template get<uint32_t>());
  }
  if (o.profile) {
    const auto& s = j["decode_step"];
    std::printf("decode step: %u dispatches, %u barriers (%.2f and %.2f a layer)\n",
                s["dispatches"].template get<uint32_t>(), s["barriers"].template get<uint32_t>(),
                s["dispatches_per_layer"].template get<double>(), s["barriers_per_layer"].template get<double>());
  }
  if (o.profile)
    for (const auto& [pass, list] : j["profile"].items()) {
      std::printf("profile, %s pass:\n", pass.c_str());
      for (const auto& k : list)
        std::printf("  %-16s %9.3f ms  (%u dispatches)\n", k["kernel"].template get<std::string>().c_str(),
                    k["ms"].template get<double>(), k["dispatches"].template get<uint32_t>());
    }
  return 0;
}

int dispatch(const ModelFile& file, const Options& o) {
  for (const Entry& e : catalog())
    if (matches(e, file, o)) return run(e.deployment, e.placement, o);
  throw Error(o.model + ": no compiled-in bench deployment matches this file (official Gemma 3 "
              "sizes in Q4_0, Q8_0, QAT Q4_0 with an F16 embedding, Q4_K_M, Q5_K_M, Q6_K or BF16) "
              "with --placement " +
              std::string(placement_name(o.placement)) +
              " (gtt-ffn: Q4_0 files only; --batch: Q4_0 and Q8_0 files, vram)" +
              (o.lm_head ? " and --lm-head (QAT files with an F16 embedding only, in Vram)" : ""));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"unicorn-bench: prompt and generation tokens/s beside the bandwidth roofline"};
  Options o;
  app.add_option("-m,--model", o.model, "GGUF file")->required();
  app.add_option("-p,--n-prompt", o.prompt, "prompt tokens (pp)")->capture_default_str();
  app.add_option("-n,--n-gen", o.generate, "generated tokens (tg)")->capture_default_str();
  app.add_option("-r,--repetitions", o.repetitions, "timed repetitions")->capture_default_str();
  auto* batch = app.add_option("--batch", o.batch,
                 "N streams decoding together (1 to " + std::to_string(kBatchStreams) +
                     "): each prefilled with -p tokens, then -n steps of all; aggregate tokens/s")
      ->check(CLI::Range(1u, kBatchStreams));
  app.add_flag("--json", o.json, "JSON output");
  app.add_flag("--profile", o.profile, "per-kernel device time (timestamp queries)");
  app.add_flag("--plan", o.plan,
               "print the passes the engine recorded for this file on this device (each dispatch's kernel, "
               "constants, workgroups and barriers) and stop");
  app.add_option("--placement", o.placement,
                 "vram: everything device-local; gtt: every weight in Gtt (host-visible system "
                 "memory); gtt-ffn: FFN weights in Gtt (Q4_0); default vram")
      ->transform(CLI::CheckedTransformer(std::map<std::string, BenchPlacement>{
          {"vram", BenchPlacement::Vram}, {"gtt", BenchPlacement::Gtt}, {"gtt-ffn", BenchPlacement::GttFfn}}));
  app.add_option("--lm-head", o.lm_head,
                 "q8_0 or q4_0: the LM head reads a copy of the F16 embedding in that format "
                 "(QAT files); default: the embedding itself")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Format>{{"q8_0", Format::Q8_0}, {"q4_0", Format::Q4_0}}));
  unicorn::generate::add_products_flag(app, o.products);
  app.add_flag("--sample", o.sample,
               "decode with llama-cli's default sampling (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05) "
               "instead of greedy");
  app.add_option("--logprobs", o.logprobs,
                 "compute each token's log-probability and N most likely alternatives on the GPU, as the "
                 "server's logprobs do (0-20)")
      ->check(CLI::Range(0u, kMaxTopLogprobs));
  app.add_flag("--invariance", o.invariance,
               "with --batch N: instead of timing, check that each stream's logits are the same bits run after "
               "run and alone or among N streams (the server's batch invariance); exit 1 if any differ")
      ->needs(batch);
  app.add_option("--grammar", o.grammar, "constrain every generated token by this GBNF file, its mask computed on "
                 "the host before each step as the server's structured output does (needs --tokenizer)");
  app.add_option("--json-schema", o.json_schema, "the same with a JSON schema file (response_format's json_schema)")
      ->excludes(app.get_option("--grammar"));
  app.add_option("--image", o.image,
                 "time an image (PNG, JPEG, ...): decoding, the encoder (and its TFLOP/s), and the first token of a "
                 "question about it (4B, 12B, 27B; with --mmproj or the mmproj*.gguf beside the model)");
  app.add_option("--mmproj", o.mmproj, "the image encoder's file (llama.cpp's mmproj GGUF) for --image");
  app.add_option("--tokenizer", o.tokenizer, "tokenizer.json or GGUF whose vocabulary the grammar's masks cover");
  auto* draft = app.add_option("--draft", o.draft,
                 "speculative decoding with this draft model (a GGUF of the same vocabulary): the verify pass's cost "
                 "for each k, the speed-up the costs give at acceptance 0.5, 0.7 and 0.9, and -n tokens in rounds");
  app.add_option("--draft-max", o.draft_max, "tokens the draft guesses a round (default 8)")->needs(draft);
  app.add_option("--draft-accept", o.draft_accept,
                 "keep each guess with this probability instead of checking it: the mechanics' speed whatever the "
                 "weights (random weights accept nothing)")
      ->check(CLI::Range(0.0, 0.99))->needs(draft);
  app.add_option("--text", o.text, "with --draft: the prompts are this text's tokens (real acceptance; -r runs, "
                 "each its own -p tokens of it)")->needs(draft);
  if (const auto status = unicorn::tools::parse(app, argc, argv, "unicorn-bench")) return *status;
  unicorn::tools::remove_temporaries_on_signals("unicorn-bench");  // the pipeline cache file's
  try {
    if (o.prompt == 0 || o.generate == 0 || o.repetitions == 0)
      throw Error("-p, -n and -r must be at least 1");
    o.model = unicorn::tools::resolve_model_path(o.model);  // ollama:NAME -> the blob in Ollama's store
    if (std::filesystem::is_directory(o.model))
      throw Error(o.model + ": a directory; unicorn-bench takes a GGUF file (its catalog's engines are of GGUF formats)");
    const int status = dispatch(ModelFile(o.model), o);
    io::check_stdout();  // a table or JSON that could not be written is a failure
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unicorn-bench: %s\n", e.what());
    return 1;
  }
}
