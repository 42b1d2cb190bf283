// Label cli: the generator binaries run as a person would run them — each
// case checks the exit code and the message a user reads.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/gguf_writer.hpp"
#include "unicorn/model/from_gguf.hpp"
#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>

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

// Runs a shell command line, redirections included; returns its exit code
// and what it wrote to the pipe.
Result shell(const std::string& cmd) {
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A command's exit code and output, stdout and stderr together.
Result run(const std::string& cmd) { return shell(cmd + " 2>&1"); }

std::string stdout_of(const std::string& cmd) { return shell(cmd + " 2>/dev/null").out; }

const std::string& gen() {
  static const std::string g = env("UNICORN_GENERATE");
  return g;
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << "expected \"" << (part) << "\" in:\n" << (text)

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

fs::path tmp() {
  static const unicorn::test::TempDir dir("unicorn-cli");
  return dir.path();
}

// A GGUF file of a model's exact hyperparameters and tensor types and shapes
// (every weight in the format `scheme` gives it, as llama.cpp names them),
// whose tensor data is a hole: a sparse file of the real size that costs no
// disk. Enough to pick an engine and print its layout, which read only the
// header; an official size's file is gigabytes of zeros otherwise.
// `retype` gives some tensors another type than the scheme's.
void write_sparse_gguf(const fs::path& path, const unicorn::ModelDims& m, const unicorn::Scheme& scheme,
                       const std::vector<std::pair<std::string, unicorn::Format>>& retype = {}) {
  namespace io = unicorn::io;
  std::string header;
  io::detail::GgufSink sink(header);
  std::vector<std::pair<std::string, io::GgufValue>> kvs{{"general.architecture", io::GgufValue(std::string("gemma3"))}};
  boost::hana::for_each(boost::hana::accessors<unicorn::ModelDims>(), [&](auto pair) {
    const unicorn::Hparam* h = unicorn::find_hparam(boost::hana::to<char const*>(boost::hana::first(pair)));
    if (!h || h->gguf.empty()) return;
    const auto v = boost::hana::second(pair)(m);
    if constexpr (std::is_floating_point_v<decltype(v)>) kvs.emplace_back(std::string(h->gguf), io::GgufValue(float(v)));
    else if constexpr (std::is_unsigned_v<decltype(v)>) kvs.emplace_back(std::string(h->gguf), io::GgufValue(uint32_t(v)));
  });
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    unicorn::Format format;
  };
  std::vector<Tensor> tensors;
  const unicorn::DeploymentConfig c = unicorn::make_deployment(m, scheme);
  unicorn::detail::for_each_tensor(c, [&](const unicorn::detail::TensorShape& t, int layer, unicorn::Arena arena) {
    if (arena != unicorn::Arena::Weights || t.role == unicorn::Role::LmHead) return;
    unicorn::TensorSlot slot{};
    slot.role = t.role;
    slot.layer = layer;
    tensors.push_back({slot.gguf_name(), t.rows == 1 ? std::vector<uint64_t>{t.cols} : std::vector<uint64_t>{t.cols, t.rows},
                       t.format});
    for (const auto& [name, format] : retype)
      if (name == tensors.back().name) tensors.back().format = format;
  });
  sink.put<uint32_t>(0x46554747);  // "GGUF"
  sink.put<uint32_t>(3);
  sink.put<uint64_t>(tensors.size());
  sink.put<uint64_t>(kvs.size());
  for (const auto& [key, value] : kvs) {
    sink.put_string(key);
    sink.put_value(value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    sink.put_string(t.name);
    sink.put<uint32_t>(uint32_t(t.dims.size()));
    for (uint64_t d : t.dims) sink.put<uint64_t>(d);
    sink.put<uint32_t>(uint32_t(t.format));
    sink.put<uint64_t>(offset);
    offset = io::detail::align_up(offset + *io::detail::tensor_bytes(unicorn::format_info(t.format), t.dims), 32);
  }
  header.resize(io::detail::align_up(header.size(), 32), '\0');
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(header.data(), std::streamsize(header.size()));
  }
  fs::resize_file(path, header.size() + offset);
}

}  // namespace

TEST(Cli, Help) {
  const Result r = run(gen() + " --help");
  EXPECT_EQ(r.code, 0);
  for (const char* flag : {"--model", "--prompt", "--chat", "--temp", "--top-k", "--top-p",
                           "--min-p", "--seed", "--ctx", "--n-predict", "--file"})
    EXPECT_CONTAINS(r.out, flag);
}

// README's flag table and --help name the same flags: each flag the table
// spells is one the generator takes, and each option --help lists is in the
// table (llama.cpp's single-dash spellings as "(also -cnv)" in --help).
TEST(Cli, ReadmeFlagTableMatchesHelp) {
  std::ifstream f(env("UNICORN_README"));
  ASSERT_TRUE(f) << "UNICORN_README: " << env("UNICORN_README");
  const std::string readme((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t begin = readme.find("| flag | meaning |");
  ASSERT_NE(begin, std::string::npos);
  const std::string table = readme.substr(begin, readme.find("\n\n", begin) - begin);
  const Result help = run(gen() + " --help");
  ASSERT_EQ(help.code, 0);
  // Every -x / --long-name in a table row's first cell (in backticks).
  std::vector<std::string> documented;
  for (size_t row = table.find("\n| `"); row != std::string::npos; row = table.find("\n| `", row + 1)) {
    const std::string cell = table.substr(row + 3, table.find(" | ", row + 3) - row - 3);
    for (size_t at = cell.find('-'); at != std::string::npos; at = cell.find('-', at)) {
      if (at > 0 && cell[at - 1] != '`' && cell[at - 1] != ' ' && cell[at - 1] != '(') { ++at; continue; }
      const size_t end = cell.find_first_not_of("-abcdefghijklmnopqrstuvwxyz0123456789", at);
      documented.push_back(cell.substr(at, end - at));
      at = end;
    }
  }
  ASSERT_GT(documented.size(), 20u) << table;
  for (const std::string& flag : documented)
    EXPECT_TRUE(help.out.find(flag + ",") != std::string::npos || help.out.find(flag + " ") != std::string::npos ||
                help.out.find("(also " + flag + ")") != std::string::npos)
        << "README's flag table names " << flag << ", which --help does not list";
  // Every option name --help lists, at the start of its line.
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  -", 0) != 0) continue;
    const std::string names = line.substr(2, line.find_first_of(" ", 2) - 2);
    std::istringstream each(names);
    for (std::string name; std::getline(each, name, ',');) {
      if (name == "-h" || name == "--help") continue;
      EXPECT_NE(std::find(documented.begin(), documented.end(), name), documented.end())
          << "--help lists " << name << ", which README's flag table does not";
    }
  }
}

// llama-cli's spellings run: -cnv (the chat), -sys, and -ngl / -t, which are
// taken and ignored with a note; -cnv with -no-cnv is a usage error.
TEST(Cli, LlamaCppSpellings) {
  const Result chat = run("printf 'Hello\\n/quit\\n' | " + gen() + " -cnv -sys 'Be brief' -n 4 --temp 0");
  EXPECT_EQ(chat.code, 0) << chat.out;
  EXPECT_CONTAINS(chat.out, "chat: type a message");
  const Result ignored = run(gen() + " -p 'In the beginning' -n 2 --temp 0 -ngl 99 -t 8");
  EXPECT_EQ(ignored.code, 0) << ignored.out;
  EXPECT_CONTAINS(ignored.out, "-ngl 99 ignored: every layer runs on the GPU");
  EXPECT_CONTAINS(ignored.out, "-t 8 ignored");
  const Result both = run(gen() + " -cnv -no-cnv -p x");
  EXPECT_EQ(both.code, 2) << both.out;
  EXPECT_CONTAINS(both.out, "excludes");
}

// The closing timings as llama.cpp prints them: the prompt's speed and the
// generation's on lines of their own, never one figure mixing the two.
TEST(Cli, TimingsOnSeparateLines) {
  const Result r = run(gen() + " -p 'And it came to pass' -n 5 --temp 0");
  ASSERT_EQ(r.code, 0) << r.out;
  std::istringstream lines(r.out);
  int prompt = 0, generation = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("prompt ", 0) == 0 && line.find("tokens/s") != std::string::npos) ++prompt;
    if (line.rfind("generation ", 0) == 0 && line.find("     5 tokens") != std::string::npos &&
        line.find("tokens/s") != std::string::npos)
      ++generation;
  }
  EXPECT_EQ(prompt, 1) << r.out;
  EXPECT_EQ(generation, 1) << r.out;
}

