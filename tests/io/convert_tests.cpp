// unicorn-convert's output as llama.cpp reads it: every key llama.cpp's gemma3
// loader requires, with the type it demands; the vocabulary, special ids and
// chat template taken from a Hugging Face directory's tokenizer files (or a
// dummy vocabulary of the model's size); the Gemma 3 tokenizer carried by
// random-weight files of Gemma 3's vocabulary size; bad tokenizer files
// refused with a message naming them.
//
// Environment (set by ctest): UNICORN_CONVERT (the binary), UNICORN_TINY_HF
// (tests/model/fixtures/tiny), UNICORN_TINY_TOKENIZER (a 512-token
// tokenizer.json in Gemma's shape), UNICORN_GEMMA3_TOKENIZER_JSON (npm's Gemma 3
// tokenizer.json, beside its tokenizer_config.json; its tests are skipped where
// the build has no npm), UNICORN_DEMO_GGUF (models/gemma3-demo.gguf),
// UNICORN_LLAMA_QUANTIZE_TYPES (tests/io/data/llama_quantize_types.txt:
// llama-quantize's layout of each file type, from its --dry-run).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "gguf_metadata.hpp"
#include "io_test_util.hpp"
#include "unicorn/config/dims.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/model/from_gguf.hpp"
#include "unicorn/text/load_tokenizer.hpp"

namespace {

namespace fs = std::filesystem;
using unicorn::io::GgufFile;
using unicorn::io::GgufType;
using unicorn::io::test::TempDir;
using unicorn::text::Tokenizer;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) throw std::runtime_error(std::string(name) + " is not set (run through ctest)");
  return v;
}

struct ConvertRun {
  int code;
  std::string out;
};

