// Tokenizer tests: the C++ Gemma 3 tokenizer against the real one.
//
// The oracle (oracle/oracle.cjs, run by ctest as the fixture
// tokenizer_oracle) encodes a generated corpus of 2,000+ strings with the
// JavaScript Gemma 3 tokenizer and renders chats with the Jinja template;
// here every string must give identical ids and decode back exactly.
// Environment: UNICORN_GEMMA3_TOKENIZER_JSON (tokenizer.json),
// UNICORN_TOKENIZER_ORACLE_DIR (corpus.json, expected.json, chat.json).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "unicorn/generation/image_prompt.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/gguf_writer.hpp"
#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/load_tokenizer.hpp"
#include "unicorn/text/stream_decoder.hpp"
#include "unicorn/text/tokenizer.hpp"
#include "unicorn/text/utf8.hpp"

namespace {

using unicorn::text::ChatMessage;
using unicorn::text::StreamDecoder;
using unicorn::text::Tokenizer;
namespace fs = std::filesystem;

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  return nlohmann::json::parse(in);
}

std::string base64_decode(std::string_view in) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(kAlphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// Printable form of a test string for failure messages.
std::string escaped(std::string_view s, size_t limit = 120) {
  std::string out;
  for (const char c : s.substr(0, limit)) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else out.push_back(c);
  }
  if (s.size() > limit) out += "...";
  return out;
}

std::string ids_str(std::span<const int32_t> ids, size_t from, size_t count = 8) {
  std::string out;
  for (size_t i = from; i < ids.size() && i < from + count; ++i) out += std::to_string(ids[i]) + " ";
  return out;
}

// Loaded once: tokenizer.json takes about two seconds to parse.
class Gemma3 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string json = env_or_empty("UNICORN_GEMMA3_TOKENIZER_JSON");
    const std::string dir = env_or_empty("UNICORN_TOKENIZER_ORACLE_DIR");
    if (json.empty() || dir.empty()) return;
    tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_tokenizer_json(json));
    oracle_dir_ = dir;
    const auto corpus = read_json(oracle_dir_ / "corpus.json");
    for (const auto& s : corpus) corpus_.push_back(base64_decode(s.get<std::string>()));
    expected_ = read_json(oracle_dir_ / "expected.json");
  }
  static void TearDownTestSuite() { tokenizer_.reset(); }

  void SetUp() override {
    if (!tokenizer_)
      GTEST_SKIP() << "set UNICORN_GEMMA3_TOKENIZER_JSON and UNICORN_TOKENIZER_ORACLE_DIR (ctest does)";
  }

  static inline std::unique_ptr<Tokenizer> tokenizer_;
  static inline fs::path oracle_dir_;
  static inline std::vector<std::string> corpus_;
  static inline nlohmann::json expected_;
};

// Compares ids for every corpus string; prints a summary and the first diffs.
struct IdComparison {
  size_t strings = 0, tokens = 0, mismatches = 0;
  std::string first_diffs;

  void check(size_t index, std::string_view text, const std::vector<int32_t>& want,
             const std::vector<int32_t>& got) {
    ++strings;
    tokens += want.size();
    if (want == got) return;
    if (++mismatches > 5) return;
    size_t at = 0;
    while (at < want.size() && at < got.size() && want[at] == got[at]) ++at;
    first_diffs += "  #" + std::to_string(index) + " \"" + escaped(text) + "\"\n    at token " +
                   std::to_string(at) + ": want " + ids_str(want, at) + "\n    got " +
                   ids_str(got, at) + "\n";
  }
  std::string summary(std::string_view what) const {
    return std::string(what) + ": " + std::to_string(strings) + " strings, " + std::to_string(tokens) +
           " tokens compared, " + std::to_string(mismatches) + " mismatches";
  }
};

