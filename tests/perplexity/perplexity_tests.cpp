// Label perplexity: unicorn-perplexity on the trained demo model, format by
// format, against the perplexity Hugging Face transformers computed in fp32 on
// the GPU machine (reference.json: tools/train_demo/device_perplexity.sh ran
// tools/train_demo/reference.py; the command is in the file).
//
// Fidelity: each format's figure matches transformers' figure for the same
// weights (the fp32 model on matrices rounded through the format) within 0.2 %.
// Quality: each format's figure stays within a stated bound of the F32 one, and
// its KL divergence from the F16 run within a stated bound; the bounds come from
// the measured values, noted beside them.
//
// The text is the held-out excerpt's first two windows of 128 tokens (126 scored
// positions): what lavapipe scores in seconds. The 128-token LM head over 262,144
// tokens is the cost; the sliding window (128) is checked by the golden tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kCtx = 128, kChunks = 2;
constexpr double kFidelity = 0.002;  // 0.2 %, the issue's bound for F32 and F16, kept for every format

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) ADD_FAILURE() << name << " is not set (ctest sets it)";
  return v ? v : "";
}

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs a command line; stdout and stderr apart.
Result run(const std::string& cmd) {
  static int n = 0;
  const fs::path err = fs::temp_directory_path() / ("unicorn-ppl-" + std::to_string(::getpid()) + "-" +
                                                    std::to_string(n++) + ".err");
  Result r;
  FILE* p = popen((cmd + " 2>" + err.string()).c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t got;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), got);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  fs::remove(err);
  return r;
}

std::string model(const std::string& format) { return env("UNICORN_DEMO_FORMATS") + "/gemma3-demo-" + format + ".gguf"; }
std::string excerpt() { return env("UNICORN_PERPLEXITY_FIXTURES") + "/heldout-excerpt.txt"; }
fs::path work() {
  const fs::path d = env("UNICORN_WORK_DIR");
  fs::create_directories(d);
  return d;
}
fs::path kld_base() { return work() / "f16.kld"; }

// unicorn-perplexity with `args` and --json: its report.
json perplexity(const std::string& args) {
  const Result r = run(env("UNICORN_PERPLEXITY") + " --json --tokenizer " + env("UNICORN_TOKENIZER_JSON") + " " + args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  try {
    return json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "no JSON from unicorn-perplexity " << args << ": " << e.what() << "\n" << r.out << r.err;
    return json::object();
  }
}

// transformers' perplexity for the first `chunks` windows of a reference text.
double reference_ppl(const std::string& format, int chunks = kChunks) {
  std::ifstream f(env("UNICORN_PERPLEXITY_FIXTURES") + "/reference.json");
  const json ref = json::parse(f);
  const json& r = ref.at("formats").at(format).at("excerpt");
  EXPECT_EQ(r.at("ctx").get<int>(), kCtx) << "reference.json's excerpt is not in windows of " << kCtx
                                          << "; regenerate it with the command it records";
  double sum = 0;
  for (int c = 0; c < chunks; ++c) sum += r.at("window_nll_sum").at(c).get<double>();
  return std::exp(sum / (chunks * (kCtx - 1 - kCtx / 2)));
}

void expect_within(double value, double reference, double bound, const std::string& what) {
  EXPECT_LE(std::abs(value / reference - 1), bound)
      << what << ": " << value << " vs " << reference << " (" << 100 * (value / reference - 1) << " %, bound "
      << 100 * bound << " %)";
}

json run_format(const std::string& format) {
  const json j = perplexity("-m " + model(format) + " --kl-divergence-base " + kld_base().string() +
                            " --kl-divergence");
  std::cout << format << ": PPL " << j.value("ppl", 0.0) << " (transformers " << reference_ppl(format) << ", F32 "
            << reference_ppl("F32") << "), mean KLD vs F16 " << j["kld"].value("mean", -1.0) << ", same top "
            << j["same_top"].value("fraction", -1.0) << ", " << j.value("device", "") << "\n";
  EXPECT_EQ(j.value("scored", 0), kChunks * (kCtx - 1 - kCtx / 2));
  expect_within(j.value("ppl", 0.0), reference_ppl(format), kFidelity, format + " vs transformers on " + format + " weights");
  // The base file gives back the F16 run's perplexity (it keeps each next token's log p exactly).
  double f16 = 0;
  std::ifstream(work() / "f16.ppl") >> f16;
  expect_within(j.value("ppl_base", 0.0), f16, 1e-5, "PPL(base) vs the F16 run's PPL");
  return j;
}

}  // namespace