// unicorn-tokenize: plain text in, the ids --tokens takes out; --decode back;
// --json for arrays; a bad id is an error naming it.
TEST(Cli, TokenizePlainText) {
  const std::string tok = env("UNICORN_TOKENIZE") + " --tokenizer " + env("UNICORN_TOKENIZER_JSON");
  EXPECT_EQ(stdout_of("printf 'Hello world' | " + tok + " --add-bos"), "2,9259,1902\n");
  EXPECT_EQ(stdout_of(tok + " -p 'Hello world'"), "9259,1902\n");
  EXPECT_EQ(stdout_of("echo '2, 9259 1902' | " + tok + " --decode"), "<bos>Hello world\n");
  EXPECT_EQ(stdout_of("echo '[\"Hello world\"]' | " + tok + " --json"), "[[9259,1902]]\n");
  const Result bad = run("echo 9259,x | " + tok + " --decode");
  EXPECT_EQ(bad.code, 1);
  EXPECT_CONTAINS(bad.out, "'x' is not a token id");
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
  EXPECT_CONTAINS(r.out, "\ngeneration ");
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

// The demo model's file, named: it holds Gemma 3's weights without the
// vocabulary, so the Gemma 3 tokenizer the build carries goes with it.
TEST(Cli, GgufFile) {
  const Result r = run(gen() + " --model " + env("UNICORN_DEMO_GGUF") + " -p 'Hi' -n 4 --temp 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "GGUF");
  const std::string with_flag = stdout_of(gen() + " --model " + env("UNICORN_DEMO_GGUF") + " --tokenizer " +
                                          env("UNICORN_TOKENIZER_JSON") + " -p 'Hi' -n 4 --temp 0");
  EXPECT_EQ(stdout_of(gen() + " --model " + env("UNICORN_DEMO_GGUF") + " -p 'Hi' -n 4 --temp 0"), with_flag)
      << "the same tokenizer";
}

// A model without a vocabulary (a directory without tokenizer.json) is
// refused in the words of the flags, not the library's.
TEST(Cli, ModelWithoutVocabularyNamesTheFlag) {
  if (env("UNICORN_TINY_ENGINE").empty()) GTEST_SKIP() << "the tiny engine binary is not built";
  const Result r = run(env("UNICORN_TINY_ENGINE") + " --model " + env("UNICORN_FIXTURES") + "/tiny -p 'Hi' -n 2");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "carries no vocabulary: give --tokenizer FILE");
  EXPECT_EQ(r.out.find("LoadOptions"), std::string::npos) << r.out;
}

// --model ollama:NAME: the demo model's file where Ollama's store keeps a
// pulled model (a manifest naming its blob), found through OLLAMA_MODELS.
TEST(Cli, OllamaName) {
  const fs::path store = tmp() / "ollama";
  const std::string hex(64, 'a');
  fs::create_directories(store / "manifests/registry.ollama.ai/library/gemma3");
  fs::create_directories(store / "blobs");
  fs::remove(store / "blobs" / ("sha256-" + hex));
  fs::create_symlink(env("UNICORN_DEMO_GGUF"), store / "blobs" / ("sha256-" + hex));
  std::ofstream(store / "manifests/registry.ollama.ai/library/gemma3/demo")
      << R"({"schemaVersion": 2, "layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:)"
      << hex << R"(", "size": 35122144}]})";
  const std::string in_store = "OLLAMA_MODELS=" + store.string() + " ";
  const Result r = run(in_store + gen() + " --model ollama:gemma3:demo --tokenizer " + env("UNICORN_TOKENIZER_JSON") +
                       " -p 'Hi' -n 4 --temp 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "loaded " + (store / "blobs" / ("sha256-" + hex)).string());
  const Result missing = run(in_store + gen() + " --model ollama:gemma3:27b -p 'Hi' -n 4");
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_CONTAINS(missing.out, "ollama:gemma3:27b: Ollama has no tag '27b' of gemma3 (its tags: demo)");
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
  // A GGUF whose hyperparameters are Gemma 3 1B's: an engine of one size must
  // refuse it and name the binary built for it; unicorn-generate names its
  // 1B engine as the nearest.
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
  const Result r = run(env("UNICORN_DEMO_FROM_GGUF") + " --model " + f.string() + " -p hi");
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.out, "gemma3.embedding_length is 1152");
  EXPECT_CONTAINS(r.out, "use unicorn-gemma3-1b");
  const Result any = run(gen() + " --model " + f.string() + " -p hi");
  EXPECT_EQ(any.code, 1);
  EXPECT_CONTAINS(any.out, "The nearest, gemma3-1b, Q4_0_QAT");
}