TEST_F(Gemma3, CorpusIdsMatchReferenceTokenizer) {
  ASSERT_GE(corpus_.size(), 2000u);
  IdComparison cmp, with_bos;
  for (size_t i = 0; i < corpus_.size(); ++i) {
    cmp.check(i, corpus_[i], expected_["ids"][i].get<std::vector<int32_t>>(), tokenizer_->encode(corpus_[i]));
    with_bos.check(i, corpus_[i], expected_["ids_bos"][i].get<std::vector<int32_t>>(),
                   tokenizer_->encode(corpus_[i], /*add_bos=*/true));
  }
  std::cout << "[ tokenizer ] " << cmp.summary("encode") << "\n";
  EXPECT_EQ(cmp.mismatches, 0u) << cmp.summary("encode") << "\n" << cmp.first_diffs;
  EXPECT_EQ(with_bos.mismatches, 0u) << with_bos.summary("encode(add_bos)") << "\n" << with_bos.first_diffs;
}

TEST_F(Gemma3, CorpusDecodesBackExactly) {
  size_t failures = 0;
  for (size_t i = 0; i < corpus_.size(); ++i) {
    const auto ids = tokenizer_->encode(corpus_[i]);
    // Invalid UTF-8 is defined to encode as its U+FFFD repair, so that is
    // what comes back; a literal "▁" is Gemma's space marker and comes back
    // as " " (from the reference too).
    const std::string want = unicorn::text::replace_all(unicorn::text::repair_utf8(corpus_[i]),
                                                                unicorn::text::kSpaceMarker, " ");
    const std::string got = tokenizer_->decode(ids);
    const std::string js = base64_decode(expected_["decoded"][i].get<std::string>());
    const std::string js_skip = base64_decode(expected_["decoded_skip"][i].get<std::string>());
    if (got != want || got != js || tokenizer_->decode(ids, /*skip_special=*/true) != js_skip) {
      if (++failures <= 5)
        ADD_FAILURE() << "#" << i << " \"" << escaped(corpus_[i]) << "\" decodes to \"" << escaped(got)
                      << "\" (reference \"" << escaped(js) << "\")";
    }
  }
  EXPECT_EQ(failures, 0u) << "of " << corpus_.size() << " strings";
}

