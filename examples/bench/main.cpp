// unicorn-bench — prompt processing and generation speed, like llama-bench's
// pp512 / tg128, printed beside the decode roofline (measured read bandwidth /
// bytes read per token).
//
//   unicorn-bench --model gemma3-27b-q4_0.gguf -p 512 -n 128 -r 5 [--json] [--profile]
//   unicorn-bench --model gemma3-1b-q4_0.gguf --placement gtt     # weights in host memory
//   unicorn-bench --model gemma3-27b-qat.gguf --lm-head q8_0       # quantized copy for the LM head
//   unicorn-bench --model gemma3-4b-q4_0.gguf --batch 32 -p 128 -n 128   # 32 streams at once
//   unicorn-bench --model gemma3-4b-q4_0.gguf -d 16384                   # pp512 and tg128 after 16K tokens
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

#include "bench.hpp"

namespace {

using namespace unicorn;
using namespace unicorn::examples::bench;

int run(const CompiledDeployment& d, BenchPlacement placement, const Options& o) {
  gpu::Context ctx(tools::device_from_env());
  // The KV cache a run takes: kBenchContext positions, as every run before -d
  // took, or what -d, -p and -n need, at most the compiled context.
  const uint64_t needed = uint64_t{o.depth} + o.prompt + o.generate + 1;
  const uint32_t context = uint32_t(std::min<uint64_t>(std::max<uint64_t>(needed, kBenchContext), d.config.max_context));
  if (o.plan) {  // what the engine would run on this device, before any measurement
    EngineOptions options = tools::engine_options_from_env();
    options.products = o.products;
    options.context = context;
    const AnyEngine engine(ctx, d, options);
    std::printf("%s on %s (%u multiprocessors, %s)\n%s", std::string(d.config.model.name).c_str(),
                ctx.info().name.c_str(), ctx.info().multiprocessors, ctx.info().multiprocessors_source.c_str(),
                engine.plan().c_str());
    return 0;
  }
  if (needed > d.config.max_context)
    throw Error(std::string(o.depth ? "-d + " : "") + "-p + -n must stay under the bench context of " +
                std::to_string(d.config.max_context) + " tokens");
  const double bandwidth = gpu::measure_read_bandwidth(ctx);
  const double upload_bandwidth = gpu::measure_upload_bandwidth(ctx);
  auto t0 = Clock::now();
  // Buffers, pipelines (through the on-disk cache), recorded passes; tuning
  // from UNICORN_* variables for sweeps (tools/matvec_sweep.sh).
  EngineOptions options = tools::engine_options_from_env();
  options.products = o.products;
  options.context = context;
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
  std::vector<int32_t> prompt(o.prompt), depth(o.depth);
  for (auto& t : prompt) t = token(rng);
  for (auto& t : depth) t = token(rng);
  // Decode reads every weight once per step, each from its pool, and the KV
  // cache of the positions before it: at -d N, N + 1 in the global layers and
  // up to a window's in the sliding ones, K and V (with -d 0, a position's).
  const ModelDims& m = d.config.model;
  uint64_t kv_read = 0;
  for (uint32_t l = 0; l < m.layers; ++l) {
    const uint64_t positions = m.layer_kind(l) == AttentionKind::Global
                                   ? uint64_t{o.depth} + 1
                                   : std::min<uint64_t>(uint64_t{o.depth} + 1, m.sliding_window);
    kv_read += positions * 2 * row_bytes(config.scheme.kv_cache, m.kv_dim());
  }
  const double roofline = 1.0 / ((weights_in(Pool::Vram) + kv_read) / bandwidth +
                                 (gtt_weight_bytes ? gtt_weight_bytes / gtt_bandwidth : 0.0));
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
      {"depth", o.depth},
      {"context", context},
      {"kv_bytes_per_token", kv_read},
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
  // latency; the timed ones give the warm latency. With -d, pp and tg run after
  // that many tokens of context, prefilled untimed (llama-bench's -d): the
  // prompt where the depth ends, tg's steps from there (rewound to it).
  std::vector<double> pp, tg;
  double first_token_cold_s = 0;
  for (uint32_t r = 0; r <= o.repetitions; ++r) {
    engine.reset();
    if (o.depth) engine.prefill(depth);
    auto a = Clock::now();
    int32_t next = engine.prefill(prompt);
    const double pp_s = std::chrono::duration<double>(Clock::now() - a).count();
    if (r == 0) first_token_cold_s = pp_s;
    const bool rewound = o.depth && engine.can_rewind(0, o.depth - 1);
    if (rewound)
      engine.rewind(0, o.depth - 1);
    else
      engine.reset();
    if (constraint) engine.set_sampling(p), constraint->matcher.reset(), constraint->before(engine);
    next = engine.prefill(rewound ? std::span(depth).last(1)
                          : o.depth ? std::span<const int32_t>(depth)
                                    : std::span<const int32_t>(prompt).first(1));
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
  const std::string at = o.depth ? " @ d" + std::to_string(o.depth) : "";  // llama-bench's label
  std::printf("| test   | tokens/s (median ± half range, %u runs) | roofline | %% roofline |\n", o.repetitions);
  std::printf("| %s | %s |          |            |\n", ("pp" + std::to_string(o.prompt) + at).c_str(),
              fmt_stats(pps).c_str());
  std::printf("| %s | %s | %8.1f | %9.1f%% |\n", ("tg" + std::to_string(o.generate) + at).c_str(),
              fmt_stats(tgs).c_str(), roofline, 100.0 * tgs.median / roofline);
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
  app.add_option("-d,--n-depth", o.depth,
                 "tokens of context before pp and tg, prefilled untimed (llama-bench's -d; one stream, up to " +
                     std::to_string(kBenchDepthContext) + " tokens with -p and -n)")
      ->capture_default_str();
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
    if (o.depth && (o.batch || !o.draft.empty() || !o.image.empty()))
      throw Error("-d measures one stream's pp and tg at depth; it takes no --batch, --draft or --image");
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