// Runs `args` through unicorn-convert, stdout and stderr together.
ConvertRun convert(const std::string& args) {
  const std::string cmd = env("UNICORN_CONVERT") + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  std::array<char, 4096> buf;
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

// The keys llama.cpp's gemma3 loader reads and the type it demands of each
// (GGUFMeta's get_kv throws "key ... has wrong type" for any other). Listed from
// llama.cpp as node-llama-cpp 3.22.1 bundles it (release v0.5.0, commit
// de3ff815ea7d559ee917f063901b8986f038abc6, 2026-09-28), cross-checked with
// ggml-org/llama.cpp 00395eb285c7 src/llama-arch.cpp for the key names:
//   src/llama-model-loader.cpp   general.architecture (the arch; unknown = refused)
//   src/llama-model.cpp          load_hparams: context_length, embedding_length,
//                                block_count required; feed_forward_length,
//                                attention.head_count (else no tensor shapes),
//                                head_count_kv, key/value_length, rope.freq_base
//   src/models/gemma3.cpp        attention.layer_norm_rms_epsilon required;
//                                sliding_window, rope.freq_base_swa
//   src/llama-vocab.cpp          impl::load: tokenizer.ggml.model and .tokens
//                                required; scores (float32 or int32) and
//                                token_type (int32) at least one per token;
//                                special ids (below the token count), add_*
//                                flags, add_space_prefix
// `required`: llama.cpp refuses a file without it. The others it reads when
// present, with defaults that do not fit every Gemma 3, and llama.cpp's own
// converter writes all of them; so do we.
struct Key {
  const char* name;
  GgufType type;
  GgufType element = GgufType::UInt8;  // for arrays
  bool required = false;
};
const std::vector<Key> kLlamaCppKeys = {
    {"general.architecture", GgufType::String, {}, true},
    {"general.name", GgufType::String},
    {"general.type", GgufType::String},
    {"general.size_label", GgufType::String},
    {"general.file_type", GgufType::UInt32},
    {"general.quantization_version", GgufType::UInt32},
    {"gemma3.context_length", GgufType::UInt32, {}, true},
    {"gemma3.embedding_length", GgufType::UInt32, {}, true},
    {"gemma3.block_count", GgufType::UInt32, {}, true},
    {"gemma3.feed_forward_length", GgufType::UInt32, {}, true},
    {"gemma3.attention.head_count", GgufType::UInt32, {}, true},
    {"gemma3.attention.layer_norm_rms_epsilon", GgufType::Float32, {}, true},
    {"gemma3.attention.head_count_kv", GgufType::UInt32},
    {"gemma3.attention.key_length", GgufType::UInt32},
    {"gemma3.attention.value_length", GgufType::UInt32},
    {"gemma3.attention.sliding_window", GgufType::UInt32},
    {"gemma3.rope.freq_base", GgufType::Float32},
    {"gemma3.rope.freq_base_swa", GgufType::Float32},
    {"tokenizer.ggml.model", GgufType::String, {}, true},
    {"tokenizer.ggml.tokens", GgufType::Array, GgufType::String, true},
    {"tokenizer.ggml.scores", GgufType::Array, GgufType::Float32},
    {"tokenizer.ggml.token_type", GgufType::Array, GgufType::Int32},
    {"tokenizer.ggml.pre", GgufType::String},
    {"tokenizer.ggml.bos_token_id", GgufType::UInt32},
    {"tokenizer.ggml.eos_token_id", GgufType::UInt32},
    {"tokenizer.ggml.unknown_token_id", GgufType::UInt32},
    {"tokenizer.ggml.padding_token_id", GgufType::UInt32},
    {"tokenizer.ggml.add_bos_token", GgufType::Bool},
    {"tokenizer.ggml.add_eos_token", GgufType::Bool},
    {"tokenizer.ggml.add_space_prefix", GgufType::Bool},
};

// Every key of kLlamaCppKeys with its type (only the required ones, where the
// file was written again from another GGUF whose other keys it keeps), a
// vocabulary llama.cpp accepts (tokens unique, one score and type per token,
// special ids inside it, one token per embedding row), and the values
// llama.cpp's gemma3 needs.
enum class Keys { kAll, kRequired };
void expect_llama_cpp_loads(const fs::path& file, Keys keys = Keys::kAll) {
  SCOPED_TRACE(file.string());
  const GgufFile g = GgufFile::open(file);
  for (const Key& k : kLlamaCppKeys) {
    const auto* v = g.find(k.name);
    if (!v) {
      if (k.required || keys == Keys::kAll)
        ADD_FAILURE() << k.name << " is missing" << (k.required ? " (llama.cpp refuses the file)" : "");
      continue;
    }
    EXPECT_EQ(v->type(), k.type) << k.name << " is " << v->type_description();
    if (k.type == GgufType::Array && v->array())
      EXPECT_EQ(v->array()->elem_type(), k.element) << k.name << " is " << v->type_description();
  }
  EXPECT_EQ(g.get_string("general.architecture"), "gemma3");
  EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g.find("tokenizer.ggml.add_space_prefix")->get_if<bool>() != nullptr &&
                *g.find("tokenizer.ggml.add_space_prefix")->get_if<bool>(),
            false) << "Gemma's SentencePiece adds no space prefix";
  const auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), tokens.size())
      << "llama.cpp indexes tokens by text and aborts on a repeated one";
  EXPECT_EQ(g.try_f32_array("tokenizer.ggml.scores")->size(), tokens.size());
  EXPECT_EQ(g.try_i32_array("tokenizer.ggml.token_type")->size(), tokens.size());
  for (const char* id : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                         "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"})
    if (g.find(id)) EXPECT_LT(g.get_u32(id), tokens.size()) << id;
  const auto* embd = g.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dims.at(1), tokens.size()) << "one token per embedding row";
  EXPECT_EQ(g.get_u32("gemma3.embedding_length"), embd->dims.at(0));
}

std::vector<std::string> sample_texts() {
  return {"Hello world", "The quick brown fox jumps over the lazy dog.", "  two  spaces\tand a tab\n\nnew lines",
          "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n", "Ünïcödé — “quotes” 🙂 日本語",
          "int main() { return 0; }", ""};
}

// The GGUF's vocabulary tokenizes every sample as the tokenizer.json does.
void expect_same_tokens(const fs::path& gguf, const fs::path& tokenizer_json) {
  const Tokenizer from_gguf = unicorn::text::load_tokenizer(gguf);
  const Tokenizer from_json = Tokenizer::from_tokenizer_json(tokenizer_json);
  for (const auto& t : sample_texts())
    EXPECT_EQ(from_gguf.encode(t), from_json.encode(t)) << "text: " << t;
}