// The F16 run: its perplexity, and the base file the other formats compare with.
TEST(Perplexity, F16MatchesTransformersAndSavesTheBase) {
  const json j = perplexity("-m " + model("F16") + " -f " + excerpt() + " -c " + std::to_string(kCtx) +
                            " --chunks " + std::to_string(kChunks) + " --kl-divergence-base " + kld_base().string());
  EXPECT_EQ(j.value("tokens", 0), kCtx * kChunks);
  EXPECT_EQ(j.value("scored", 0), kChunks * (kCtx - 1 - kCtx / 2));
  expect_within(j.value("ppl", 0.0), reference_ppl("F16"), kFidelity, "F16 vs transformers on F16 weights");
  expect_within(j.value("ppl", 0.0), reference_ppl("F32"), kFidelity, "F16 vs transformers in fp32");
  std::ofstream(work() / "f16.ppl") << std::setprecision(17) << j.value("ppl", 0.0);
  const uint64_t row = 8 + 2 * 262144;  // floor, next token's log p, 16-bit steps
  EXPECT_EQ(fs::file_size(kld_base()), 24u + 4u * kCtx * kChunks + uint64_t(j.value("scored", 0)) * row);
}

TEST(Perplexity, F32MatchesTransformers) {
  const json j = run_format("F32");
  expect_within(j.value("ppl", 0.0), reference_ppl("F32"), kFidelity, "F32 vs transformers in fp32");
  // Measured KLD from F16: 3.9e-7 (lavapipe), 6.5e-7 (H100); 6.4e-7 on the whole held-out text.
  EXPECT_LT(j["kld"].value("mean", 1.0), 1e-5);
  EXPECT_GE(j["same_top"].value("fraction", 0.0), 0.99);
}

TEST(Perplexity, Q8_0WithinItsBounds) {
  const json j = run_format("Q8_0");
  // Measured against F32: -0.05 % here (transformers and both devices), +0.05 % on the whole
  // held-out text. KLD 2.4e-4 here on lavapipe and the H100 (2.1e-4 on the whole text); the
  // same top token at 125 of the 126 positions (99.0 % on the whole text).
  expect_within(j.value("ppl", 0.0), reference_ppl("F32"), 0.005, "Q8_0 vs F32");
  EXPECT_LT(j["kld"].value("mean", 1.0), 1e-3);
  EXPECT_GE(j["same_top"].value("fraction", 0.0), 0.97);
}

TEST(Perplexity, Q4_0WithinItsBounds) {
  const json j = run_format("Q4_0");
  // Measured against F32: -1.7 % here (transformers and both devices), +1.0 % on the whole
  // held-out text. KLD 0.016 here on lavapipe and the H100, and on the whole text; the same
  // top token at 111 of the 126 positions (91.7 % on the whole text).
  expect_within(j.value("ppl", 0.0), reference_ppl("F32"), 0.04, "Q4_0 vs F32");
  EXPECT_LT(j["kld"].value("mean", 1.0), 0.03);
  EXPECT_GE(j["same_top"].value("fraction", 0.0), 0.8);
}

// With no -m: the built-in demo model, whose file is the F32 weights exactly
// (Q4_0 embedding, F16 matrices: what the model was trained onto).
TEST(Perplexity, DefaultModelIsTheDemoModel) {
  const Result r = run(env("UNICORN_PERPLEXITY") + " -f " + excerpt() + " -c " + std::to_string(kCtx) + " --chunks 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("built-in demo model"), std::string::npos) << r.err;
  const auto at = r.out.find("PPL = ");
  ASSERT_NE(at, std::string::npos) << r.out;
  expect_within(std::stod(r.out.substr(at + 6)), reference_ppl("F32", 1), kFidelity, "the shipped file vs fp32");
}

TEST(PerplexityCli, CommandLineErrors) {
  const std::string ppl = env("UNICORN_PERPLEXITY");
  Result r = run(ppl + " -m " + model("Q4_0"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("give the text with -f FILE"), std::string::npos) << r.err;
  r = run(ppl + " --kl-divergence");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--kl-divergence needs --kl-divergence-base"), std::string::npos) << r.err;
  r = run(ppl + " -m " + model("Q4_0") + " -f " + excerpt() + " -c 4096");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("windows must be 4 to 1024 tokens"), std::string::npos) << r.err;
  r = run(ppl + " -m " + model("Q4_0") + " -f " + excerpt() + " -b 512");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("at most 128 tokens a pass"), std::string::npos) << r.err;
  r = run(ppl + " -m " + model("Q4_0") + " --tokenizer " + env("UNICORN_TOKENIZER_JSON") + " -f " + excerpt() +
          " -c 1024");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("551 tokens; windows of 1024 need at least 2048"), std::string::npos) << r.err;
}

