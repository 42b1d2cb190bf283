// Label cli: the generator binaries run as a person would run them — each
// case checks the exit code and the message a user reads.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/io/gguf.hpp"

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct Result {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs a shell command line; returns its exit code and output.
Result run(const std::string& cmd) {
  Result r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string stdout_of(const std::string& cmd) {
  Result r{-1, ""};
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  pclose(p);
  return r.out;
}

const std::string& gen() {
  static const std::string g = env("UNICORN_GENERATE");
  return g;
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << "expected \"" << (part) << "\" in:\n" << (text)

fs::path tmp() {
  static const fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("unicorn-cli-" + std::to_string(::getpid()));
    fs::create_directories(p);
    return p;
  }();
  return d;
}

}  // namespace

TEST(Cli, Help) {
  const Result r = run(gen() + " --help");
  EXPECT_EQ(r.code, 0);
  for (const char* flag : {"--model", "--prompt", "--chat", "--temp", "--top-k", "--top-p",
                           "--min-p", "--seed", "--ctx", "--n-predict", "--file"})
    EXPECT_CONTAINS(r.out, flag);
}

TEST(Cli, BadFlag) {
  const Result r = run(gen() + " --no-such-flag");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.out, "see --help");
}

TEST(Cli, DefaultModelNeedsNoDownload) {
  const Result r = run(gen() + " -p 'Once upon a time' -n 12 --seed 3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "built-in demo model");
  EXPECT_CONTAINS(r.out, "Once upon a time");
  EXPECT_CONTAINS(r.out, "generated");
  EXPECT_CONTAINS(r.out, "tokens/s");
}

TEST(Cli, SameSeedSameText) {
  const std::string cmd = gen() + " -p 'The weather today' -n 16 --temp 1.0 --top-k 0 --top-p 1 --min-p 0";
  const std::string a = stdout_of(cmd + " --seed 11"), b = stdout_of(cmd + " --seed 11");
  const std::string c = stdout_of(cmd + " --seed 12");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b) << "the same seed must give the same text";
  EXPECT_NE(a, c) << "another seed should give other text (16 tokens drawn at temperature 1)";
}

TEST(Cli, PromptFromStdinAndFile) {
  const fs::path f = tmp() / "prompt.txt";
  std::ofstream(f) << "A prompt from a file";
  const Result a = run(gen() + " -f " + f.string() + " -n 4 --temp 0");
  EXPECT_EQ(a.code, 0) << a.out;
  EXPECT_CONTAINS(a.out, "A prompt from a file");
  const Result b = run("echo 'Piped prompt' | " + gen() + " -n 4 --temp 0");
  EXPECT_EQ(b.code, 0) << b.out;
  EXPECT_CONTAINS(b.out, "Piped prompt");
}