// A Hugging Face directory: the tiny fixture's config and weights, the tiny
// tokenizer, and the tokenizer_config.json Gemma ships (chat template, special
// tokens, add_bos_token).
constexpr const char* kTemplate = "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m['role'] }}\n"
                                  "{{ m['content'] }}<end_of_turn>\n{% endfor %}";
fs::path make_hf_dir(const TempDir& tmp, const nlohmann::json& tokenizer_config) {
  const fs::path dir = tmp / "tiny-hf";
  fs::create_directories(dir);
  const fs::path tiny = env("UNICORN_TINY_HF");
  fs::copy_file(tiny / "config.json", dir / "config.json");
  fs::create_symlink(tiny / "model.safetensors", dir / "model.safetensors");
  fs::copy_file(env("UNICORN_TINY_TOKENIZER"), dir / "tokenizer.json");
  if (!tokenizer_config.is_null()) std::ofstream(dir / "tokenizer_config.json") << tokenizer_config.dump();
  return dir;
}

nlohmann::json gemma_like_config() {
  return {{"bos_token", "<bos>"}, {"eos_token", {{"content", "<end_of_turn>"}}}, {"pad_token", "<pad>"},
          {"unk_token", "<unk>"}, {"add_bos_token", true},  {"add_eos_token", false},
          {"chat_template", kTemplate}};
}

// Runs unicorn-convert `args` into `out`: it must succeed, say `said`, and
// write a file llama.cpp loads. Call it under ASSERT_NO_FATAL_FAILURE.
void expect_converted(const std::string& args, const fs::path& out, const std::string& said = "") {
  const ConvertRun r = convert(args + " --out " + q(out));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(said), std::string::npos) << r.out;
  expect_llama_cpp_loads(out);
}

TEST(Convert, RandomTinyCarriesADummyVocabularyLlamaCppLoads) {
  TempDir tmp;
  const fs::path out = tmp / "tiny.gguf";
  ASSERT_NO_FATAL_FAILURE(
      expect_converted("--random gemma3-tiny --type Q8_0", out, "a dummy vocabulary of 512 tokens"));
  const GgufFile g = GgufFile::open(out);
  const auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens.at(g.get_u32("tokenizer.ggml.bos_token_id")), "<bos>");
  EXPECT_EQ(tokens.at(g.get_u32("tokenizer.ggml.eos_token_id")), "<eos>");
  EXPECT_EQ(g.get_string("general.name"), "gemma3-tiny random weights");
  EXPECT_EQ(g.get_u32("gemma3.attention.sliding_window_pattern"), 3u) << "the tiny model: every 3rd layer global";
  // llama.cpp's SentencePiece falls back to <0xXX> tokens for any byte, and
  // throws if one is missing: all 256 are there.
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    EXPECT_NE(std::find(tokens.begin(), tokens.end(), hex), tokens.end()) << hex;
  }
  // The engine's tokenizer reads it, and any text survives the round trip.
  const Tokenizer t = unicorn::text::load_tokenizer(out);
  for (const auto& s : sample_texts()) EXPECT_EQ(t.decode(t.encode(s)), s);
  EXPECT_EQ(t.encode("<start_of_turn>").size(), 1u);
}

