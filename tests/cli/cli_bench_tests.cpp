// Label cli: unicorn-bench as a person runs it (--plan, --json, a constraint,
// the LM head's copy, the pipeline cache, --batch, --invariance, placements).
#include "cli_util.hpp"

using namespace cli_test;

// unicorn-bench --plan prints the engine's recorded passes, each dispatch with
// its kernel and constants, without benchmarking.
TEST(Cli, BenchPlan) {
  const fs::path model = tmp() / "tiny-q8_0-plan.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + model.string()).code, 0);
  const std::string out = stdout_of(env("UNICORN_BENCH") + " -m " + model.string() + " --plan");
  EXPECT_NE(out.find("gemma3-tiny on "), std::string::npos) << out;
  EXPECT_NE(out.find("pass decode: "), std::string::npos) << out;
  EXPECT_NE(out.find("matvec_q8_0 ["), std::string::npos) << out;
  EXPECT_NE(out.find("in_features=96 out_features=128"), std::string::npos) << "q's constants, by name";
  EXPECT_NE(out.find("rmsnorm ["), std::string::npos) << out;
  EXPECT_NE(out.find("sample ["), std::string::npos) << out;
  EXPECT_EQ(out.find("tokens/s"), std::string::npos) << "a plan, not a benchmark";
}

// unicorn-bench on a tiny random model: it runs, and its JSON has the fields
// the performance reports use (speeds, bandwidth, roofline, profile).
TEST(Cli, BenchJson) {
  const fs::path model = tmp() / "tiny-q8_0.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + model.string()).code, 0);
  const std::string out = stdout_of(env("UNICORN_BENCH") + " -m " + model.string() +
                                    " -p 16 -n 8 -r 2 --json --profile");
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << out;
  for (const char* key : {"model", "device", "weight_bytes", "read_bandwidth_gbps", "pp", "tg",
                          "roofline_tokens_per_s", "roofline_percent", "load_seconds", "upload_bandwidth_gbps",
                          "load_bound_seconds", "startup", "profile"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["model"], "gemma3-tiny");
  EXPECT_GT(j["tg"]["tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["pp"]["tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["roofline_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["read_bandwidth_gbps"].get<double>(), 0);
  EXPECT_GT(j["upload_bandwidth_gbps"].get<double>(), 0);
  // The device's multiprocessors, from the device (lavapipe: the host's threads).
  EXPECT_GT(j["multiprocessors"].get<unsigned>(), 0u);
  EXPECT_EQ(j["multiprocessors_from"], "the host's threads");
  EXPECT_FALSE(j["profile"]["decode"].empty());
  // The decode step's dispatches and barriers agree with its dispatch list;
  // the tiny model's 6 layers are 9 dispatches behind 4 barriers each (q, k
  // and v have none: attention does attn_prep's work and waits on a counter
  // for them, as the o and down products' add_norm does), plus embed, the first
  // and final norms, the LM head, logits_max, sample and logprobs (a fusion
  // that removes any changes these counts).
  const auto& list = j["profile_decode_dispatches"];
  const auto barriers = std::count_if(list.begin(), list.end(), [](const nlohmann::json& d) { return d["barrier"].get<bool>(); });
  EXPECT_EQ(j["decode_step"]["dispatches"].get<size_t>(), list.size());
  EXPECT_EQ(j["decode_step"]["barriers"].get<long>(), barriers);
  EXPECT_EQ(j["decode_step"]["dispatches"].get<size_t>(), 6u * 9 + 7);
  EXPECT_EQ(j["decode_step"]["barriers"].get<long>(), 6 * 4 + 7);
  EXPECT_EQ(j["decode_step"]["barriers_per_layer"].get<double>(), 31.0 / 6);
  EXPECT_GT(j["startup"]["first_token_ms_cold"].get<double>(), 0);
  EXPECT_GT(j["startup"]["first_token_ms_warm"].get<double>(), 0);
}

// unicorn-bench -d N (llama-bench's -d): pp and tg after N tokens of context,
// the KV cache sized for them, the bytes each decode step reads of it
// (N + 1 positions in the tiny model's 2 global layers, its 16-position
// window in the 4 others, K and V of 64 F16 values) in the roofline, and the
// table's labels as llama-bench's; past the bench context, or with --batch,
// a clear refusal.
TEST(Cli, BenchAtDepth) {
  const fs::path model = tmp() / "tiny-q8_0-depth.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + model.string()).code, 0);
  const std::string bench = env("UNICORN_BENCH") + " -m " + model.string();
  const std::string out = stdout_of(bench + " -d 100 -p 16 -n 8 -r 1 --json");
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << out;
  EXPECT_EQ(j["depth"].get<uint32_t>(), 100u);
  EXPECT_EQ(j["context"].get<uint32_t>(), 256u) << "the tiny model's whole context";
  EXPECT_EQ(j["scheme"]["kv_cache"], "F16");
  EXPECT_EQ(j["kv_bytes_per_token"].get<uint64_t>(), (2u * 101 + 4u * 16) * 2 * 64 * 2);
  EXPECT_GT(j["tg"]["tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["pp"]["tokens_per_s"].get<double>(), 0);
  const std::string table = stdout_of(bench + " -d 100 -p 16 -n 8 -r 1");
  EXPECT_CONTAINS(table, "| pp16 @ d100 |");
  EXPECT_CONTAINS(table, "| tg8 @ d100 |");
  EXPECT_CONTAINS(table, "depth 100 (KV cache of 256 positions): each decode step reads 0.1 MiB of it");
  const Result past = run(bench + " -d 240 -p 16 -n 8 -r 1");
  EXPECT_EQ(past.code, 1) << past.out;
  EXPECT_CONTAINS(past.out, "-d + -p + -n must stay under the bench context of 256 tokens");
  const Result batch = run(bench + " -d 10 --batch 2 -p 4 -n 4 -r 1");
  EXPECT_EQ(batch.code, 1) << batch.out;
  EXPECT_CONTAINS(batch.out, "-d measures one stream's pp and tg at depth; it takes no --batch");
}

// unicorn-bench --json-schema: every generated token is constrained as the
// server's structured output constrains it (a mask on the host before each
// step), documents restart when one ends, and the mask's host time is in the
// JSON; without --tokenizer it says what it needs.
TEST(Cli, BenchConstrainedBySchema) {
  const fs::path model = tmp() / "tiny-q8_0-schema.gguf", schema = tmp() / "schema.json";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + model.string()).code, 0);
  std::ofstream(schema) << R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"enum":["x","y"]}},
                              "required":["a","b"],"additionalProperties":false})";
  const std::string bench = env("UNICORN_BENCH") + " -m " + model.string() + " -p 4 -n 48 -r 1 --json --json-schema " +
                            schema.string();
  const std::string out = stdout_of(bench + " --tokenizer " + env("UNICORN_TOKENIZER_JSON"));
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << out;
  ASSERT_TRUE(j.contains("constraint")) << out;
  EXPECT_EQ(j["constraint"]["masks"].get<uint32_t>(), 2u * 49) << "a mask before every token of both runs";
  EXPECT_GE(j["constraint"]["documents_ended"].get<uint32_t>(), 2u) << "a 48-token run ends more than one";
  EXPECT_GT(j["constraint"]["mask_us_median"].get<double>(), 0);
  EXPECT_NE(j["sampling"].get<std::string>().find("constrained by"), std::string::npos);
  const auto refused = run(bench);
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.out.find("--tokenizer"), std::string::npos) << refused.out;
  fs::remove(model), fs::remove(schema);
}