// Results that standard output cannot take are exit 1 with the reason, in
// either form; --help too.
TEST(PerplexityCli, StandardOutputThatCannotBeWrittenIsAnError) {
  const std::string ppl = env("UNICORN_PERPLEXITY") + " -m " + model("Q4_0") + " --tokenizer " +
                          env("UNICORN_TOKENIZER_JSON") + " -f " + excerpt() + " -c 16 --chunks 2";
  for (const std::string& more : {"", " --json", " --help"}) {
    SCOPED_TRACE(more);
    const Result r = run("bash -c '" + ppl + more + " > /dev/full'");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("cannot write: No space left on device"), std::string::npos) << r.err;
  }
}

// SIGTERM while --kl-divergence-base writes its file: the temporary beside it
// is removed, nothing is made, and the status is the signal's.
TEST(PerplexityCli, SignalWhileWritingTheBaseLeavesNothing) {
  const fs::path dir = work() / "signal";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path script = dir / "run.sh";
  std::ofstream(script) << "cd " << dir.string() << "\n"
                        << env("UNICORN_PERPLEXITY") << " -m " << model("Q4_0") << " --tokenizer "
                        << env("UNICORN_TOKENIZER_JSON") << " -f " << excerpt()
                        << " -c 128 --kl-divergence-base base.kld > out 2> err &\n"
                        << R"sh(pid=$!
for i in $(seq 6000); do compgen -G 'base.kld.tmp.*' > /dev/null && break; kill -0 $pid 2>/dev/null || break; sleep 0.005; done
compgen -G 'base.kld.tmp.*' > /dev/null || { wait $pid; echo -1 > status; exit 0; }
kill -TERM $pid
wait $pid
echo $? > status
)sh";
  ASSERT_EQ(std::system(("bash " + script.string()).c_str()), 0);
  int status = 0;
  std::ifstream(dir / "status") >> status;
  std::ifstream e(dir / "err");
  const std::string err(std::istreambuf_iterator<char>(e), {});
  ASSERT_NE(status, -1) << "no temporary file appeared:\n" << err;
  EXPECT_EQ(status, 128 + 15) << err;
  EXPECT_NE(err.find("terminated (SIGTERM)"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir / "base.kld"));
  for (const auto& f : fs::directory_iterator(dir))
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos) << f.path();
}

TEST(PerplexityCli, BrokenBaseFilesAreRefused) {
  const fs::path bad = work() / "not-a-base.kld";
  std::ofstream(bad) << "hello";
  Result r = run(env("UNICORN_PERPLEXITY") + " -m " + model("Q4_0") + " --kl-divergence --kl-divergence-base " +
                 bad.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not a KL-divergence base file: no UNIKLD01 header"), std::string::npos) << r.err;
  // A header whose sizes promise more than the file holds.
  {
    std::ofstream f(bad, std::ios::binary);
    const uint32_t h[] = {262144, 128, 2, 63};
    f.write("UNIKLD01", 8).write(reinterpret_cast<const char*>(h), sizeof h);
  }
  r = run(env("UNICORN_PERPLEXITY") + " -m " + model("Q4_0") + " --kl-divergence --kl-divergence-base " + bad.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bytes, not what its header implies"), std::string::npos) << r.err;
}

// (An engine holds any embedding format: a Q5_0 file's matrices are what no engine here runs.)
TEST(PerplexityCli, FileInFormatsNoEngineRunsNamesTheFormats) {
  const fs::path f = work() / "demo-q5_0.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-demo --type Q5_0 --out " + f.string()).code, 0);
  const Result r = run(env("UNICORN_PERPLEXITY") + " -m " + f.string() + " -f " + excerpt());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no engine of this binary runs its formats (it has: F16, F32, BF16, Q8_0, Q4_0)"),
            std::string::npos)
      << r.err;
  fs::remove(f);
}

// The shipped file's weights lie on its formats' grids: written out in F32 and
// converted back, it comes back byte for byte (so the F32 file is the model).
TEST(PerplexityCli, ShippedModelRoundTripsThroughF32) {
  const fs::path back = work() / "round-trip.gguf";
  const Result r = run(env("UNICORN_CONVERT") + " --gguf " + model("F32") + " --type F16 --embedding Q4_0 --out " +
                       back.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::ifstream a(back, std::ios::binary), b(env("UNICORN_DEMO_GGUF"), std::ios::binary);
  const std::string x(std::istreambuf_iterator<char>(a), {}), y(std::istreambuf_iterator<char>(b), {});
  EXPECT_EQ(x.size(), y.size());
  EXPECT_TRUE(x == y) << back << " differs from " << env("UNICORN_DEMO_GGUF");
  fs::remove(back);
}