// The official files the any-file binaries run, each with its scheme as
// --layout prints it, written out. `scheme`: a llama-quantize file type, laid
// out as it writes it (kLlamaFileTypes: its Q4_0 keeps the embedding at Q6_K,
// Q8_0 in the 270M's and 1B's rows), or Q4_0_QAT (Google's files).
struct OfficialFile {
  const unicorn::ModelDims& model;
  const char* scheme;
  const char* layout;
};
std::vector<OfficialFile> official_files() {
  using namespace unicorn;
  std::vector<OfficialFile> cases;
  for (const ModelDims* m : {&kGemma3_270M, &kGemma3_1B, &kGemma3_4B, &kGemma3_12B, &kGemma3_27B}) {
    cases.push_back({*m, "Q4_0_QAT", "scheme: embedding F16, attention Q4_0, ffn Q4_0, KV cache F16"});
    cases.push_back({*m, "Q8_0", "scheme: embedding Q8_0, attention Q8_0, ffn Q8_0, KV cache F16"});
    cases.push_back({*m, "BF16", "scheme: embedding BF16, attention BF16, ffn BF16, KV cache F16"});
    cases.push_back({*m, "F16", "scheme: embedding F16, attention F16, ffn F16, KV cache F16"});
  }
  // llama-quantize's Q4_0 runs in the QAT engine, holding its embedding as it is.
  cases.push_back({kGemma3_270M, "Q4_0", "scheme: embedding Q8_0, attention Q4_0, ffn Q4_0, KV cache F16"});
  cases.push_back({kGemma3_4B, "Q4_0", "scheme: embedding Q6_K, attention Q4_0, ffn Q4_0, KV cache F16"});
  cases.push_back({kGemma3_27B, "Q4_0", "scheme: embedding Q6_K, attention Q4_0, ffn Q4_0, KV cache F16"});
  cases.push_back({kGemma3_4B, "Q4_1", "scheme: embedding Q6_K, attention Q4_1, ffn Q4_1, KV cache F16"});
  cases.push_back({kGemma3_1B, "Q5_0", "scheme: embedding Q8_0, attention Q5_0, ffn Q5_0, KV cache F16"});
  cases.push_back({kGemma3_12B, "Q5_0", "scheme: embedding Q6_K, attention Q5_0, ffn Q5_0, KV cache F16"});
  cases.push_back({kGemma3_27B, "Q5_1", "scheme: embedding Q6_K, attention Q5_1, ffn Q5_1, KV cache F16"});
  cases.push_back({kGemma3_270M, "Q6_K", "scheme: embedding Q6_K, attention Q6_K, ffn Q6_K, KV cache F16"});
  cases.push_back({kGemma3_1B, "Q4_K_M", "scheme: embedding Q6_K, attention Q4_K, ffn Q4_K; attn_v Q6_K and ffn_down Q6_K in 13 of 26 layers"});
  cases.push_back({kGemma3_4B, "Q4_K_M", "scheme: embedding Q6_K, attention Q4_K, ffn Q4_K; attn_v Q6_K and ffn_down Q6_K in 17 of 34 layers"});
  cases.push_back({kGemma3_12B, "Q5_K_M", "scheme: embedding Q6_K, attention Q5_K, ffn Q5_K; attn_v Q6_K and ffn_down Q6_K in 24 of 48 layers"});
  cases.push_back({kGemma3_27B, "Q4_K_M", "scheme: embedding Q6_K, attention Q4_K, ffn Q4_K; attn_v Q6_K and ffn_down Q6_K in 30 of 62 layers"});
  cases.push_back({kGemma3_27B, "Q6_K", "scheme: embedding Q6_K, attention Q6_K, ffn Q6_K, KV cache F16"});
  cases.push_back({kGemma3_1B, "Q4_K_S", "scheme: embedding Q6_K, attention Q4_K, ffn Q4_K; attn_v Q5_K in 4 of 26 layers; ffn_down Q5_K in 3 of 26 layers"});
  cases.push_back({kGemma3_4B, "Q4_K_S", "scheme: embedding Q6_K, attention Q4_K, ffn Q4_K; attn_v Q5_K in 4 of 34 layers; ffn_down Q5_K in 4 of 34 layers"});
  cases.push_back({kGemma3_27B, "Q4_K_S", "scheme: embedding Q6_K, attention Q4_K, ffn Q4_K; attn_v Q5_K in 4 of 62 layers; ffn_down Q5_K in 7 of 62 layers"});
  cases.push_back({kGemma3_270M, "Q5_K_S", "scheme: embedding Q6_K, attention Q5_K, ffn Q5_K, KV cache F16"});
  // Q4_0 and Q5_0 as llama-quantize --imatrix lays them out.
  cases.push_back({kGemma3_4B, "Q4_0_imatrix", "scheme: embedding Q6_K, attention Q4_0, ffn Q4_0; ffn_down Q4_1 in 4 of 34 layers"});
  cases.push_back({kGemma3_27B, "Q4_0_imatrix", "scheme: embedding Q6_K, attention Q4_0, ffn Q4_0; ffn_down Q4_1 in 7 of 62 layers"});
  cases.push_back({kGemma3_1B, "Q5_0_imatrix", "scheme: embedding Q6_K, attention Q5_0, ffn Q5_0; ffn_down Q5_1 in 3 of 26 layers"});
  cases.push_back({kGemma3_12B, "Q5_K_S", "scheme: embedding Q6_K, attention Q5_K, ffn Q5_K, KV cache F16"});
  // The IQ4 mixes: attn_v at Q5_K where 4 query heads share a KV head (the 270M, 1B).
  cases.push_back({kGemma3_1B, "IQ4_NL", "scheme: embedding Q6_K, attention IQ4_NL, ffn IQ4_NL; attn_v Q5_K in 26 of 26 layers; ffn_down Q5_K in 3 of 26 layers"});
  cases.push_back({kGemma3_270M, "IQ4_XS", "scheme: embedding Q6_K, attention IQ4_XS, ffn IQ4_XS; attn_v Q5_K in 18 of 18 layers; ffn_down Q5_K in 2 of 18 layers"});
  cases.push_back({kGemma3_4B, "IQ4_XS", "scheme: embedding Q6_K, attention IQ4_XS, ffn IQ4_XS; ffn_down Q5_K in 4 of 34 layers"});
  cases.push_back({kGemma3_27B, "IQ4_NL", "scheme: embedding Q6_K, attention IQ4_NL, ffn IQ4_NL; ffn_down Q5_K in 7 of 62 layers"});
  // ... and as llama-quantize --imatrix lays them out (ffn_down all IQ4).
  cases.push_back({kGemma3_12B, "IQ4_XS_imatrix", "scheme: embedding Q6_K, attention IQ4_XS, ffn IQ4_XS, KV cache F16"});
  cases.push_back({kGemma3_1B, "IQ4_NL_imatrix", "scheme: embedding Q6_K, attention IQ4_NL, ffn IQ4_NL; attn_v Q5_K in 26 of 26 layers"});
  // The 2- and 3-bit K mixes (Q4_0 and Q5_0/Q5_1 fallbacks on the 270M's and 1B's rows).
  cases.push_back({kGemma3_4B, "Q2_K", "scheme: embedding Q6_K, attention Q2_K, ffn Q2_K, attn_output Q3_K, attn_v Q3_K, ffn_down Q3_K"});
  cases.push_back({kGemma3_1B, "Q2_K", "scheme: embedding Q6_K, attention Q2_K, ffn Q2_K, attn_output Q3_K, attn_v Q3_K, ffn_down Q3_K; attn_v Q4_K in 26 of 26 layers"});
  cases.push_back({kGemma3_27B, "Q2_K_S", "scheme: embedding Q6_K, attention Q2_K, ffn Q2_K; ffn_down Q4_K in 7 of 62 layers"});
  cases.push_back({kGemma3_270M, "Q3_K_S", "scheme: embedding Q6_K, attention Q3_K, ffn Q3_K, KV cache F16"});
  cases.push_back({kGemma3_12B, "Q3_K_M", "scheme: embedding Q6_K, attention Q3_K, ffn Q3_K, attn_output Q4_K, attn_v Q4_K, ffn_down Q4_K; attn_v Q5_K in 2 of 48 layers; ffn_down Q5_K in 3 of 48 layers"});
  cases.push_back({kGemma3_4B, "Q3_K_L", "scheme: embedding Q6_K, attention Q3_K, ffn Q3_K, attn_output Q5_K, attn_v Q5_K, ffn_down Q5_K"});
  return cases;
}

// A file type's scheme: llama-quantize's layout, or a named scheme (Q4_0_QAT).
unicorn::Scheme file_scheme(const std::string& name) {
  for (const unicorn::LlamaFileType& t : unicorn::kLlamaFileTypes)
    if (t.name == name) return t.scheme;
  return *unicorn::named_scheme(name, unicorn::Format::F16);
}

// `binary --model FILE --layout` for every official file: the file picks the
// engine, whose layout names the file's model, scheme and `context`, with no
// device work. The files are sparse: the real size, holes for data.
void expect_runs_every_official_file(const std::string& binary, const std::string& context) {
  for (const OfficialFile& c : official_files()) {
    const fs::path f = tmp() / (std::string(c.model.name) + "-" + c.scheme + ".gguf");
    write_sparse_gguf(f, c.model, file_scheme(c.scheme));
    const Result r = run(binary + " --model " + f.string() + " --layout");
    EXPECT_EQ(r.code, 0) << f << "\n" << r.out;
    EXPECT_CONTAINS(r.out, "model " + std::string(c.model.name) + ": hidden");
    EXPECT_CONTAINS(r.out, c.layout);
    EXPECT_CONTAINS(r.out, context);
    fs::remove(f);
  }
}

// unicorn-generate runs every official size in the formats people download.
TEST(Cli, GenerateRunsEveryOfficialFile) { expect_runs_every_official_file(gen(), "context 32768"); }

// Every file type llama-quantize writes (kLlamaFileTypes, but F32: it writes
// none; with the --imatrix layouts) at every official size picks its engine
// in unicorn-generate: the one of that name (llama-quantize's Q4_0, whose
// embedding is Q6_K or Q8_0, runs in the QAT engine, holding it as it is).
TEST(Cli, GenerateRunsEveryFileTypeAtEverySize) {
  using namespace unicorn;
  uint32_t files = 0;
  for (const ModelDims* m : {&kGemma3_270M, &kGemma3_1B, &kGemma3_4B, &kGemma3_12B, &kGemma3_27B})
    for (const LlamaFileType& t : kLlamaFileTypes) {
      if (t.name == "F32") continue;
      const fs::path f = tmp() / (std::string(m->name) + "-" + std::string(t.name) + ".gguf");
      write_sparse_gguf(f, *m, t.scheme);
      const Result r = run(gen() + " --model " + f.string() + " --layout");
      EXPECT_EQ(r.code, 0) << f << "\n" << r.out;
      const std::string engine = t.name == "Q4_0" ? "Q4_0_QAT" : std::string(t.name);
      EXPECT_CONTAINS(r.out, "engine " + std::string(m->name) + ", " + engine + " (");
      fs::remove(f);
      ++files;
    }
  EXPECT_EQ(files, 5 * (std::size(kLlamaFileTypes) - 1));
}