// --lm-head q8_0 on a QAT-layout file (F16 embedding): the engine with a Q8_0
// copy for the LM head runs, and the JSON names it; an all-Q8_0 file has no
// such deployment, and the error says which files do.
TEST(Cli, BenchQuantizedLmHead) {
  const fs::path model = tmp() / "tiny-q4_0-embf16.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q4_0 --embedding F16 --out " +
                model.string()).code, 0);
  const std::string out = stdout_of(env("UNICORN_BENCH") + " -m " + model.string() +
                                    " -p 8 -n 4 -r 1 --json --lm-head q8_0");
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << out;
  EXPECT_EQ(j["scheme"]["lm_head"], "Q8_0");
  EXPECT_EQ(j["scheme"]["embedding"], "F16");
  EXPECT_GT(j["tg"]["tokens_per_s"].get<double>(), 0);
  const fs::path q8 = tmp() / "tiny-q8_0-lmhead.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + q8.string()).code, 0);
  const Result bad = run(env("UNICORN_BENCH") + " -m " + q8.string() + " --lm-head q8_0");
  EXPECT_EQ(bad.code, 1);
  EXPECT_CONTAINS(bad.out, "--lm-head (QAT files with an F16 embedding only");
}

// The second start reads the pipelines the first one wrote (UNICORN_PIPELINE_CACHE
// names the folder); a damaged cache file is ignored and rewritten.
TEST(Cli, BenchPipelineCacheOnDisk) {
  const fs::path model = tmp() / "tiny-q8_0-cache.gguf", cache = tmp() / "pipelines";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + model.string()).code, 0);
  fs::remove_all(cache);
  // The bench's startup.pipeline_cache object; a run whose output is not that
  // JSON fails the test here, before any field of it is read.
  const auto start = [&] {
    const std::string out = stdout_of("UNICORN_PIPELINE_CACHE=" + cache.string() + " " + env("UNICORN_BENCH") +
                                      " -m " + model.string() + " -p 4 -n 2 -r 1 --json");
    const auto j = nlohmann::json::parse(out, nullptr, false);
    const bool ok = !j.is_discarded() && j.contains("startup") && j["startup"].contains("pipeline_cache");
    EXPECT_TRUE(ok) << "no startup.pipeline_cache in:\n" << out;
    return ok ? j["startup"]["pipeline_cache"] : nlohmann::json::object();
  };
  const auto field = [](const nlohmann::json& j, const char* key) { return j.value(key, nlohmann::json()); };
  const auto first = start();
  EXPECT_EQ(field(first, "loaded_bytes"), 0);
  EXPECT_GT(field(first, "saved_bytes"), 0);
  ASSERT_TRUE(field(first, "path").is_string());
  const fs::path file = first["path"].get<std::string>();
  EXPECT_EQ(file.parent_path(), cache);
  const auto second = start();
  EXPECT_EQ(field(second, "loaded_bytes"), fs::file_size(file));
  std::ofstream(file, std::ios::trunc) << "garbage";
  const auto third = start();
  EXPECT_EQ(field(third, "loaded_bytes"), 0);
  EXPECT_EQ(field(third, "ignored"), "shorter than a pipeline cache header");
  EXPECT_EQ(field(start(), "loaded_bytes"), fs::file_size(file));
}