TEST(Convert, HfDirectoryCarriesItsTokenizerAndChatTemplate) {
  TempDir tmp;
  const fs::path dir = make_hf_dir(tmp, gemma_like_config());
  const fs::path out = tmp / "tiny-hf.gguf";
  ASSERT_NO_FATAL_FAILURE(expect_converted("--hf " + q(dir) + " --type Q8_0", out));
  const GgufFile g = GgufFile::open(out);
  EXPECT_EQ(g.get_string("general.name"), "tiny-hf");
  EXPECT_EQ(g.get_string("tokenizer.chat_template"), kTemplate);
  EXPECT_EQ(g.get_u32("tokenizer.ggml.bos_token_id"), 2u);
  EXPECT_EQ(g.get_u32("tokenizer.ggml.eos_token_id"), 5u) << "tokenizer_config.json's eos_token, <end_of_turn>";
  EXPECT_EQ(g.get_u32("tokenizer.ggml.padding_token_id"), 0u);
  EXPECT_EQ(g.get_u32("tokenizer.ggml.unknown_token_id"), 3u);
  EXPECT_TRUE(*g.find("tokenizer.ggml.add_bos_token")->get_if<bool>());
  EXPECT_FALSE(*g.find("tokenizer.ggml.add_eos_token")->get_if<bool>());
  // Token texts and types as llama.cpp's converter writes them.
  const Tokenizer json = Tokenizer::from_tokenizer_json(env("UNICORN_TINY_TOKENIZER"));
  const auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  const auto types = *g.try_i32_array("tokenizer.ggml.token_type");
  ASSERT_EQ(tokens.size(), json.vocab_size());
  for (int32_t id = 0; id < static_cast<int32_t>(tokens.size()); ++id) EXPECT_EQ(tokens[id], json.token_text(id));
  using T = unicorn::text::GgufTokenType;
  EXPECT_EQ(types[2], int32_t(T::kControl));    // <bos>
  EXPECT_EQ(types[4], int32_t(T::kControl));    // <start_of_turn>
  EXPECT_EQ(types[6], int32_t(T::kByte));       // <0x00>
  EXPECT_EQ(types[262], int32_t(T::kNormal));   // "▁"
  expect_same_tokens(out, env("UNICORN_TINY_TOKENIZER"));
}

TEST(Convert, ChatTemplateFromJinjaJsonOrAList) {
  TempDir tmp;
  nlohmann::json config = gemma_like_config();
  config.erase("chat_template");
  const fs::path dir = make_hf_dir(tmp, config);
  const fs::path out = tmp / "t.gguf";
  // chat_template.json alone.
  std::ofstream(dir / "chat_template.json") << nlohmann::json{{"chat_template", "from json"}}.dump();
  ASSERT_EQ(convert("--hf " + q(dir) + " --out " + q(out)).code, 0);
  EXPECT_EQ(GgufFile::open(out).get_string("tokenizer.chat_template"), "from json");
  // chat_template.jinja wins over it, as in gguf-py.
  std::ofstream(dir / "chat_template.jinja") << "from jinja\n";
  ASSERT_EQ(convert("--hf " + q(dir) + " --out " + q(out)).code, 0);
  EXPECT_EQ(GgufFile::open(out).get_string("tokenizer.chat_template"), "from jinja\n");
  // tokenizer_config.json's own wins over both; a list names further templates.
  config["chat_template"] = {{{"name", "default"}, {"template", "the default"}},
                             {{"name", "tool use"}, {"template", "with tools"}}};
  std::ofstream(dir / "tokenizer_config.json") << config.dump();
  ASSERT_EQ(convert("--hf " + q(dir) + " --out " + q(out)).code, 0);
  const GgufFile g = GgufFile::open(out);
  EXPECT_EQ(g.get_string("tokenizer.chat_template"), "the default");
  EXPECT_EQ(g.get_string("tokenizer.chat_template.tool_use"), "with tools");
  EXPECT_EQ(g.get_string_array("tokenizer.chat_templates"), std::vector<std::string>{"tool_use"});
}

TEST(Convert, HfDirectoryWithoutTokenizerFilesFallsBack) {
  // The golden fixture has no tokenizer files: special ids come from
  // config.json, and the vocabulary is a dummy one of its 512 tokens.
  TempDir tmp;
  const fs::path out = tmp / "tiny.gguf";
  ASSERT_NO_FATAL_FAILURE(
      expect_converted("--hf " + q(env("UNICORN_TINY_HF")) + " --type F32", out, "no tokenizer.json in"));
  // --tokenizer names one.
  const ConvertRun named = convert("--hf " + q(env("UNICORN_TINY_HF")) + " --tokenizer " + q(env("UNICORN_TINY_TOKENIZER")) +
                            " --out " + q(out));
  ASSERT_EQ(named.code, 0) << named.out;
  expect_same_tokens(out, env("UNICORN_TINY_TOKENIZER"));
}