// unicorn-server serves them too, each in an engine of the per-size servers'
// 4 slots of 8K tokens; the demo model's engine, first, serves with no --model.
TEST(Cli, ServerServesEveryOfficialFile) {
  const std::string server = env("UNICORN_SERVER");
  expect_runs_every_official_file(server, "context 8192");
  const Result engines = run(server + " --engines");
  EXPECT_EQ(engines.code, 0) << engines.out;
  EXPECT_CONTAINS(engines.out, "gemma3-demo, embedding Q4_0, attention F16, ffn F16, context 1024, 8 streams\n"
                               "gemma3-270m, Q4_0_QAT (embedding F16, attention Q4_0, ffn Q4_0), context 8192, 4 streams\n");
  EXPECT_CONTAINS(engines.out, "gemma3-27b, BF16 (embedding BF16, attention BF16, ffn BF16), context 8192, 4 streams");
  // And the 6 speculative pairs (--draft), which a file without --draft never picks.
  EXPECT_EQ(std::count(engines.out.begin(), engines.out.end(), '\n'), 116 + 6) << engines.out;
  const Result demo = run(server + " --layout");
  EXPECT_EQ(demo.code, 0) << demo.out;
  EXPECT_CONTAINS(demo.out, "model gemma3-demo: hidden");
  // Slots and context are the picked engine's limits: lowered, never raised.
  const fs::path f = tmp() / "gemma3-4b-Q4_K_M.gguf";
  write_sparse_gguf(f, unicorn::kGemma3_4B, unicorn::schemes::kQ4_K_M);
  EXPECT_EQ(run(server + " --model " + f.string() + " --parallel 4 -c 8192 --layout").code, 0);
  const Result slots = run(server + " --model " + f.string() + " --parallel 5 --layout");
  EXPECT_EQ(slots.code, 2) << slots.out;
  EXPECT_CONTAINS(slots.out, "--parallel: 5: the engine that serves this file is compiled for 4 slots");
  const Result context = run(server + " --model " + f.string() + " -c 8193 --layout");
  EXPECT_EQ(context.code, 2) << context.out;
  EXPECT_CONTAINS(context.out, "--ctx-size: 8193: the engine that serves this file is compiled for 8192 tokens per slot");
  const Result refused = run(server + " --model " + (tmp() / "gemma3-4b-all-q4_k.gguf").string() + " --layout");
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_CONTAINS(refused.out, "no such file");
  write_sparse_gguf(tmp() / "gemma3-4b-all-q4_k.gguf", unicorn::kGemma3_4B, unicorn::schemes::kQ4_K);
  const Result none = run(server + " --model " + (tmp() / "gemma3-4b-all-q4_k.gguf").string());
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_CONTAINS(none.out, "none of the 116 engines compiled into unicorn-server runs this file");
  EXPECT_CONTAINS(none.out, "The nearest, gemma3-4b, Q4_K_S");
  fs::remove(f);
  fs::remove(tmp() / "gemma3-4b-all-q4_k.gguf");
}

// A file no compiled engine runs: refused, naming the nearest engine, how it
// differs, and the unicorn_add_engine line that builds one for the file.
TEST(Cli, GenerateRefusesAFileNoEngineRuns) {
  const fs::path f = fs::absolute(tmp() / "gemma3-4b-all-q4_k.gguf");
  write_sparse_gguf(f, unicorn::kGemma3_4B, unicorn::schemes::kQ4_K);
  const Result r = run(gen() + " --model " + f.string() + " -p hi");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "none of the 116 engines compiled into unicorn-generate runs this file");
  // The Q4_K_S engine would hold its Q4_K embedding; its first 4 layers' attn_v are Q5_K.
  EXPECT_CONTAINS(r.out, "The nearest, gemma3-4b, Q4_K_S");
  EXPECT_CONTAINS(r.out, "first: gemma3-4b-all-q4_k.gguf: tensor 'blk.0.attn_v.weight' is Q4_K but this engine's "
                         "scheme stores it as Q5_K");
  EXPECT_CONTAINS(r.out, "unicorn_add_engine(my-engine GGUF " + f.string() + ")");
  fs::remove(f);
}

// --draft picks the speculative pair whose model runs --model and whose draft
// runs --draft (--placement prints the draft's bytes on a line of its own);
// without it, the engines without a draft, as before. Files no pair runs are
// refused with the pairs' names.
TEST(Cli, GenerateDraftPicksTheSpeculativePair) {
  const fs::path big = tmp() / "gemma3-27b-qat.gguf", small = tmp() / "gemma3-270m-qat.gguf",
                 k_mix = tmp() / "gemma3-27b-q4_k_m.gguf", four = tmp() / "gemma3-4b-qat.gguf";
  write_sparse_gguf(big, unicorn::kGemma3_27B, unicorn::schemes::kQ4_0_QAT);
  write_sparse_gguf(small, unicorn::kGemma3_270M, unicorn::schemes::kQ4_0_QAT);
  write_sparse_gguf(k_mix, unicorn::kGemma3_27B, unicorn::schemes::kQ4_K_M);
  write_sparse_gguf(four, unicorn::kGemma3_4B, unicorn::schemes::kQ4_0_QAT);
  const Result pair = run(gen() + " --model " + big.string() + " --draft " + small.string() + " --placement");
  EXPECT_EQ(pair.code, 0) << pair.out;
  EXPECT_CONTAINS(pair.out, "placement of gemma3-27b");
  EXPECT_CONTAINS(pair.out, "draft gemma3-270m (embedding F16, attention Q4_0, ffn Q4_0; context 32768, up to 16 "
                            "tokens a round): ");
  const Result alone = run(gen() + " --model " + big.string() + " --placement");
  EXPECT_EQ(alone.code, 0) << alone.out;
  EXPECT_EQ(alone.out.find("draft"), std::string::npos) << alone.out;
  const Result no_model = run(gen() + " --model " + k_mix.string() + " --draft " + small.string() + " -p hi");
  EXPECT_EQ(no_model.code, 1) << no_model.out;
  EXPECT_CONTAINS(no_model.out, "no speculative pair compiled into unicorn-generate runs this file as its model");
  const Result no_draft = run(gen() + " --model " + big.string() + " --draft " + four.string() + " -p hi");
  EXPECT_EQ(no_draft.code, 1) << no_draft.out;
  EXPECT_CONTAINS(no_draft.out, "no draft compiled for gemma3-27b");
  EXPECT_CONTAINS(no_draft.out, "its drafts are: gemma3-270m");
  const Result engines = run(gen() + " --engines");
  EXPECT_CONTAINS(engines.out, "gemma3-27b, Q4_0_QAT (embedding F16, attention Q4_0, ffn Q4_0), context 32768; "
                               "drafted by gemma3-1b,");
  const Result bare = run(gen() + " --draft-max 4 -p hi");
  EXPECT_EQ(bare.code, 2) << bare.out;
  EXPECT_CONTAINS(bare.out, "need --draft FILE");
  for (const fs::path& f : {big, small, k_mix, four}) fs::remove(f);
}

// unicorn-server --draft serves the server-shaped pair that runs both files.
TEST(Cli, ServerDraftPicksTheSpeculativePair) {
  const std::string server = env("UNICORN_SERVER");
  const fs::path big = tmp() / "server-gemma3-27b-qat.gguf", small = tmp() / "server-gemma3-1b-qat.gguf";
  write_sparse_gguf(big, unicorn::kGemma3_27B, unicorn::schemes::kQ4_0_QAT);
  write_sparse_gguf(small, unicorn::kGemma3_1B, unicorn::schemes::kQ4_0_QAT);
  const Result pair = run(server + " --model " + big.string() + " --draft " + small.string() + " --layout");
  EXPECT_EQ(pair.code, 0) << pair.out;
  EXPECT_CONTAINS(pair.out, "context 8192, 4 streams; drafted by gemma3-1b,");
  const Result none = run(server + " --model " + small.string() + " --draft " + small.string() + " --layout");
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_CONTAINS(none.out, "no speculative pair compiled into unicorn-server runs this file as its model");
  for (const fs::path& f : {big, small}) fs::remove(f);
}

