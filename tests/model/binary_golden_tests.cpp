// Labels golden, cli: the golden path through a binary. An engine binary built by
// unicorn_add_engine from fixtures/tiny/config.json dumps teacher-forced logits
// (--tokens <golden prompt> --logits-out FILE), from the Hugging Face directory
// and from a GGUF written by unicorn-convert; both must match transformers'
// logits to 1e-3 of the logit scale. Plain C++ (no engine headers): the engine
// is the binary under test, so this file compiles in seconds.
//
// Environment (set by tests/model/CMakeLists.txt):
//   UNICORN_ENGINE         the engine binary (e.g. bin/unicorn-tiny-q8_0)
//   UNICORN_ENGINE_FORMAT  its weight format as the fixtures name it (q8_0)
//   UNICORN_CONVERT        bin/unicorn-convert
//   UNICORN_FIXTURES       tests/model/fixtures
//   UNICORN_WORK_DIR       where the GGUF, logits and logs are written
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr double kTolerance = 1e-3;  // of the logit scale, as the in-process golden tests

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string(name) + " is not set (run through ctest)");
  return v;
}

fs::path tiny_dir() { return fs::path(env("UNICORN_FIXTURES")) / "tiny"; }
fs::path work_dir() {
  const fs::path d = env("UNICORN_WORK_DIR");
  fs::create_directories(d);
  return d;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<float> read_floats(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(p.string() + ": cannot open");
  std::vector<float> v(fs::file_size(p) / 4);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
  return v;
}

std::vector<int32_t> golden_prompt() {
  std::ifstream f(tiny_dir() / "golden.json");
  return nlohmann::json::parse(f)["prompt"].get<std::vector<int32_t>>();
}

// Runs a command with stderr kept in `log`; returns its exit status. A Vulkan
// validation error (UNICORN_VALIDATION=1) fails the test even when the binary
// exits 0: the binary only reports them.
int run(const std::string& cmd, const fs::path& log) {
  const std::string full = cmd + " > " + log.string() + " 2>&1";
  std::printf("[ run    ] %s\n", cmd.c_str());
  std::fflush(stdout);
  const int rc = std::system(full.c_str());
  const std::string out = read_text(log);
  // Echo the log, keeping only the last state of \r-redrawn lines (progress bars).
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t cr = line.find_last_of('\r');
    std::printf("%s\n", line.c_str() + (cr == std::string::npos ? 0 : cr + 1));
  }
  EXPECT_EQ(out.find("Vulkan validation error"), std::string::npos) << cmd;
  return rc;
}

fs::path tiny_gguf(const std::string& type) {
  const fs::path out = work_dir() / ("tiny-" + type + ".gguf");
  const std::string cmd =
      env("UNICORN_CONVERT") + " --hf " + tiny_dir().string() + " --type " + type + " --pure --out " +
      out.string();
  if (run(cmd, work_dir() / ("convert-" + type + ".log")) != 0)
    throw std::runtime_error("failed: " + cmd);
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Runs the engine binary on `model` with the golden prompt and compares its
// logits file with logits_<fmt>.bin: max |a - b| / max |b| <= kTolerance.
void expect_binary_matches_golden(const fs::path& model, const std::string& tag) {
  const std::string fmt = env("UNICORN_ENGINE_FORMAT");
  const auto prompt = golden_prompt();
  std::string ids;
  for (int32_t t : prompt) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  const fs::path out = work_dir() / ("logits-" + tag + "-" + fmt + ".f32");
  fs::remove(out);
  const std::string cmd = env("UNICORN_ENGINE") + " --model " + model.string() + " --tokens " +
                          ids + " --logits-out " + out.string();
  ASSERT_EQ(run(cmd, work_dir() / ("engine-" + tag + "-" + fmt + ".log")), 0) << cmd;

  const fs::path ref_path = tiny_dir() / ("logits_" + fmt + ".bin");
  const auto ref = read_floats(ref_path);
  const auto got = read_floats(out);
  ASSERT_FALSE(ref.empty()) << ref_path;
  ASSERT_EQ(ref.size() % prompt.size(), 0u)
      << ref_path << " does not hold " << prompt.size() << " rows; regenerate with: "
      << "python3 tests/model/make_golden.py OUT && cp OUT/tiny/* " << tiny_dir();
  ASSERT_EQ(got.size(), ref.size()) << out << ": " << got.size() << " floats, expected "
                                    << prompt.size() << " positions x "
                                    << ref.size() / prompt.size();
  double diff = 0, scale = 0;
  size_t worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = std::isfinite(got[i]) ? std::fabs(double(got[i]) - ref[i]) : INFINITY;
    if (d > diff) diff = d, worst = i;
    scale = std::max(scale, double(std::fabs(ref[i])));
  }
  const size_t vocab = ref.size() / prompt.size();
  const double rel = diff / scale;
  std::printf("[ golden ] %-5s %-5s max|diff| %.3e at position %zu token %zu, logit scale %.3f: "
              "%.2e of the scale (tolerance %.0e)\n",
              tag.c_str(), fmt.c_str(), diff, worst / vocab, worst % vocab, scale, rel, kTolerance);
  EXPECT_LE(rel, kTolerance) << tag << " " << fmt << ": " << cmd;
}

TEST(BinaryGolden, HuggingFaceDir) { expect_binary_matches_golden(tiny_dir(), "hf"); }

TEST(BinaryGolden, Gguf) {
  expect_binary_matches_golden(tiny_gguf(upper(env("UNICORN_ENGINE_FORMAT"))), "gguf");
}

}  // namespace