TEST(Cli, ChatTemplate) {
  const Result r = run(gen() + " --chat -p 'Hello there' -n 6 --temp 0");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(Cli, GgufFile) {
  const Result r = run(gen() + " --model " + env("UNICORN_DEMO_GGUF") + " --tokenizer " +
                    env("UNICORN_TOKENIZER_JSON") + " -p 'Hi' -n 4 --temp 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "GGUF");
}

TEST(Cli, HuggingFaceDirectory) {
  if (env("UNICORN_TINY_ENGINE").empty()) GTEST_SKIP() << "the tiny engine binary is not built";
  const fs::path out = tmp() / "logits.f32";
  const Result r = run(env("UNICORN_TINY_ENGINE") + " --model " + env("UNICORN_FIXTURES") +
                    "/tiny --tokens 2,17,33,101 --logits-out " + out.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "safetensors");
  EXPECT_EQ(fs::file_size(out), 4u * 512 * 4) << "4 positions x 512 logits x 4 bytes";
}

TEST(Cli, FileForAnotherSizeNamesTheBinary) {
  // A GGUF whose hyperparameters are Gemma 3 1B's: the demo engine must refuse
  // it and name the binary built for it.
  unicorn::io::GgufWriter w;
  w.set("general.architecture", "gemma3");
  w.set("gemma3.embedding_length", uint32_t{1152});
  w.set("gemma3.block_count", uint32_t{26});
  w.set("gemma3.feed_forward_length", uint32_t{6912});
  w.set("gemma3.attention.head_count", uint32_t{4});
  w.set("gemma3.attention.head_count_kv", uint32_t{1});
  w.set("gemma3.attention.key_length", uint32_t{256});
  w.set("gemma3.attention.sliding_window", uint32_t{512});
  w.set("gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set("gemma3.context_length", uint32_t{32768});
  std::vector<float> row(1152, 0.5f);
  w.add_tensor("token_embd.weight", 0, {1152, 1}, std::as_bytes(std::span(row)));
  const fs::path f = tmp() / "looks-like-1b.gguf";
  w.write(f);
  const Result r = run(gen() + " --model " + f.string() + " -p hi");
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.out, "gemma3.embedding_length is 1152");
  EXPECT_CONTAINS(r.out, "use unicorn-gemma3-1b");
}

TEST(Cli, MissingFile) {
  const Result r = run(gen() + " --model /no/such/model.gguf -p hi");
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.out, "no such file");
}

TEST(Cli, OfficialBinaryWithoutModel) {
  const Result r = run(env("UNICORN_GEMMA3_1B") + " -p hi");
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.out, "--model is required");
}

TEST(Cli, PromptLongerThanContext) {
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += "many words here ";
  const Result r = run(gen() + " --ctx 16 -p '" + long_prompt + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.out, "the context holds 16");
}