TEST_F(Gemma3, DecodeOfArbitraryIdsMatchesReference) {
  // Random ids, mostly byte tokens: runs that are not valid UTF-8 must be
  // repaired exactly as the reference's TextDecoder does.
  size_t n = 0;
  for (const auto& c : expected_["decode_cases"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    const std::string want = base64_decode(c["text"].get<std::string>());
    EXPECT_EQ(tokenizer_->decode(ids), want) << "ids " << ids_str(ids, 0, 16);
    ++n;
  }
  EXPECT_GE(n, 100u);
}

TEST_F(Gemma3, StreamDecoderNeverSplitsACharacter) {
  auto check = [&](const std::vector<int32_t>& ids) {
    StreamDecoder stream(*tokenizer_);
    std::string all;
    for (const int32_t id : ids) {
      const std::string part = stream.feed(id);
      ASSERT_TRUE(unicorn::text::is_valid_utf8(part)) << "partial character in \"" << escaped(part) << "\"";
      all += part;
    }
    all += stream.flush();
    EXPECT_EQ(all, tokenizer_->decode(ids));
  };
  for (const auto& s : corpus_) check(tokenizer_->encode(s));
  for (const auto& c : expected_["decode_cases"]) check(c["ids"].get<std::vector<int32_t>>());

  // "€" is three byte tokens in no vocabulary order; nothing shows until the last.
  const int32_t e2 = tokenizer_->find_token("<0xE2>"), x82 = tokenizer_->find_token("<0x82>"),
                xac = tokenizer_->find_token("<0xAC>");
  StreamDecoder stream(*tokenizer_);
  EXPECT_EQ(stream.feed(e2), "");
  EXPECT_EQ(stream.feed(x82), "");
  EXPECT_TRUE(stream.has_pending());
  EXPECT_EQ(stream.feed(xac), "\xE2\x82\xAC");
  EXPECT_EQ(stream.flush(), "");
  // A truncated character at the end of a stream is one U+FFFD.
  EXPECT_EQ(stream.feed(e2), "");
  EXPECT_EQ(stream.flush(), "\xEF\xBF\xBD");
}

TEST_F(Gemma3, SpecialTokenIds) {
  EXPECT_EQ(tokenizer_->vocab_size(), 262145u);
  EXPECT_EQ(tokenizer_->pad_id(), 0);
  EXPECT_EQ(tokenizer_->eos_id(), 1);
  EXPECT_EQ(tokenizer_->bos_id(), 2);
  EXPECT_EQ(tokenizer_->unk_id(), 3);
  EXPECT_EQ(tokenizer_->find_token("<start_of_turn>"), 105);
  EXPECT_EQ(tokenizer_->end_of_turn_id(), 106);
  EXPECT_EQ(tokenizer_->find_token("no such token"), -1);
  EXPECT_EQ(tokenizer_->token_text(2), "<bos>");
  EXPECT_EQ(tokenizer_->token_bytes(tokenizer_->find_token("\xE2\x96\x81the")), " the");
  EXPECT_THROW((void)tokenizer_->token_text(262145), unicorn::Error);
  const std::vector<int32_t> bad{2, -1};
  EXPECT_THROW((void)tokenizer_->decode(bad), unicorn::Error);
}

// An image in a rendered prompt becomes what transformers' processor makes
// of it: "\n\n<start_of_image>", the soft tokens, "<end_of_image>\n\n",
// the newlines merged with the text's own by BPE.
TEST_F(Gemma3, ImagePromptsAreLaidOutAsTheProcessorLaysThem) {
  using unicorn::text::encode_image_prompt;
  const int32_t boi = tokenizer_->find_token("<start_of_image>"), eoi = tokenizer_->find_token("<end_of_image>");
  ASSERT_EQ(boi, 255999);
  ASSERT_EQ(eoi, 256000);
  const int32_t nl2 = tokenizer_->find_token("\n\n"), nl4 = tokenizer_->find_token("\n\n\n\n");
  const auto p = encode_image_prompt(*tokenizer_, "<bos>A<start_of_image>B\n\n<start_of_image>", 2, 4, -7);
  const std::vector<int32_t> a = tokenizer_->encode("A"), b = tokenizer_->encode("B");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  const std::vector<int32_t> want{2, a[0], nl2, boi, -7, -7, -7, -7, eoi, nl2, b[0], nl4, boi, -7, -7, -7, -7, eoi, nl2};
  EXPECT_EQ(p.ids, want);
  EXPECT_EQ(p.image_start, (std::vector<uint32_t>{4, 13}));
  EXPECT_THROW((void)encode_image_prompt(*tokenizer_, "<bos>A<start_of_image>", 2, 4, -7), unicorn::Error)
      << "two images for one marker";
  EXPECT_EQ(encode_image_prompt(*tokenizer_, "<bos>plain", 0, 256, -7).ids, tokenizer_->encode("<bos>plain"));
}

TEST_F(Gemma3, ChatTemplateMatchesJinja) {
  const auto chats = read_json(oracle_dir_ / "chat.json");
  ASSERT_GE(chats.size(), 20u);
  for (const auto& c : chats) {
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
    const bool gen = c["add_generation_prompt"];
    if (c.contains("error")) {
      EXPECT_THROW((void)unicorn::text::render_chat(messages, gen), unicorn::Error) << c.dump();
    } else {
      EXPECT_EQ(unicorn::text::render_chat(messages, gen), c["rendered"].get<std::string>()) << c.dump();
    }
  }
  // The rendered chat tokenizes with its markers as single ids.
  const std::vector<ChatMessage> chat{{"system", "Be brief."}, {"user", "Hi"}};
  const auto ids = tokenizer_->encode(unicorn::text::render_chat(chat, true));
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids[0], tokenizer_->bos_id());
  EXPECT_EQ(ids[1], 105);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 106), 1);
}

// The GGUF route, fed the vocabulary the way llama.cpp's converter writes it
// for Gemma 3: added tokens as control (special or <unused*>/<mask>) or
// user-defined with "▁" written as " ", byte tokens typed 6.
struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
};