// The demo pair runs with no --model: a draft of kGemma3DemoDraft's shapes
// (unicorn-convert's random weights) drafts for the demo model, and the
// program says how many of its tokens were taken.
TEST(Cli, GenerateDraftsForTheDemoModel) {
  const fs::path draft = tmp() / "demo-draft.gguf";
  const Result made = run(env("UNICORN_CONVERT") + " --random gemma3-demo-draft --type F16 --embedding Q4_0 --out " +
                          draft.string());
  ASSERT_EQ(made.code, 0) << made.out;
  const Result r = run(gen() + " --draft " + draft.string() + " -p 'In the beginning' -n 4 --temp 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "up to 16 tokens a round");
  EXPECT_CONTAINS(r.out, "drafted tokens accepted");
  const Result off = run(gen() + " --draft " + draft.string() + " --draft-max 17 -p hi");
  EXPECT_EQ(off.code, 2) << off.out;
  fs::remove(draft);
}

// The scheme a file's tensor types follow: a named one, or a mix built from
// the types (the demo model's Q4_0 embedding and F16 matrices); a mix no
// scheme expresses is refused, naming the tensor.
TEST(Cli, SchemeFromAGgufFile) {
  using namespace unicorn;
  const auto scheme_of = [](const ModelDims& m, const Scheme& s) {
    const fs::path f = tmp() / "scheme.gguf";
    write_sparse_gguf(f, m, s);
    const io::GgufFile g = io::GgufFile::open(f);
    return scheme_from_gguf(g, dims_from_gguf(g));
  };
  EXPECT_EQ(scheme_of(kGemma3_27B, schemes::kQ4_K_M), schemes::kQ4_K_M);
  EXPECT_EQ(scheme_of(kGemma3_1B, schemes::kQ5_K_M), schemes::kQ5_K_M) << "with Q5_1 and Q8_0 fallbacks";
  EXPECT_EQ(scheme_of(kGemma3_4B, schemes::kQ4_0_QAT), schemes::kQ4_0_QAT);
  EXPECT_EQ(scheme_name(scheme_of(kGemma3_12B, schemes::kQ6_K)), "Q6_K");
  const Scheme demo{.embedding = Format::Q4_0, .attention = Format::F16, .ffn = Format::F16, .kv_cache = Format::F16};
  EXPECT_EQ(scheme_of(kGemma3Demo, demo), demo);
  // Q4_K_M with ffn_down Q4_K everywhere: a mix of its own, not a named one.
  Scheme own = schemes::kQ4_K_M;
  own.ffn_down_more_bits = Format::Q4_K;
  EXPECT_EQ(scheme_of(kGemma3_4B, own), own);
  EXPECT_EQ(scheme_name(own), "");
  // Q6_K for one ffn_down outside llama-quantize's layers (layer 5 of 34) is no mix the engine has.
  const fs::path f = tmp() / "odd.gguf";
  write_sparse_gguf(f, kGemma3_4B, schemes::kQ4_K_M, {{"blk.5.ffn_down.weight", Format::Q6_K}});
  try {
    const io::GgufFile g = io::GgufFile::open(f);
    (void)scheme_from_gguf(g, dims_from_gguf(g));
    ADD_FAILURE() << "a mix no scheme expresses was accepted";
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "tensor 'blk.5.ffn_down.weight' is Q6_K where the nearest scheme");
  }
  EXPECT_EQ(dims_from_gguf(io::GgufFile::open(f)).query_pre_attn_scalar, 256.f);
  write_sparse_gguf(f, kGemma3_27B, schemes::kQ8_0);
  EXPECT_EQ(dims_from_gguf(io::GgufFile::open(f)).query_pre_attn_scalar, 168.f) << "llama.cpp's 27B rule";
}