TEST(Cli, InteractiveChatKeepsTheConversation) {
  const Result r = run("printf 'Hello\\nAnd again\\n/quit\\n' | " + env("UNICORN_CHAT") + " -n 5 --temp 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "chat:");
  // The second turn starts where the first ended: the context keeps growing.
  const auto first = r.out.find("context "), second = r.out.find("context ", first + 1);
  ASSERT_NE(second, std::string::npos) << r.out;
  const int used1 = std::stoi(r.out.substr(first + 8)), used2 = std::stoi(r.out.substr(second + 8));
  EXPECT_GT(used2, used1) << "the second turn must extend the first, not start over";
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
  EXPECT_FALSE(j["profile"]["decode"].empty());
  EXPECT_GT(j["startup"]["first_token_ms_cold"].get<double>(), 0);
  EXPECT_GT(j["startup"]["first_token_ms_warm"].get<double>(), 0);
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
  const auto start = [&] {
    const std::string out = stdout_of("UNICORN_PIPELINE_CACHE=" + cache.string() + " " + env("UNICORN_BENCH") +
                                      " -m " + model.string() + " -p 4 -n 2 -r 1 --json");
    const auto j = nlohmann::json::parse(out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << out;
    return j.is_discarded() ? nlohmann::json::object() : j["startup"]["pipeline_cache"];
  };
  const auto first = start();
  EXPECT_EQ(first["loaded_bytes"], 0);
  EXPECT_GT(first["saved_bytes"].get<uint64_t>(), 0u);
  const fs::path file = first["path"].get<std::string>();
  EXPECT_EQ(file.parent_path(), cache);
  const auto second = start();
  EXPECT_EQ(second["loaded_bytes"].get<uint64_t>(), fs::file_size(file));
  std::ofstream(file, std::ios::trunc) << "garbage";
  const auto third = start();
  EXPECT_EQ(third["loaded_bytes"], 0);
  EXPECT_EQ(third["ignored"], "shorter than a pipeline cache header");
  EXPECT_EQ(start()["loaded_bytes"].get<uint64_t>(), fs::file_size(file));
}

// --batch 4: four streams decoding together; the JSON has the batch figures
// (aggregate and per stream) and --batch beyond the compiled streams is refused.
TEST(Cli, BenchBatchJson) {
  const fs::path model = tmp() / "tiny-q8_0-batch.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + model.string()).code, 0);
  const std::string out = stdout_of(env("UNICORN_BENCH") + " -m " + model.string() +
                                    " -p 8 -n 8 -r 2 --batch 4 --json --profile");
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << out;
  EXPECT_EQ(j["model"], "gemma3-tiny");
  ASSERT_TRUE(j.contains("batch")) << out;
  const auto& b = j["batch"];
  EXPECT_EQ(b["streams"], 4);
  EXPECT_EQ(b["tokens"], 8);
  EXPECT_EQ(b["prompt_tokens"], 8);
  EXPECT_GT(b["tokens_per_s"].get<double>(), 0);
  EXPECT_NEAR(b["per_stream_tokens_per_s"].get<double>() * 4, b["tokens_per_s"].get<double>(), 1e-6);
  EXPECT_GT(b["roofline_tokens_per_s"].get<double>(), 0);
  EXPECT_FALSE(j["profile"]["batch"].empty());
  EXPECT_FALSE(j["profile_batch_dispatches"].empty());
  // 4 streams, under kernels::kSplitKFromStreams: matvec on any device.
  EXPECT_TRUE(b["linear"].get<std::string>().starts_with("matvec")) << b["linear"];
  const Result table = run(env("UNICORN_BENCH") + " -m " + model.string() + " -p 8 -n 4 -r 1 --batch 3");
  EXPECT_EQ(table.code, 0) << table.out;
  EXPECT_CONTAINS(table.out, "3 streams");
  const Result bad = run(env("UNICORN_BENCH") + " -m " + model.string() + " --batch 33");
  EXPECT_NE(bad.code, 0);
  EXPECT_CONTAINS(bad.out, "--batch");
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
      {"UNICORN_EXPERIMENT_1B_VRAM", {"placement of gemma3-1b", "Vram        2.00 GiB", "1357455872"}},
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

// Ctrl-C during an answer stops that answer, not the program: the chat then
// takes the next message and exits normally.
TEST(Cli, InterruptStopsTheAnswerNotTheChat) {
  const fs::path dir = tmp(), script = dir / "interrupt.sh";
  std::ofstream(script) << "cd " << dir.string() << " && rm -f in chat.out && mkfifo in\n"
                        << env("UNICORN_CHAT") << " -n 40 --temp 0 < in > chat.out 2>&1 &\n"
                        << R"(pid=$!
exec 3>in
echo 'Tell me a long story' >&3
for i in $(seq 600); do grep -q '^chat:' chat.out 2>/dev/null && break; sleep 0.1; done
sleep 2   # the answer is being generated now
kill -INT $pid
sleep 1
echo 'Another message' >&3
echo /quit >&3
exec 3>&-
wait $pid
echo "rc=$?" >> chat.out
)";
  ASSERT_EQ(std::system(("bash " + script.string()).c_str()), 0);
  std::ifstream f(dir / "chat.out");
  const std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_CONTAINS(out, ", stopped;");
  const auto first = out.find("tokens/s"), second = out.find("tokens/s", first + 1);
  EXPECT_NE(second, std::string::npos) << "no answer to the message after Ctrl-C:\n" << out;
  EXPECT_CONTAINS(out, "rc=0");
}

// ------------------------------------------------------- nothing lost, nothing crashes

// tests/data/bad: each file has one defect and must give its own message,
// with exit status 1 (errors.txt pairs them; make_bad_files.py writes both).
TEST(Cli, BadFilesAreRefused) {
  const fs::path dir = env("UNICORN_BAD_FILES");
  std::ifstream list(dir / "errors.txt");
  ASSERT_TRUE(list) << dir / "errors.txt";
  size_t cases = 0;
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    const std::string file = line.substr(0, tab), message = line.substr(tab + 1);
    SCOPED_TRACE(file);
    const Result r = run(gen() + " --model " + (dir / file).string() + " -p hi");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_CONTAINS(r.out, message);
    EXPECT_CONTAINS(r.out, file);  // the message names the file
    ++cases;
  }
  EXPECT_GE(cases, 20u);
}