GgufVocab gguf_style_vocab(const Tokenizer& t) {
  using unicorn::text::GgufTokenType;
  GgufVocab v;
  for (int32_t id = 0; id < static_cast<int32_t>(t.vocab_size()); ++id) {
    std::string text(t.token_text(id));
    GgufTokenType type = GgufTokenType::kNormal;
    if (id == t.unk_id()) type = GgufTokenType::kUnknown;
    else if (t.is_added(id) && (t.is_special(id) || text.starts_with("<unused") || text == "<mask>"))
      type = GgufTokenType::kControl;
    else if (t.is_added(id)) {
      type = GgufTokenType::kUserDefined;
      text = unicorn::text::replace_all(text, unicorn::text::kSpaceMarker, " ");
    } else if (unicorn::text::byte_token_value(text) >= 0) type = GgufTokenType::kByte;
    // SentencePiece BPE scores: earlier pieces merge first; user-defined and
    // control pieces score 0. (Real Gemma 3 GGUF scores cannot be fetched
    // here; these follow the SentencePiece trainer's convention.)
    const bool zero = type == GgufTokenType::kControl || type == GgufTokenType::kUserDefined;
    v.scores.push_back(zero ? 0.0f : -static_cast<float>(id));
    v.types.push_back(static_cast<int32_t>(type));
    v.tokens.push_back(std::move(text));
  }
  return v;
}

TEST_F(Gemma3, GgufVocabWithMergesMatchesReference) {
  GgufVocab v = gguf_style_vocab(*tokenizer_);
  std::vector<std::string> merges;
  const auto j = read_json(env_or_empty("UNICORN_GEMMA3_TOKENIZER_JSON"));
  for (const auto& m : j["model"]["merges"])
    merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  const Tokenizer g = Tokenizer::from_gguf_vocab(v.tokens, v.scores, v.types, std::move(merges));
  EXPECT_EQ(g.bos_id(), 2);
  EXPECT_EQ(g.end_of_turn_id(), 106);
  IdComparison cmp;
  for (size_t i = 0; i < corpus_.size(); ++i)
    cmp.check(i, corpus_[i], expected_["ids"][i].get<std::vector<int32_t>>(), g.encode(corpus_[i]));
  std::cout << "[ tokenizer ] " << cmp.summary("GGUF vocab + merges") << "\n";
  EXPECT_EQ(cmp.mismatches, 0u) << cmp.summary("GGUF vocab + merges") << "\n" << cmp.first_diffs;
}

TEST_F(Gemma3, GgufVocabWithScoresMatchesReference) {
  GgufVocab v = gguf_style_vocab(*tokenizer_);
  const Tokenizer g = Tokenizer::from_gguf_vocab(v.tokens, v.scores, v.types, {});
  IdComparison cmp;
  for (size_t i = 0; i < corpus_.size(); ++i)
    cmp.check(i, corpus_[i], expected_["ids"][i].get<std::vector<int32_t>>(), g.encode(corpus_[i]));
  std::cout << "[ tokenizer ] " << cmp.summary("GGUF vocab + scores (SentencePiece BPE)") << "\n";
  EXPECT_EQ(cmp.mismatches, 0u) << cmp.summary("GGUF vocab + scores") << "\n" << cmp.first_diffs;
}

TEST_F(Gemma3, GgufFileLoadsThroughLoadTokenizer) {
  // A GGUF holding only the vocabulary, as llama.cpp writes Gemma 3's; kept
  // in the oracle directory for the unicorn-tokenize check that follows.
  GgufVocab v = gguf_style_vocab(*tokenizer_);
  unicorn::io::GgufWriter w;
  w.set("general.architecture", "gemma3");
  w.set("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", v.tokens);
  w.set("tokenizer.ggml.scores", v.scores);
  w.set("tokenizer.ggml.token_type", v.types);
  const fs::path path = oracle_dir_ / "gemma3-vocab.gguf";
  w.write(path);
  const Tokenizer g = unicorn::text::load_tokenizer(path);
  EXPECT_EQ(g.vocab_size(), tokenizer_->vocab_size());
  IdComparison cmp;
  for (size_t i = 0; i < corpus_.size(); ++i)
    cmp.check(i, corpus_[i], expected_["ids"][i].get<std::vector<int32_t>>(), g.encode(corpus_[i]));
  EXPECT_EQ(cmp.mismatches, 0u) << cmp.summary("GGUF file") << "\n" << cmp.first_diffs;
  // tokenizer.json still loads through the same entry point.
  EXPECT_EQ(unicorn::text::load_tokenizer(env_or_empty("UNICORN_GEMMA3_TOKENIZER_JSON")).encode("Hello world"),
            (std::vector<int32_t>{9259, 1902}));
}