// --batch 4: four streams decoding together; the JSON has the batch figures
// (the prompts' prefill, the steps' aggregate and per stream, the whole run's
// generated tokens/s, below the steps' since it includes the prefill) and the
// prefill's passes with their alignment padding; --batch beyond the compiled
// streams is refused.
TEST(Cli, BenchBatchJson) {
  const fs::path model = tmp() / "tiny-q8_0-batch.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + model.string()).code, 0);
  const std::string out = stdout_of(env("UNICORN_BENCH") + " -m " + model.string() +
                                    " -p 5 -n 8 -r 2 --batch 4 --json --profile");
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << out;
  EXPECT_EQ(j["model"], "gemma3-tiny");
  ASSERT_TRUE(j.contains("batch")) << out;
  const auto& b = j["batch"];
  EXPECT_EQ(b["streams"], 4);
  EXPECT_EQ(b["tokens"], 8);
  EXPECT_EQ(b["prompt_tokens"], 5);
  EXPECT_GT(b["tokens_per_s"].get<double>(), 0);
  EXPECT_NEAR(b["per_stream_tokens_per_s"].get<double>() * 4, b["tokens_per_s"].get<double>(), 1e-6);
  EXPECT_GT(b["roofline_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(b["prefill_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(b["whole_run_tokens_per_s"].get<double>(), 0);
  EXPECT_LT(b["whole_run_tokens_per_s"].get<double>(), b["tokens_per_s"].get<double>());
  // The four 5-token prompts share one pass; each chunk after the first
  // starts at a multiple of the alignment, the rows between being padding.
  const uint32_t align = b["prefill_alignment"].get<uint32_t>();
  ASSERT_GE(align, 1u);
  ASSERT_EQ(b["prefill_passes"].size(), 1u) << b["prefill_passes"].dump();
  const auto& pass = b["prefill_passes"][0];
  EXPECT_EQ(pass["chunks"], 4);
  EXPECT_EQ(pass["tokens"], 4 * 5);
  EXPECT_EQ(pass["rows"], 3 * ((5 + align - 1) / align * align) + 5) << "alignment " << align;
  EXPECT_GT(pass["ms"].get<double>(), 0);
  EXPECT_FALSE(j["profile"]["batch"].empty());
  EXPECT_FALSE(j["profile_batch_dispatches"].empty());
  // 4 streams: matmul_coop_splitk on a device with tensor units (kernels::kSplitKFromStreams), else matvec.
  const std::string path = b["linear"].get<std::string>();
  EXPECT_TRUE(path.starts_with("matvec: every token row") || path.starts_with("matmul_coop_splitk")) << path;
  const Result table = run(env("UNICORN_BENCH") + " -m " + model.string() + " -p 8 -n 4 -r 1 --batch 3");
  EXPECT_EQ(table.code, 0) << table.out;
  EXPECT_CONTAINS(table.out, "3 streams");
  EXPECT_CONTAINS(table.out, "| batch3   pp8   ");
  EXPECT_CONTAINS(table.out, "| batch3   tg4   ");
  EXPECT_CONTAINS(table.out, "| batch3   pp8   +tg4   ");
  EXPECT_CONTAINS(table.out, "24 prompt tokens in ");
  const Result bad = run(env("UNICORN_BENCH") + " -m " + model.string() + " --batch 33");
  EXPECT_NE(bad.code, 0);
  EXPECT_CONTAINS(bad.out, "--batch");
}

// --batch N --invariance: the bench checks bits instead of timing (run to
// run, alone and among N, prompts alone and packed) and exits 0 only when
// every line says "same bits"; the device scripts run it on the real shapes
// (tools/device_invariance.sh), where a race in the batched step showed.
TEST(Cli, BenchInvariance) {
  const fs::path model = tmp() / "tiny-q4_0-invariance.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q4_0 --out " + model.string()).code, 0);
  const Result r = run(env("UNICORN_BENCH") + " -m " + model.string() + " -p 40 -n 3 --batch 5 --invariance");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* line : {"prefill: a prompt alone, run twice", "prefill: a prompt alone, and packed with others",
                           "decode: 3 steps of 5 streams, run twice", "decode: stream 0 alone, and among 5",
                           "decode: steps of at most 16, and of all 5"})
    EXPECT_CONTAINS(r.out, std::string(line));
  EXPECT_EQ(r.out.find("DIFFER"), std::string::npos) << r.out;
  size_t same = 0;
  for (size_t at = r.out.find("same bits"); at != std::string::npos; at = r.out.find("same bits", at + 1)) ++same;
  EXPECT_EQ(same, 5u) << r.out;
  const Result one = run(env("UNICORN_BENCH") + " -m " + model.string() + " -p 8 -n 2 --batch 1 --invariance");
  EXPECT_NE(one.code, 0);
  EXPECT_CONTAINS(one.out, "--invariance: --batch between 2 and");
  const Result alone = run(env("UNICORN_BENCH") + " -m " + model.string() + " --invariance");
  EXPECT_NE(alone.code, 0);
  EXPECT_CONTAINS(alone.out, "--invariance requires --batch");
}