// unicorn_add_engine(<t> GGUF file): an engine compiled from the demo model's
// own metadata and tensor types, which is unicorn-generate's demo engine.
TEST(Cli, EngineFromAGgufFile) {
  const Result layout = run(env("UNICORN_DEMO_FROM_GGUF") + " --layout");
  const Result demo = run(gen() + " --layout");
  ASSERT_EQ(layout.code, 0) << layout.out;
  const auto after_first_line = [](const std::string& s) { return s.substr(s.find('\n')); };
  EXPECT_EQ(after_first_line(layout.out), after_first_line(demo.out));
  EXPECT_CONTAINS(layout.out, "model unicorn-demo-from-gguf: hidden 192, 6 layers");
  const std::string flags = " --model " + env("UNICORN_DEMO_GGUF") + " --tokenizer " + env("UNICORN_TOKENIZER_JSON") +
                            " -p 'And it came to pass' -n 6 --temp 0";
  const std::string a = stdout_of(env("UNICORN_DEMO_FROM_GGUF") + flags);
  EXPECT_EQ(a, stdout_of(gen() + flags));
  EXPECT_GT(a.size(), std::string("And it came to pass").size() + 8) << a;
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

// examples/host_app, the README's host app (public API only): its greedy
// generation is the generator's, word for word, and its chat answers.
TEST(Cli, HostAppWritesWhatTheGeneratorWrites) {
  const std::string app = env("UNICORN_HOST_APP") + " " + env("UNICORN_DEMO_GGUF") + " " + env("UNICORN_TOKENIZER_JSON");
  const Result r = run(app + " 2>&1 >" + (tmp() / "host_app.out").string());
  ASSERT_EQ(r.code, 0) << r.out;
  // Its output: the continuation, then the two answers, each ending a line.
  const std::string out = read_text(tmp() / "host_app.out");
  const std::string prompt = "And it came to pass";
  const std::string generator = stdout_of(gen() + " -p '" + prompt + "' -n 16 --temp 0");
  ASSERT_EQ(generator.substr(0, prompt.size()), prompt);
  const std::string continuation = generator.substr(prompt.size());  // with its "\n"
  EXPECT_EQ(out.substr(0, continuation.size()), continuation);
  EXPECT_GT(out.size(), continuation.size() + 4) << "no chat answers:\n" << out;
  EXPECT_EQ(run(env("UNICORN_HOST_APP")).code, 2);
  // The README shows this program, whole.
  const fs::path source = fs::path(env("UNICORN_README")).parent_path() / "examples/host_app/main.cpp";
  EXPECT_CONTAINS(read_text(env("UNICORN_README")), "```cpp\n" + read_text(source) + "```\n");
}

// -c sets the KV cache's length (EngineOptions::context): a shorter context
// allocates less device memory, which the generator reports after loading;
// above the compiled context it is a usage error naming the limit.
TEST(Cli, ContextSetsTheKvCacheMemory) {
  const auto kv_mib = [](const std::string& ctx) {
    const Result r = run(gen() + " -c " + ctx + " -p 'In the beginning' -n 1 --temp 0");
    EXPECT_EQ(r.code, 0) << r.out;
    const std::string line = "KV cache ";
    const size_t at = r.out.find(line);
    EXPECT_NE(at, std::string::npos) << r.out;
    EXPECT_CONTAINS(r.out, ", " + ctx + " positions per stream");
    return at == std::string::npos ? 0.0 : std::stod(r.out.substr(at + line.size()));
  };
  const double full = kv_mib("1024"), quarter = kv_mib("256");
  EXPECT_GT(quarter, 0.0);
  EXPECT_LT(quarter, full) << "-c 256 must allocate a shorter KV cache than -c 1024";
  const Result over = run(gen() + " -c 1025 -p hi");
  EXPECT_EQ(over.code, 2) << over.out;
  EXPECT_CONTAINS(over.out, "compiled for a context of 1 to 1024 tokens");
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

namespace {

// Runs unicorn-chat with `args`, its input a named pipe, until it has printed
// its banner; then the bash lines `then` ($pid: the chat; fd 3: its input;
// $out: what it prints), then closes its input and waits. Returns what it
// printed, and "rc=<its exit status>".
std::string chat_session(const std::string& name, const std::string& args, const std::string& then) {
  const fs::path dir = tmp(), script = dir / (name + ".sh");
  std::ofstream(script) << "cd " << dir.string() << " && rm -f " << name << ".in " << name << ".out && mkfifo "
                        << name << ".in\nout=" << name << ".out\n"
                        << env("UNICORN_CHAT") << " " << args << " < " << name << ".in > $out 2>&1 &\n"
                        << "pid=$!\nexec 3>" << name << ".in\n"
                        << "for i in $(seq 600); do grep -q '^chat:' $out 2>/dev/null && break; sleep 0.1; done\n"
                        << then << "\nexec 3>&-\nwait $pid\necho \"rc=$?\" >> $out\n";
  EXPECT_EQ(std::system(("bash " + script.string()).c_str()), 0);
  return read_text(dir / (name + ".out"));
}

}  // namespace

// Ctrl-C during an answer stops that answer, not the program: the chat then
// takes the next message and exits normally. Each Ctrl-C comes once its answer
// has begun to stream (its first words are out), of answers as long as the
// context allows: no device finishes first, and neither answer runs long.
TEST(Cli, InterruptStopsTheAnswerNotTheChat) {
  const std::string out = chat_session("interrupt", "-n 100000 --temp 0", R"(streams() {  # $1: the size before
  for i in $(seq 600); do [ $(stat -c %s $out) -gt $(($1 + 24)) ] && break; sleep 0.05; done
}
answers() {  # until $1 answers have ended (their statistics lines)
  for i in $(seq 600); do [ $(grep -c 'tokens/s' $out) -ge $1 ] && break; sleep 0.05; done
}
start=$(stat -c %s $out)
echo 'Tell me a long story' >&3
streams $start
kill -INT $pid
answers 1
start=$(stat -c %s $out)
echo 'Another message' >&3
streams $start
kill -INT $pid
answers 2
echo /quit >&3)");
  const auto first = out.find(", stopped;"), second = out.find(", stopped;", first + 1);
  EXPECT_NE(first, std::string::npos) << "the answer was not stopped:\n" << out;
  EXPECT_NE(second, std::string::npos) << "no answer to the message after Ctrl-C, or not stopped:\n" << out;
  EXPECT_CONTAINS(out, "rc=0");
}

// Ctrl-C at the chat's prompt, with no answer running, leaves the chat at once
// (exit status 0); it used to be kept for the next answer, which it cancelled.
TEST(Cli, InterruptAtThePromptLeavesTheChat) {
  const std::string out = chat_session("leave", "-n 8 --temp 0", R"(sleep 0.5  # waiting at the prompt now
kill -INT $pid
for i in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then echo "still running 5 s after Ctrl-C" >> $out; kill -9 $pid; fi)");
  EXPECT_CONTAINS(out, "rc=0");
  EXPECT_EQ(out.find("still running"), std::string::npos) << out;
  EXPECT_EQ(out.find("tokens/s"), std::string::npos) << "no answer was asked for:\n" << out;
}

// The chat on a terminal (a pseudo-terminal, as a person types): libedit's
// history brings the last message back with the up arrow, Ctrl-C (the
// terminal's ^C, not a kill) stops an answer, and Ctrl-C at the prompt leaves.
class Terminal {
 public:
  explicit Terminal(const std::string& program, const std::vector<std::string>& args) {
    pid_ = forkpty(&fd_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      std::vector<char*> argv{const_cast<char*>(program.c_str())};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(program.c_str(), argv.data());
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  void type(std::string_view keys) { ASSERT_EQ(write(fd_, keys.data(), keys.size()), ssize_t(keys.size())); }
  // Reads until `needle` appears after `from` in the transcript, or `seconds` pass.
  bool wait_for(const std::string& needle, size_t from, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (transcript.find(needle, from) == std::string::npos) {
      if (std::chrono::steady_clock::now() > end) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char buf[4096];
        const ssize_t n = read(fd_, buf, sizeof buf);
        if (n <= 0) return transcript.find(needle, from) != std::string::npos;
        transcript.append(buf, size_t(n));
      }
    }
    return true;
  }
  // Reads until the transcript holds `n` bytes, or `seconds` pass.
  bool wait_for_bytes(size_t n, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (transcript.size() < n && std::chrono::steady_clock::now() < end) wait_for("\x01never", 0, 0.05);
    return transcript.size() >= n;
  }
  // The exit status once the program has ended, within `seconds`; -1 if not.
  int exit_status(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      int status = 0;
      wait_for("\x01never", transcript.size(), 0.05);  // keep draining its output
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }
  // The chat's first prompt, within `seconds` (the model loads first).
  // The chat's banner ("chat: type a message; ..."), then its first prompt.
  // Not "chat:" alone: the demo model's notice, "unicorn-chat: no --model
  // given ...", comes first and holds it, which left the whole start-up (over
  // 10 s for an ASan build beside another test on 2 cores) the prompt's 10 s.
  bool wait_for_chat(double seconds = 120) {
    return wait_for("chat: type a message", 0, seconds) &&
           wait_for("> ", transcript.find("chat: type a message"), 10);
  }
  // An answer's closing statistics line after `from`, within `seconds`, and
  // the prompt after it.
  bool wait_for_answer(size_t from, double seconds = 120) {
    return wait_for("context ", from, seconds) && wait_for("> ", transcript.find("context ", from), 10);
  }
  std::string transcript;

 private:
  int fd_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
};

TEST(Cli, ChatHistoryOnATerminal) {
  Terminal t(env("UNICORN_CHAT"), {"-n", "24", "--temp", "0"});
  ASSERT_TRUE(t.wait_for_chat()) << t.transcript;
  size_t at = t.transcript.size();
  t.type("Hello there\r");
  ASSERT_TRUE(t.wait_for_answer(at)) << t.transcript;

  // The up arrow brings "Hello there" back; Enter sends it again.
  at = t.transcript.size();
  t.type("\x1b[A");
  EXPECT_TRUE(t.wait_for("Hello there", at, 10)) << "no history:\n" << t.transcript;
  t.type("\r");
  ASSERT_TRUE(t.wait_for_answer(at)) << t.transcript;

  // ^C at the prompt leaves, with status 0.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  t.type("\x03");
  EXPECT_EQ(t.exit_status(10), 0) << t.transcript;
}

TEST(Cli, ChatInterruptOnATerminal) {
  // An answer as long as the context allows, so that ^C comes while it streams.
  Terminal t(env("UNICORN_CHAT"), {"-n", "100000", "--temp", "0"});
  ASSERT_TRUE(t.wait_for_chat()) << t.transcript;
  size_t at = t.transcript.size();
  t.type("Tell me a long story\r");
  ASSERT_TRUE(t.wait_for("story", at, 10)) << t.transcript;
  const size_t echoed = t.transcript.find("story", at) + 7;  // the echo, "\r\n"
  ASSERT_TRUE(t.wait_for_bytes(echoed + 16, 120)) << "no answer:\n" << t.transcript;
  t.type("\x03");
  ASSERT_TRUE(t.wait_for("context ", at, 60)) << t.transcript;
  EXPECT_TRUE(t.wait_for(", stopped;", at, 1)) << "the answer was not stopped:\n" << t.transcript;
  ASSERT_TRUE(t.wait_for("> ", t.transcript.find("context ", at), 10)) << t.transcript;

  // The chat goes on: the next message gets its answer (stopped too).
  at = t.transcript.size();
  t.type("Go on\r");
  ASSERT_TRUE(t.wait_for("Go on", at, 10)) << t.transcript;
  ASSERT_TRUE(t.wait_for_bytes(t.transcript.find("Go on", at) + 7 + 16, 120)) << t.transcript;
  t.type("\x03");
  ASSERT_TRUE(t.wait_for_answer(at, 60)) << t.transcript;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  t.type("\x04");  // Ctrl-D at an empty prompt leaves too
  EXPECT_EQ(t.exit_status(10), 0) << t.transcript;
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

namespace {

// The command run as a user who cannot write where root can (root writes into
// read-only directories): as nobody through setpriv when this test runs as root.
std::string as_unprivileged(const std::string& cmd) {
  return ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups -- " + cmd : cmd;
}

size_t entries(const fs::path& dir) {
  return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

// unicorn-convert: a full device, a read-only directory and a write cut short
// (the file-size limit, as a disk filling up mid-file) each exit 1 naming the
// path and the reason; a file that was there before stays as it was.
TEST(Cli, ConvertWriteFailuresLoseNothing) {
  const std::string convert = env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out ";
  const Result full = run(convert + "/dev/full");
  EXPECT_EQ(full.code, 1) << full.out;
  EXPECT_CONTAINS(full.out, "/dev/full: cannot write: No space left on device");
  EXPECT_EQ(full.out.find("wrote"), std::string::npos) << full.out;

  const fs::path ro = tmp() / "read-only";
  fs::create_directories(ro);
  std::ofstream(ro / "model.gguf") << "the old model";
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(tmp(), fs::perms::all & ~(fs::perms::group_write | fs::perms::others_write));
  const Result denied = run(as_unprivileged(convert + (ro / "model.gguf").string()));
  EXPECT_EQ(denied.code, 1) << denied.out;
  EXPECT_CONTAINS(denied.out, (ro / "model.gguf").string() + ": cannot create");
  EXPECT_CONTAINS(denied.out, "Permission denied");
  EXPECT_EQ(read_text(ro / "model.gguf"), "the old model");
  EXPECT_EQ(entries(ro), 1u);
  fs::permissions(ro, fs::perms::owner_all);

  const fs::path dir = tmp() / "size-limit";
  fs::create_directories(dir);
  std::ofstream(dir / "model.gguf") << "the old model";
  // SIGXFSZ ignored: a write past the limit fails with EFBIG instead of ending the process.
  const Result cut = run("bash -c \"trap '' XFSZ; ulimit -f 64; " + convert + (dir / "model.gguf").string() + "\"");
  EXPECT_EQ(cut.code, 1) << cut.out;
  EXPECT_CONTAINS(cut.out, (dir / "model.gguf").string() + ": cannot write: File too large");
  EXPECT_EQ(read_text(dir / "model.gguf"), "the old model");
  EXPECT_EQ(entries(dir), 1u) << "the temporary file is removed";

  // And a write that works replaces the old file whole.
  ASSERT_EQ(run(convert + (dir / "model.gguf").string()).code, 0);
  EXPECT_GT(fs::file_size(dir / "model.gguf"), 100000u);
  EXPECT_EQ(entries(dir), 1u);
}

TEST(Cli, LogitsOutToAFullDevice) {
  if (env("UNICORN_TINY_ENGINE").empty()) GTEST_SKIP() << "the tiny engine binary is not built";
  const Result r = run(env("UNICORN_TINY_ENGINE") + " --model " + env("UNICORN_FIXTURES") +
                       "/tiny --tokens 2,17 --logits-out /dev/full");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "/dev/full: cannot write: No space left on device");
  EXPECT_EQ(r.out.find("written to"), std::string::npos) << r.out;
}

// Generated text into a full device is an error; into a pipe whose reader
// left (`| head`) the generator stops quietly, with status 0.
TEST(Cli, StandardOutputFullOrClosed) {
  const Result full = run("bash -c '" + gen() + " -p Hello -n 8 --temp 0 > /dev/full'");  // stderr: ours
  EXPECT_EQ(full.code, 1) << full.out;
  EXPECT_CONTAINS(full.out, "standard output: cannot write: No space left on device");
  const Result head = run("bash -c 'set -o pipefail; " + gen() +
                          " -p Hello -n 400 --temp 0 2>" + (tmp() / "head.err").string() +
                          " | head -c 8 >/dev/null'");
  EXPECT_EQ(head.code, 0) << head.out;
  const std::string err = read_text(tmp() / "head.err");
  EXPECT_EQ(err.find("cannot write"), std::string::npos) << err;
  EXPECT_EQ(err.find("\ngeneration "), std::string::npos) << "it stopped at the closed pipe:\n" << err;
}

namespace {

// A program a signal ended: its exit status as a shell sees it, how long it
// took to end after the signal (ms), and what it wrote.
struct Signalled {
  int status = -1;
  long ms = -1;
  std::string out, err;
};

// Runs `cmd` in `dir` (stdout and stderr to out and err there), waits until
// `ready` holds (a bash condition, run in `dir`), and sends `signal`. A status
// of -1: `ready` never held.
Signalled signal_when(const fs::path& dir, const std::string& cmd, const std::string& ready, const std::string& signal) {
  fs::create_directories(dir);
  const fs::path script = dir / "signal.sh";
  std::ofstream(script) << "cd " << dir.string() << " && : > out && : > err\n"
                        << cmd << " > out 2> err &\n"
                        << "pid=$!\n"
                        << "for i in $(seq 12000); do { " << ready << "; } && break; kill -0 $pid 2>/dev/null || break; sleep 0.005; done\n"
                        << "if ! { " << ready << "; }; then wait $pid; echo '-1 0' > status; exit 0; fi\n"
                        << "kill -" << signal << R"sh( $pid
start=$(date +%s%N)
wait $pid
rc=$?
echo "$rc $(( ($(date +%s%N) - start) / 1000000 ))" > status
)sh";
  Signalled s;
  if (std::system(("bash " + script.string()).c_str()) != 0) return s;
  std::ifstream(dir / "status") >> s.status >> s.ms;
  s.out = read_text(dir / "out");
  s.err = read_text(dir / "err");
  return s;
}

// A one-shot generation sent `signal` once its answer is streaming.
Signalled signal_mid_generation(const std::string& signal) {
  return signal_when(tmp() / ("signal-" + signal), gen() + " -p 'Once upon a time' -n 4000 --temp 0",
                     "[ \"$(wc -c < out)\" -gt 40 ]", signal);
}

// The files in `dir` whose names contain ".tmp." (io::AtomicFile's temporaries).
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(e.path().filename().string());
  return found;
}

}  // namespace

// Ctrl-C during a one-shot generation: it stops at the next token, prints the
// timings line and exits 130, as a shell reports a process that Ctrl-C ended.
TEST(Cli, SigintStopsAtTheNextTokenWithTimings) {
  const Signalled s = signal_mid_generation("INT");
  EXPECT_EQ(s.status, 130) << s.err;
  EXPECT_CONTAINS(s.err, "stopped: interrupted");
  EXPECT_CONTAINS(s.err, "tokens/s");
  EXPECT_LT(s.ms, 5000) << "it must stop at the next token";
}

// SIGTERM during generation: the same, with its own words and status (143),
// and the text ends with its line, not in the middle of a token.
TEST(Cli, SigtermEndsPromptly) {
  const Signalled s = signal_mid_generation("TERM");
  EXPECT_EQ(s.status, 128 + 15) << s.err;
  EXPECT_CONTAINS(s.err, "stopped: terminated (SIGTERM)");
  EXPECT_CONTAINS(s.err, "tokens/s");
  EXPECT_TRUE(s.out.ends_with("\n")) << s.out;
  EXPECT_LT(s.ms, 5000);
}

// Ctrl-C during a long prompt stops it between two passes of the prompt (the
// demo's passes are 128 tokens), not after the whole prompt.
TEST(Cli, SigintDuringALongPromptStopsWithinAPass) {
  const fs::path dir = tmp() / "signal-prompt";
  fs::create_directories(dir);
  {
    std::ofstream prompt(dir / "prompt.txt");
    for (int i = 0; i < 100; ++i) prompt << "And it came to pass in those days. ";  // 902 tokens
  }
  const Signalled s = signal_when(dir, gen() + " -f prompt.txt -n 4 --temp 0", "grep -q '^loaded' err", "INT");
  EXPECT_EQ(s.status, 130) << s.err;
  EXPECT_CONTAINS(s.err, "stopped: interrupted (SIGINT) during the prompt");
  // The timings count what went in: whole passes, fewer than the prompt's 902 tokens.
  const size_t timings = s.err.find("\nprompt ");
  ASSERT_NE(timings, std::string::npos) << s.err;
  int fed = -1;
  std::istringstream(s.err.substr(timings + 8)) >> fed;
  EXPECT_EQ(fed % 128, 0) << s.err;
  EXPECT_LT(fed, 902) << s.err;
  EXPECT_LT(s.ms, 30000) << s.err;  // one pass: 1.6 s on an idle 2-core machine, 4.1 s beside a build
}

// A signal while the model loads: a line says so, and the status is the signal's.
TEST(Cli, SigintDuringLoadSaysSo) {
  const Signalled s = signal_when(tmp() / "signal-load", gen() + " -p hi -n 4 --temp 0",
                                  "grep -q 'built-in demo model' err", "INT");
  EXPECT_EQ(s.status, 130) << s.err;
  EXPECT_CONTAINS(s.err, "interrupted (SIGINT) while");
  EXPECT_EQ(s.out, "") << "nothing is generated";
}

// Ctrl-C while unicorn-convert writes removes its temporary file: nothing is
// left beside the target, and the target is not made. (SIGTERM takes the same
// handler: tests/perplexity sends it to unicorn-perplexity.)
TEST(Cli, SignalDuringConvertLeavesNoTemporary) {
  const fs::path dir = tmp() / "convert-signal";
  const Signalled s = signal_when(dir, env("UNICORN_CONVERT") + " --random gemma3-270m --type F16 --out model.gguf",
                                  "compgen -G 'model.gguf.tmp.*' > /dev/null", "INT");
  ASSERT_NE(s.status, -1) << "no temporary file appeared: " << s.err;
  EXPECT_EQ(s.status, 130) << s.err;
  EXPECT_CONTAINS(s.err, "unicorn-convert: interrupted (SIGINT); its unfinished output files were removed");
  EXPECT_EQ(temporaries(dir), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(dir / "model.gguf"));
}

// A writer killed outright (SIGKILL) leaves its temporary; the next write to
// the same target removes those of processes that are gone, and no other.
TEST(Cli, OrphanedTemporariesAreRemovedAtTheNextWrite) {
  const fs::path dir = tmp() / "orphans";
  fs::create_directories(dir);
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  waitpid(gone, nullptr, 0);
  const std::string dead = "model.gguf.tmp." + std::to_string(gone) + ".0";
  const std::string alive = "model.gguf.tmp." + std::to_string(::getpid()) + ".0";  // this test's own
  const std::string other = "other.gguf.tmp." + std::to_string(gone) + ".0";        // another target's
  for (const std::string& f : {dead, alive, other}) std::ofstream(dir / f) << "partial";
  const Result r = run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + (dir / "model.gguf").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(dir / dead));
  EXPECT_TRUE(fs::exists(dir / alive));
  EXPECT_TRUE(fs::exists(dir / other));
}

// A symbolic link given as the output is followed, as the shell's `>` follows
// it, even when the file it names does not exist yet: the link stays a link.
TEST(Cli, OutputThroughADanglingLinkWritesTheFileItNames) {
  const fs::path dir = tmp() / "dangling";
  fs::create_directories(dir);
  fs::create_symlink("target.gguf", dir / "link.gguf");
  const Result r = run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + (dir / "link.gguf").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_symlink(dir / "link.gguf"));
  EXPECT_TRUE(fs::is_regular_file(dir / "target.gguf"));
  EXPECT_GT(fs::file_size(dir / "target.gguf"), 1000u);
}