TEST(Convert, SaysWhenTheCheckpointsQueryScaleIsNotTheFilesOne) {
  // llama.cpp's gemma3 loader has no key for query_pre_attn_scalar: it takes
  // head_dim (hidden / heads for the 27B). The tiny fixtures' 24 against their
  // head_dim 32 moved llama.cpp's logits by 0.1 of their scale
  // (notes/vision_llamacpp.md); the converter says so.
  TempDir tmp;
  const fs::path dir = make_hf_dir(tmp, nullptr);
  const ConvertRun tiny = convert("--hf " + q(dir) + " --type F32 --out " + q(tmp / "a.gguf"));
  ASSERT_EQ(tiny.code, 0) << tiny.out;
  EXPECT_NE(tiny.out.find("query_pre_attn_scalar is 24"), std::string::npos) << tiny.out;
  EXPECT_NE(tiny.out.find("by 1/sqrt(32) instead"), std::string::npos) << tiny.out;
  // A checkpoint whose scale is head_dim's, as every official size has: no note.
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["query_pre_attn_scalar"] = 32;
  fs::remove(dir / "config.json");
  std::ofstream(dir / "config.json") << config.dump();
  const ConvertRun same = convert("--hf " + q(dir) + " --type F32 --out " + q(tmp / "b.gguf"));
  ASSERT_EQ(same.code, 0) << same.out;
  EXPECT_EQ(same.out.find("query_pre_attn_scalar"), std::string::npos) << same.out;
}
constexpr bool implies_its_own_query_scale(const unicorn::ModelDims& d) {
  return unicorn::gguf_query_pre_attn_scalar(d) == d.query_pre_attn_scalar;
}
static_assert(implies_its_own_query_scale(unicorn::kGemma3_270M) && implies_its_own_query_scale(unicorn::kGemma3_1B) &&
                  implies_its_own_query_scale(unicorn::kGemma3_4B) &&
                  implies_its_own_query_scale(unicorn::kGemma3_12B) &&
                  implies_its_own_query_scale(unicorn::kGemma3_27B),
              "every official Gemma 3 size has the query scale a GGUF file implies");

TEST(Convert, GgufKeepsItsVocabulary) {
  TempDir tmp;
  const fs::path in = tmp / "in.gguf", out = tmp / "out.gguf";
  ASSERT_EQ(convert("--hf " + q(env("UNICORN_TINY_HF")) + " --tokenizer " + q(env("UNICORN_TINY_TOKENIZER")) +
                    " --type F32 --out " + q(in)).code, 0);
  const ConvertRun r = convert("--gguf " + q(in) + " --type Q8_0 --out " + q(out));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("vocabulary:"), std::string::npos) << "the file's own vocabulary is kept: " << r.out;
  expect_llama_cpp_loads(out);
  EXPECT_EQ(GgufFile::open(out).get_u32("general.file_type"), 7u) << "Q8_0";
  expect_same_tokens(out, env("UNICORN_TINY_TOKENIZER"));
}

TEST(Convert, BadTokenizerFilesAreRefusedByName) {
  TempDir tmp;
  const fs::path dir = make_hf_dir(tmp, gemma_like_config());
  const fs::path out = tmp / "out.gguf";
  unicorn::io::test::write_file(out, "left alone");
  const auto expect_refused = [&](const std::string& what) {
    const ConvertRun r = convert("--hf " + q(dir) + " --out " + q(out));
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find(what), std::string::npos) << r.out;
    EXPECT_EQ(unicorn::io::test::read_file(out), unicorn::io::test::to_bytes("left alone"));
  };
  std::ofstream(dir / "tokenizer_config.json") << "{\"bos_token\": ";
  expect_refused((dir / "tokenizer_config.json").string() + ": not valid JSON");
  std::ofstream(dir / "tokenizer_config.json") << nlohmann::json{{"chat_template", 7}}.dump();
  expect_refused("chat_template is number");
  fs::remove(dir / "tokenizer_config.json");
  nlohmann::json t = nlohmann::json::parse(std::ifstream(env("UNICORN_TINY_TOKENIZER")));
  t["model"]["vocab"]["far"] = 600;
  std::ofstream(dir / "tokenizer.json") << t.dump();
  expect_refused("token 'far' has id 600 but the model's vocabulary has 512 tokens");
  t["model"]["vocab"].erase("far");
  t["model"]["vocab"]["<bos>"] = 7;  // a second token text at id 7
  std::ofstream(dir / "tokenizer.json") << t.dump();
  expect_refused("are both '<bos>'");
  t["model"].erase("merges");
  std::ofstream(dir / "tokenizer.json") << t.dump();
  expect_refused("model.merges is missing");
  std::ofstream(dir / "tokenizer.json") << "[]";
  expect_refused("not a tokenizer.json");
}

