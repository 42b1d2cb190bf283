// Label cli: the generator binaries run as a person would run them — each
// case checks the exit code and the message a user reads. Here unicorn-generate
// and unicorn-server: flags, models and files, the engine a file picks.
#include "cli_util.hpp"
#include <functional>

using namespace cli_test;

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
// `context`: the context the layout names for a model.
void expect_runs_every_official_file(const std::string& binary,
                                     const std::function<std::string(const unicorn::ModelDims&)>& context) {
  for (const OfficialFile& c : official_files()) {
    const fs::path f = tmp() / (std::string(c.model.name) + "-" + c.scheme + ".gguf");
    write_sparse_gguf(f, c.model, file_scheme(c.scheme));
    const Result r = run(binary + " --model " + f.string() + " --layout");
    EXPECT_EQ(r.code, 0) << f << "\n" << r.out;
    EXPECT_CONTAINS(r.out, "model " + std::string(c.model.name) + ": hidden");
    EXPECT_CONTAINS(r.out, c.layout);
    EXPECT_CONTAINS(r.out, context(c.model));
    fs::remove(f);
  }
}

// unicorn-generate runs every official size in the formats people download,
// each compiled for the model's whole context, 32K of it by default.
TEST(Cli, GenerateRunsEveryOfficialFile) {
  expect_runs_every_official_file(gen(), [](const unicorn::ModelDims& m) {
    const std::string whole = "context " + std::to_string(m.max_context);
    return m.max_context > 32768 ? whole + " (32768 by default), prefill chunk" : whole + ", prefill chunk";
  });
}

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
// up to 64 slots of 8K tokens; the demo model's engine, first, serves with no --model.
TEST(Cli, ServerServesEveryOfficialFile) {
  const std::string server = env("UNICORN_SERVER");
  expect_runs_every_official_file(server, [](const unicorn::ModelDims&) { return std::string("context 8192"); });
  const Result engines = run(server + " --engines");
  EXPECT_EQ(engines.code, 0) << engines.out;
  EXPECT_CONTAINS(engines.out, "gemma3-demo, embedding Q4_0, attention F16, ffn F16, context 1024, 8 streams\n"
                               "gemma3-270m, Q4_0_QAT (embedding F16, attention Q4_0, ffn Q4_0), context 8192, 64 streams\n");
  EXPECT_CONTAINS(engines.out, "gemma3-27b, BF16 (embedding BF16, attention BF16, ffn BF16), context 8192, 64 streams");
  // And the 6 speculative pairs (--draft), which a file without --draft never picks.
  EXPECT_EQ(std::count(engines.out.begin(), engines.out.end(), '\n'), 116 + 6) << engines.out;
  const Result demo = run(server + " --layout");
  EXPECT_EQ(demo.code, 0) << demo.out;
  EXPECT_CONTAINS(demo.out, "model gemma3-demo: hidden");
  // Slots and context are the picked engine's limits: lowered, never raised.
  const fs::path f = tmp() / "gemma3-4b-Q4_K_M.gguf";
  write_sparse_gguf(f, unicorn::kGemma3_4B, unicorn::schemes::kQ4_K_M);
  EXPECT_EQ(run(server + " --model " + f.string() + " --parallel 4 -c 8192 --layout").code, 0);
  const Result slots = run(server + " --model " + f.string() + " --parallel 65 --layout");
  EXPECT_EQ(slots.code, 2) << slots.out;
  EXPECT_CONTAINS(slots.out, "--parallel: 65: the engine that serves this file is compiled for 64 slots");
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
  EXPECT_CONTAINS(pair.out, "context 8192, 64 streams; drafted by gemma3-1b,");
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