// What the programs print alone (--help, --layout, --placement, --engines) to
// a full device is exit 1 with the reason, in every program.
TEST(Cli, ListsAndHelpToAFullDeviceFail) {
  const std::string server = env("UNICORN_SERVER");
  for (const std::string& cmd :
       {gen() + " --help", gen() + " --layout", gen() + " --placement", gen() + " --engines", server + " --help",
        server + " --engines", server + " --layout", env("UNICORN_CONVERT") + " --help",
        env("UNICORN_TOKENIZE") + " --help"}) {
    SCOPED_TRACE(cmd);
    const Result r = run("bash -c '" + cmd + " > /dev/full'");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_CONTAINS(r.out, "cannot write: No space left on device");
  }
}

// The same for unicorn-bench (apart: the sanitizer step does not build it).
TEST(Cli, BenchHelpToAFullDeviceFails) {
  const Result r = run("bash -c '" + env("UNICORN_BENCH") + " --help > /dev/full'");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "cannot write: No space left on device");
}

// --tokens with no ids is an error, not a prompt read from standard input.
TEST(Cli, EmptyTokensIsAnError) {
  const Result r = run(gen() + " --tokens '' < /dev/null");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_CONTAINS(r.out, "--tokens: is empty: give comma-separated token ids");
}

// An --logits-out that cannot be written is refused before the model is loaded.
TEST(Cli, UnwritableLogitsOutIsRefusedFirst) {
  const Result r = run(gen() + " --tokens 2,17 --logits-out " + (tmp() / "no-such-dir" / "x.f32").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "x.f32: cannot create");
  EXPECT_EQ(r.out.find("loaded"), std::string::npos) << "refused before loading:\n" << r.out;
}