// Gemma 3's real tokenizer (npm) in a random-weight file of its vocabulary size.
class Gemma3Tokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("UNICORN_GEMMA3_TOKENIZER_JSON");
    if (!path || !fs::is_regular_file(path)) GTEST_SKIP() << "no Gemma 3 tokenizer.json (npm) in this build";
    tokenizer_json_ = path;
  }
  fs::path tokenizer_json_;
};

TEST_F(Gemma3Tokenizer, RandomDemoCarriesIt) {
  TempDir tmp;
  const fs::path out = tmp / "demo.gguf";
  ASSERT_NO_FATAL_FAILURE(expect_converted("--random gemma3-demo --type Q4_0", out, tokenizer_json_.string()));
  const GgufFile g = GgufFile::open(out);
  const auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 262144u) << "Gemma 3's <image_soft_token> (262144) has no embedding row";
  EXPECT_EQ(tokens[2], "<bos>");
  EXPECT_EQ(tokens[105], "<start_of_turn>");
  EXPECT_EQ(g.get_u32("tokenizer.ggml.bos_token_id"), 2u);
  const auto config = nlohmann::json::parse(std::ifstream(tokenizer_json_.parent_path() / "tokenizer_config.json"));
  EXPECT_EQ(g.get_string("tokenizer.chat_template"), config["chat_template"].get<std::string>());
  EXPECT_TRUE(*g.find("tokenizer.ggml.add_bos_token")->get_if<bool>());
  expect_same_tokens(out, tokenizer_json_);
  // The demo model's file carries no vocabulary; written again with --tokenizer, it gains this one.
  const ConvertRun demo = convert("--gguf " + q(env("UNICORN_DEMO_GGUF")) + " --tokenizer " + q(tokenizer_json_) +
                                  " --type Q8_0 --out " + q(tmp / "demo-q8_0.gguf"));
  ASSERT_EQ(demo.code, 0) << demo.out;
  expect_llama_cpp_loads(tmp / "demo-q8_0.gguf", Keys::kRequired);
  EXPECT_EQ(GgufFile::open(tmp / "demo-q8_0.gguf").get_string_array("tokenizer.ggml.tokens"), tokens);
  // Too big for the tiny model: refused, not cut.
  const ConvertRun tiny = convert("--random gemma3-tiny --tokenizer " + q(tokenizer_json_) + " --out " + q(tmp / "t.gguf"));
  EXPECT_EQ(tiny.code, 1);
  EXPECT_NE(tiny.out.find("this tokenizer is not the model's"), std::string::npos) << tiny.out;
}