// Tests that need no data files.

TEST(Utf8, RepairFollowsTextDecoder) {
  using unicorn::text::repair_utf8;
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(repair_utf8("plain"), "plain");
  EXPECT_EQ(repair_utf8("\xC0\x80"), r + r);              // overlong: two maximal subparts
  EXPECT_EQ(repair_utf8("\xED\xA0\x80"), r + r + r);      // encoded surrogate
  EXPECT_EQ(repair_utf8("\xF0\x9F\x98"), r);              // truncated: one subpart
  EXPECT_EQ(repair_utf8("a\xE2\x28\xA1"), "a" + r + "(" + r);
  EXPECT_EQ(repair_utf8("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(repair_utf8("\xFF\xC3\xA9"), r + "\xC3\xA9");
  EXPECT_TRUE(unicorn::text::is_valid_utf8("\xF0\x9F\x98\x80"));
  EXPECT_FALSE(unicorn::text::is_valid_utf8("\xF0\x9F\x98"));
}

TEST(TokenizerErrors, BadFilesThrowOneLineErrors) {
  const unicorn::test::TempDir tmp("unicorn-tokenizer-test");
  const fs::path& dir = tmp.path();
  auto expect_error = [](const fs::path& p, std::string_view fragment) {
    try {
      (void)Tokenizer::from_tokenizer_json(p);
      ADD_FAILURE() << "no error for " << p;
    } catch (const unicorn::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
    }
  };
  expect_error(dir / "missing.json", "cannot open");
  expect_error(dir, "is a directory");
  std::ofstream(dir / "malformed.json") << "{\"model\": [1, 2";
  expect_error(dir / "malformed.json", "not valid JSON");
  std::ofstream(dir / "unigram.json")
      << R"({"added_tokens": [], "normalizer": null, "pre_tokenizer": null, "decoder": null,
             "model": {"type": "Unigram", "vocab": [["a", 0.0]]}})";
  expect_error(dir / "unigram.json", "unsupported model type 'Unigram'");
  std::ofstream(dir / "nomerges.json")
      << R"({"added_tokens": [], "normalizer": null, "pre_tokenizer": null, "decoder": null,
             "model": {"type": "BPE", "vocab": {"a": 0}}})";
  expect_error(dir / "nomerges.json", "unexpected structure");
}

// from_tokenizer_json reads a file at its size in one go, and a pipe (no
// size) as a stream: the same tokenizer either way.
TEST(TokenizerJson, ReadFromAFileOrAPipe) {
  const std::string text =
      R"({"added_tokens": [{"id": 0, "content": "<bos>", "special": true}], "normalizer": null,
          "pre_tokenizer": null, "decoder": null,
          "model": {"type": "BPE", "vocab": {"<bos>": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]}})";
  const unicorn::test::TempDir tmp("unicorn-tokenizer-read");
  const fs::path file = tmp.path() / "tokenizer.json", fifo = tmp.path() / "pipe.json";
  std::ofstream(file, std::ios::binary) << text;
  const std::vector<int32_t> want{0, 3, 1};  // <bos> ab a
  EXPECT_EQ(Tokenizer::from_tokenizer_json(file).encode("aba", true), want);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << "mkfifo " << fifo;
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << text; });
  std::optional<Tokenizer> piped;
  try {
    piped = Tokenizer::from_tokenizer_json(fifo);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "through a pipe: " << e.what();
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // lets a writer still waiting finish
    writer.join();
    if (fd >= 0) ::close(fd);
    return;
  }
  writer.join();
  EXPECT_EQ(piped->encode("aba", true), want);
  EXPECT_EQ(piped->vocab_size(), 4u);
}