// Teacher forcing refuses logits that are not numbers (a NaN weight), as
// generation does, and writes nothing.
TEST(Cli, LogitsOutRefusesNaNLogits) {
  if (env("UNICORN_TINY_ENGINE").empty()) GTEST_SKIP() << "the tiny engine binary is not built";
  const fs::path clean = tmp() / "tiny-nan-logits.gguf", bad = tmp() / "tiny-nan-logits-bad.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + clean.string()).code, 0);
  fs::copy_file(clean, bad, fs::copy_options::overwrite_existing);
  {
    const auto g = unicorn::io::GgufFile::open(clean);
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(g.find_tensor("output_norm.weight")->offset));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int i = 0; i < 4; ++i) f.write(reinterpret_cast<const char*>(&nan), 4);
  }
  const fs::path out = tmp() / "nan.f32";
  const Result r = run(env("UNICORN_TINY_ENGINE") + " --model " + bad.string() + " --tokens 2,17 --logits-out " + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "the logits at position 0");
  EXPECT_CONTAINS(r.out, "are NaN");
  EXPECT_FALSE(fs::exists(out));
  const Result ok = run(env("UNICORN_TINY_ENGINE") + " --model " + clean.string() + " --tokens 2,17 --logits-out " + out.string());
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_TRUE(fs::exists(out));
}

// A model larger than the device memory it may use is refused at start-up,
// before anything is loaded, with the bytes needed and available per pool
// (--max-device-memory lowers what the device offers; nothing is exhausted).
TEST(Cli, ModelLargerThanDeviceMemoryIsRefusedAtStartUp) {
  const Result r = run(gen() + " --max-device-memory 16M -p hi");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "the placement does not fit");
  EXPECT_CONTAINS(r.out, "pool Vram needs");
  EXPECT_CONTAINS(r.out, "has 0.02 GiB (16777216 bytes) available");
  EXPECT_EQ(r.out.find("loaded"), std::string::npos) << "nothing is loaded first:\n" << r.out;
  const Result enough = run(gen() + " --max-device-memory 4G -p hi -n 2 --temp 0");
  EXPECT_EQ(enough.code, 0) << enough.out;
}

// --check-tensors: a NaN planted in an F32 norm and an Inf in a Q8_0 block's
// scale are found on the GPU, named with their tensor and first bad element.
TEST(Cli, CheckTensorsNamesThePlantedNaN) {
  if (env("UNICORN_TINY_ENGINE").empty()) GTEST_SKIP() << "the tiny engine binary is not built";
  const fs::path clean = tmp() / "tiny-check.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + clean.string()).code, 0);
  const std::string engine = env("UNICORN_TINY_ENGINE") + " --check-tensors --tokens 2,3 --model ";
  const Result ok = run(engine + clean.string());
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_CONTAINS(ok.out, "hold no NaN or Inf");

  const auto g = unicorn::io::GgufFile::open(clean);
  const auto plant = [&](const std::string& tensor, uint64_t byte, const void* value, size_t n) {
    const fs::path bad = tmp() / ("tiny-" + tensor + ".gguf");
    fs::copy_file(clean, bad, fs::copy_options::overwrite_existing);
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(g.find_tensor(tensor)->offset + byte));
    f.write(static_cast<const char*>(value), std::streamsize(n));
    return bad;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Result r1 = run(engine + plant("blk.0.attn_norm.weight", 5 * 4, &nan, 4).string());
  EXPECT_EQ(r1.code, 1) << r1.out;
  EXPECT_CONTAINS(r1.out, "check-tensors: tensor 'blk.0.attn_norm.weight' (F32) holds NaN at element 5 (row 0, column 5)");
  const uint16_t inf16 = 0x7c00;  // Q8_0 blocks are {f16 scale, 32 int8}: block 3's scale
  const Result r2 = run(engine + plant("blk.1.ffn_down.weight", 3 * 34, &inf16, 2).string());
  EXPECT_EQ(r2.code, 1) << r2.out;
  EXPECT_CONTAINS(r2.out, "tensor 'blk.1.ffn_down.weight' (Q8_0) holds Inf at element 96 (row 0, column 96)");
}

#ifdef UNICORN_FAULT_INJECTION
// Builds with the test-only fault hook (CMake UNICORN_FAULT_INJECTION, the
// sanitizer step of .ci/run): a device lost or out of memory in the middle of
// an answer is reported with the pass that was running, and the generator
// exits 1; nothing hangs.
TEST(CliFault, DeviceLostMidAnswerNamesTheStep) {
  const Result r = run("UNICORN_INJECT_FAULT=device-lost@3 " + gen() + " -p 'Once upon a time' -n 20 --temp 0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "Once upon a time");  // the prompt, and what came before the fault, were printed
  EXPECT_CONTAINS(r.out, "decode step 2 of 20 at position");
  EXPECT_CONTAINS(r.out, "the device was lost (VK_ERROR_DEVICE_LOST)");
  EXPECT_EQ(r.out.find("\ngeneration "), std::string::npos) << "no timings line after a fault:\n" << r.out;
}

TEST(CliFault, OutOfDeviceMemoryInThePromptNamesThePrefill) {
  const Result r = run("UNICORN_INJECT_FAULT=out-of-memory@1 " + gen() + " -p 'Once upon a time' -n 20 --temp 0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "prompt tokens at position 0: gpu: ");
  EXPECT_CONTAINS(r.out, "prefill of ");
  EXPECT_CONTAINS(r.out, "out of device memory (VK_ERROR_OUT_OF_DEVICE_MEMORY)");
}
#endif