TEST(ConvertMetadata, SizeLabelsAsGgufPy) {
  using unicorn::tools::size_label;
  EXPECT_EQ(size_label(268'098'176), "268M");
  EXPECT_EQ(size_label(999'885'952), "1000M");
  EXPECT_EQ(size_label(3'880'079'360), "3.9B");
  EXPECT_EQ(size_label(27'009'002'240), "27B");
  EXPECT_EQ(size_label(103'776), "104K");
  EXPECT_EQ(size_label(5'100), "5.1K");
}

}  // namespace

namespace {

// One line of llama_quantize_types.txt: "4b Q4_K_S: token_embd=q6_K, attn_q=q4_K, ...,
// attn_v=q4_K except q5_K@[0, 1, 2, 3], ...", as each layer's type per matrix kind.
struct DryRun {
  std::string size, type;
  std::map<std::string, std::vector<std::string>> layers;  // kind -> type per layer; token_embd: one
};
std::optional<DryRun> parse_dry_run(const std::string& line, uint32_t layers) {
  static const std::regex head(R"(^(\S+) (\S+): (.*)$)");
  std::smatch m;
  if (line.empty() || line[0] == '#' || !std::regex_match(line, m, head)) return std::nullopt;
  DryRun d{m[1], m[2], {}};
  std::string rest = m[3];
  static const std::regex kind(R"((\w+)=(\w+)(?: except ([^,]*(?:, \d+)*\]))?(?:, |$))");
  for (std::sregex_iterator it(rest.begin(), rest.end(), kind), end; it != end; ++it) {
    const std::string name = (*it)[1], common = (*it)[2], except = (*it)[3];
    std::vector<std::string> types(name == "token_embd" ? 1 : layers, common);
    static const std::regex part(R"((\w+)@\[([\d, ]*)\])");
    for (std::sregex_iterator p(except.begin(), except.end(), part); p != end; ++p) {
      std::istringstream list{std::string((*p)[2])};
      for (std::string n; std::getline(list, n, ',');) types.at(std::stoul(n)) = (*p)[1];
    }
    d.layers[name] = types;
  }
  return d;
}

std::string lower_name(unicorn::Format f) {
  std::string s(unicorn::format_name(f));
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  // llama-quantize prints the K-quants as q4_K
  if (s.size() == 4 && s[3] == 'k') s[3] = 'K';
  return s;
}

}  // namespace

// unicorn-convert --type writes llama-quantize's file types as llama-quantize
// lays them out (quant/scheme.hpp's kLlamaFileTypes): every matrix of every
// official size in the format llama-quantize --dry-run gives it (the table in
// tests/io/data, made by tools/llama_quantize_types.py). The file types
// without an engine here are listed, not checked.
TEST(Convert, FileTypesAreLaidOutAsLlamaQuantizeDoes) {
  using namespace unicorn;
  const char* path = std::getenv("UNICORN_LLAMA_QUANTIZE_TYPES");
  ASSERT_TRUE(path) << "UNICORN_LLAMA_QUANTIZE_TYPES is not set (run through ctest)";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const std::pair<std::string, const ModelDims*> sizes[] = {
      {"270m", &kGemma3_270M}, {"1b", &kGemma3_1B}, {"4b", &kGemma3_4B}, {"12b", &kGemma3_12B}, {"27b", &kGemma3_27B}};
  const std::pair<std::string, WeightKind> kinds[] = {
      {"attn_q", WeightKind::AttnQ},       {"attn_k", WeightKind::AttnK},     {"attn_v", WeightKind::AttnV},
      {"attn_output", WeightKind::AttnOut}, {"ffn_gate", WeightKind::FfnGate}, {"ffn_up", WeightKind::FfnUp},
      {"ffn_down", WeightKind::FfnDown}};
  std::set<std::string> checked, others;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::string size = line.substr(0, line.find(' '));
    const ModelDims* m = nullptr;
    for (const auto& [name, dims] : sizes)
      if (name == size) m = dims;
    ASSERT_TRUE(m) << line;
    const auto d = parse_dry_run(line, m->layers);
    ASSERT_TRUE(d) << line;
    const LlamaFileType* t = nullptr;
    for (const LlamaFileType& f : kLlamaFileTypes)
      if (f.name == d->type && !f.imatrix) t = &f;
    if (!t) {
      others.insert(d->type);
      continue;
    }
    checked.insert(size + " " + d->type);
    ASSERT_EQ(d->layers.size(), 8u) << line;
    EXPECT_EQ(lower_name(format_of(t->scheme, WeightKind::Embedding, -1, mix_shape(*m), m->hidden)),
              d->layers.at("token_embd")[0]) << size << " " << d->type << " token_embd";
    for (const auto& [name, kind] : kinds) {
      const uint64_t cols = kind == WeightKind::AttnOut ? m->q_dim() : kind == WeightKind::FfnDown ? m->ffn : m->hidden;
      for (uint32_t l = 0; l < m->layers; ++l)
        EXPECT_EQ(lower_name(format_of(t->scheme, kind, int(l), mix_shape(*m), cols)), d->layers.at(name).at(l))
            << size << " " << d->type << " blk." << l << "." << name;
    }
  }
  // Every file type but F32 (llama-quantize does not write it) and the
  // --imatrix layouts (below) at every size.
  const auto imatrix = std::count_if(std::begin(kLlamaFileTypes), std::end(kLlamaFileTypes),
                                     [](const LlamaFileType& t) { return t.imatrix; });
  EXPECT_EQ(checked.size(), 5 * (std::size(kLlamaFileTypes) - 1 - imatrix));
  std::string rest;
  for (const std::string& o : others) rest += " " + o;
  std::printf("[ types ] %zu size x type pairs laid out as llama-quantize does; without an engine here:%s\n",
              checked.size(), rest.c_str());
}

// llama-quantize --imatrix gives Q4_0's and Q5_0's first eighth of ffn_down
// layers Q4_1 / Q5_1 (src/llama-quant.cpp; a dry run cannot show it without an
// importance matrix): the 27B's layers 0-6, the 4B's 0-3, the 1B's 0-2; every
// other matrix as without (Q6_K embedding; Q8_0 for the 1B's rows).
TEST(Convert, ImatrixLayoutsOfQ4_0AndQ5_0) {
  using namespace unicorn;
  const std::pair<const ModelDims*, uint32_t> sizes[] = {{&kGemma3_27B, 7}, {&kGemma3_4B, 4}, {&kGemma3_1B, 3}};
  for (const auto& [m, first] : sizes)
    for (const auto& [s, plain, more] : {std::tuple{schemes::kQ4_0_IMatrix, Format::Q4_0, Format::Q4_1},
                                         std::tuple{schemes::kQ5_0_IMatrix, Format::Q5_0, Format::Q5_1}}) {
      for (uint32_t l = 0; l < m->layers; ++l) {
        EXPECT_EQ(format_of(s, WeightKind::FfnDown, int(l), mix_shape(*m), m->ffn), l < first ? more : plain)
            << m->name << " layer " << l;
        EXPECT_EQ(format_of(s, WeightKind::AttnV, int(l), mix_shape(*m), m->hidden), plain) << m->name << " layer " << l;
      }
      EXPECT_EQ(format_of(s, WeightKind::Embedding, -1, mix_shape(*m), m->hidden),
                m->hidden % 256 ? Format::Q8_0 : Format::Q6_K);
    }
}

// With --imatrix, llama-quantize keeps IQ4_NL's and IQ4_XS's first eighth of
// ffn_down in the IQ4 format (without one it writes Q5_K there); attn_v is
// Q5_K where 4 query heads share a KV head either way (the 1B: Q5_1, its
// rows' fallback), and the embedding Q6_K (Q8_0 for the 1B's rows).
TEST(Convert, ImatrixLayoutsOfIQ4_NLAndIQ4_XS) {
  using namespace unicorn;
  for (const ModelDims* m : {&kGemma3_27B, &kGemma3_4B, &kGemma3_1B})
    for (const auto& [s, plain] : {std::pair{schemes::kIQ4_NL_IMatrix, Format::IQ4_NL},
                                   std::pair{schemes::kIQ4_XS_IMatrix, Format::IQ4_XS}}) {
      for (uint32_t l = 0; l < m->layers; ++l) {
        EXPECT_EQ(format_of(s, WeightKind::FfnDown, int(l), mix_shape(*m), m->ffn), plain) << m->name << " layer " << l;
        EXPECT_EQ(format_of(s, WeightKind::AttnV, int(l), mix_shape(*m), m->hidden),
                  m == &kGemma3_1B ? Format::Q5_1 : k_quant_fallback(plain, m->hidden))
            << m->name << " layer " << l;
      }
      EXPECT_EQ(format_of(s, WeightKind::Embedding, -1, mix_shape(*m), m->hidden),
                m->hidden % 256 ? Format::Q8_0 : Format::Q6_K);
    }
}