// --placement gtt: every weight in host-visible memory; the bench measures
// that memory's read bandwidth too and names the placement.
TEST(Cli, BenchGttPlacement) {
  const fs::path model = tmp() / "tiny-q8_0-gtt.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + model.string()).code, 0);
  const std::string out = stdout_of(env("UNICORN_BENCH") + " -m " + model.string() +
                                    " -p 16 -n 8 -r 2 --json --placement gtt");
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << out;
  EXPECT_EQ(j["placement"], "gtt");
  // Every weight is in Gtt (the pool total rounds each part up to 256 bytes).
  EXPECT_GE(j["weight_bytes_gtt"].get<uint64_t>(), j["weight_bytes"].get<uint64_t>());
  EXPECT_LE(j["weight_bytes_gtt"].get<uint64_t>(), j["weight_bytes"].get<uint64_t>() * 101 / 100);
  EXPECT_GT(j["gtt_read_bandwidth_gbps"].get<double>(), 0);
  EXPECT_GT(j["tg"]["tokens_per_s"].get<double>(), 0);
  const Result bad = run(env("UNICORN_BENCH") + " -m " + model.string() + " --placement gtt-ffn");
  EXPECT_EQ(bad.code, 1);
  EXPECT_CONTAINS(bad.out, "gtt-ffn: Q4_0 files only");
}

// --placement prints the compile-time bytes per pool, with no model file: the
// demo engine (generic profile) and each placement experiment in configs/.
TEST(Cli, PlacementTable) {
  const Result r = run(gen() + " --placement");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "placement of gemma3-demo");
  EXPECT_CONTAINS(r.out, "Vram");
  EXPECT_CONTAINS(r.out, "unbounded");
}

TEST(Cli, PlacementExperiments) {
  struct Case {
    const char* env;
    std::vector<std::string> lines;
  };
  const Case cases[] = {
      {"UNICORN_EXPERIMENT_27B_GTT",
       {"on AMD Phoenix (Radeon 780M + XDNA1 NPU)", "Vram       512.0 MiB", "19.15 GiB   12.35 GiB    20561734656"}},
      {"UNICORN_EXPERIMENT_27B_FFN_GTT",
       {"Vram       16.00 GiB    2.63 GiB    2.15 GiB           -    3.11 GiB", "Gtt        16.00 GiB           -           -   11.27 GiB"}},
      {"UNICORN_EXPERIMENT_1B_VRAM", {"placement of gemma3-1b", "Vram        2.00 GiB", "1357469696"}},
  };
  for (const Case& c : cases) {
    if (env(c.env).empty()) {
      ADD_FAILURE() << c.env << " is not set (configure with UNICORN_BUILD_PLACEMENT_EXPERIMENTS=ON)";
      continue;
    }
    const Result r = run(env(c.env) + " --placement");
    EXPECT_EQ(r.code, 0) << r.out;
    for (const auto& line : c.lines) EXPECT_CONTAINS(r.out, line);
  }
}

TEST(Cli, BenchRefusesAnUnknownFile) {
  const fs::path f = tmp() / "not-a-model.gguf";
  std::ofstream(f) << "nope";
  const Result r = run(env("UNICORN_BENCH") + " -m " + f.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.out, "not a GGUF file");
}