// tokenizer.json is read in one streaming pass (tokenizer_json.hpp): the
// vocabulary and merges go into flat lists, the rest into a small DOM. The
// same tokenizer whatever the order of the members, both forms of a merge, and
// a clear error for each way the two big members can be malformed.
TEST(TokenizerJson, StreamedVocabularyAndMergesInAnyOrder) {
  const std::string added = R"("added_tokens": [{"id": 0, "content": "<bos>", "special": true}])";
  const std::string rest = R"("normalizer": null, "pre_tokenizer": null, "decoder": null)";
  const std::string vocab = R"("vocab": {"<bos>": 0, "a": 1, "b": 2, "ab": 3, "abb": 4})";
  const std::string model_tail = R"("type": "BPE", "ignored": {"vocab": [1], "merges": {}})";
  const auto file = [&](const std::string& merges, bool model_first) {
    const std::string model = R"("model": {)" + merges + ", " + model_tail + ", " + vocab + "}";
    return "{" + (model_first ? model + ", " + added + ", " + rest : added + ", " + rest + ", " + model) + "}";
  };
  const std::vector<int32_t> want{0, 4, 1};  // <bos> (a b b -> ab b -> abb) a
  for (const std::string merges : {R"("merges": [["a", "b"], ["ab", "b"]])", R"("merges": ["a b", "ab b"])"})
    for (const bool model_first : {true, false}) {
      const Tokenizer t = Tokenizer::from_tokenizer_json_text(file(merges, model_first), "t.json");
      EXPECT_EQ(t.vocab_size(), 5u);
      EXPECT_EQ(t.encode("abba", true), want) << merges;
      EXPECT_EQ(t.decode(want, true), "abba");
    }
  // A "model" that is not the top-level member is an ordinary value.
  const std::string nested = R"({"x": {"model": {"vocab": [], "merges": 3}}, )" + added + ", " + rest +
                             R"(, "model": {"type": "BPE", )" + vocab + R"(, "merges": []}})";
  EXPECT_EQ(Tokenizer::from_tokenizer_json_text(nested, "t.json").encode("ab"), (std::vector<int32_t>{1, 2}));

  const auto expect_error = [&](const std::string& model_members, std::string_view fragment) {
    const std::string text = "{" + added + ", " + rest + R"(, "model": {"type": "BPE", )" + model_members + "}}";
    try {
      (void)Tokenizer::from_tokenizer_json_text(text, "bad.json");
      ADD_FAILURE() << "accepted: " << model_members;
    } catch (const unicorn::Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(R"("vocab": {"<bos>": 0, "a": 1, "b": 1}, "merges": [])", "gives the id 1 to both 'a' and 'b'");
  expect_error(R"("vocab": {"<bos>": 0, "a": {"id": 1}}, "merges": [])", "the id of 'a' in model.vocab is an object");
  expect_error(R"("vocab": {"<bos>": 0, "a": [1]}, "merges": [])", "the id of 'a' in model.vocab is an array");
  expect_error(R"("vocab": {"<bos>": 0}, "vocab": {"a": 1}, "merges": [])", "model.vocab appears twice");
  expect_error(R"("vocab": {"<bos>": 0}, "merges": [], "merges": [])", "model.merges appears twice");
  expect_error(R"("vocab": ["<bos>"], "merges": [])", "unexpected structure: model.vocab is not an object");
  expect_error(R"("vocab": {"<bos>": 0}, "merges": {"a": "b"})", "unexpected structure: model.merges is not an array");
  expect_error(R"("vocab": {"<bos>": 0}, "merges": [["a"]])", "a merge [left, right] has 1 strings");
  expect_error(R"("vocab": {"<bos>": 0}, "merges": [["a", 2]])", "bad merge 2");
  expect_error(R"("vocab": {"<bos>": 0}, "merges": [["a", ["b"]]])", "a merge contains an array");
  expect_error(R"("vocab": {"<bos>": 0}, "merges": ["ab"])", "bad merge 'ab'");
  expect_error(R"("vocab": {"<bos>": 0}, "merges": [7])", "bad merge 7");
  expect_error(R"("vocab": {"<bos>": 0, "a": 1}, "merges": [] )" + std::string(", \"x\": [1, "), "is not valid JSON");
}

TEST(TokenizerTiny, ByteFallbackAndMergeOrder) {
  // A hand-made vocabulary: merges apply by rank, leftmost on ties, and a
  // character outside the vocabulary falls back to its bytes.
  std::vector<std::string> tokens{"<pad>", "<eos>", "<bos>", "<unk>", "a", "b", "ab", "aa", "aab", "\xE2\x96\x81"};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
  }
  std::vector<int32_t> types(tokens.size(), 1);
  types[0] = types[1] = types[2] = 3;
  types[3] = 2;
  for (size_t i = 10; i < tokens.size(); ++i) types[i] = 6;
  const Tokenizer t = Tokenizer::from_gguf_vocab(tokens, {}, types, {"a a", "a b", "aa b"});
  // "aaab": (a,a) has rank 0 and wins at the leftmost place: aa a b -> aa ab.
  EXPECT_EQ(t.encode("aaab"), (std::vector<int32_t>{7, 6}));
  // "aab": aa b -> aab.
  EXPECT_EQ(t.encode("aab"), (std::vector<int32_t>{8}));
  // "é" is not in the vocabulary: bytes C3 A9.
  EXPECT_EQ(t.encode("\xC3\xA9"), (std::vector<int32_t>{10 + 0xC3, 10 + 0xA9}));
  EXPECT_EQ(t.decode(t.encode("a \xC3\xA9<bos>b")), "a \xC3\xA9<bos>b");
  EXPECT_EQ(t.encode("<bos>a", true), (std::vector<int32_t>{2, 2, 4}));
  const std::vector<int32_t> ids{2, 4, 1};
  EXPECT_EQ(t.decode(ids, /*skip_special=*/true), "a");
}

// Found by the fuzz targets (tests/fuzz; each input is kept in the corpus as
// regression-*): what a hostile or broken vocabulary must not do.
TEST(TokenizerFuzzFindings, CharacterOutsideAVocabularyWithoutUnkOrBytesIsAnError) {
  // fuzz_tokenizer_gguf, fuzz_tokenizer_json: encode gave the id -1.
  const Tokenizer t = Tokenizer::from_gguf_vocab({"<pad>", "a", "b"}, {0, -1, -2}, {3, 1, 1}, {});
  EXPECT_EQ(t.encode("ab"), (std::vector<int32_t>{1, 2}));
  try {
    (void)t.encode("abc");
    ADD_FAILURE() << "'c' has no token, no byte token and no <unk>";
  } catch (const unicorn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("(UTF-8 63) that is not in the vocabulary"), std::string::npos) << e.what();
  }
}

TEST(TokenizerFuzzFindings, TokenIdsOutsideTheFileAreRefusedBeforeAnythingIsSized) {
  // fuzz_tokenizer_json: an id of 2.2e121 converted to size_t (undefined
  // behaviour); an id of 1e12 sized a vector of a trillion tokens.
  const auto with_id = [](const std::string& id) {
    return R"({"added_tokens": [], "normalizer": null, "pre_tokenizer": null, "decoder": null,
               "model": {"type": "BPE", "vocab": {"a": 0, "b": )" + id + R"(}, "merges": []}})";
  };
  EXPECT_EQ(Tokenizer::from_tokenizer_json_text(with_id("1"), "ok.json").vocab_size(), 2u);
  for (const char* id : {"2.2e121", "1000000000000", "-1", "2", "1.5", "\"1\""}) {
    try {
      (void)Tokenizer::from_tokenizer_json_text(with_id(id), "bad.json");
      ADD_FAILURE() << "id " << id << " was accepted";
    } catch (const unicorn::Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json: token id "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("is not an integer in [0, 2)"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
