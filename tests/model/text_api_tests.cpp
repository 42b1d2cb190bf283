// Label golden: the public text API (engine.hpp: load with a tokenizer,
// generate, chat) on the tiny Gemma 3 model and the 512-token tokenizer in
// Gemma's shape (tests/server/fixtures/tiny_tokenizer.json). Each call is
// checked against the token-level engine it is built on: the text is what the
// greedy tokens decode to, a chat turn is what a fresh stream fed the whole
// conversation continues with, two sessions on two streams do not disturb each
// other, and sampling belongs to the request.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "../tools/tuning_env.hpp"
#include "temp_dir.hpp"
#include "unicorn/engine.hpp"

namespace fs = std::filesystem;
using namespace unicorn;

namespace {

// Two streams of 256 tokens, 32-token prefill chunks (as the other tiny tests).
struct TinyTwoStreams {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3Tiny, schemes::all(Format::Q8_0, Format::F32), 256, 32).with_streams(2);
};

// ctest sets both (tests/model/CMakeLists.txt).
fs::path from_env(const char* name) {
  const char* value = std::getenv(name);
  if (!value) throw std::runtime_error(std::string(name) + " is not set (run through ctest)");
  return value;
}
fs::path tiny_model_dir() { return from_env("UNICORN_FIXTURES") / "tiny"; }
fs::path tiny_tokenizer() { return from_env("UNICORN_TINY_TOKENIZER"); }

struct World {
  gpu::Context ctx{tools::device_from_env()};
  Engine<TinyTwoStreams> engine{ctx};
  World() { engine.load(tiny_model_dir(), {.tokenizer = tiny_tokenizer()}); }
};
World& world() {
  static World w;
  return w;
}

// The greedy continuation of `ids` on a stream, token by token through the
// engine's own prefill and decode: what the text API must agree with.
std::vector<int32_t> greedy_tokens(AnyEngine& e, uint32_t stream, std::span<const int32_t> ids, int n) {
  e.reset(stream);
  e.set_sampling(stream, SamplingParams{});
  std::vector<int32_t> out{e.prefill(stream, ids)};
  while (int(out.size()) < n) {
    const StreamToken row[] = {{stream, out.back()}};
    out.push_back(e.decode(row)[0]);
  }
  return out;
}

}  // namespace

// The words unicorn-generate prints after "stopped: " (and scripts may match):
// those of the strings stopped_by was before it became an enum.
TEST(TextApi, StopReasonsKeepTheirPrintedWords) {
  using text::StopReason;
  EXPECT_EQ(text::to_string(StopReason::end_of_sequence), "eos");
  EXPECT_EQ(text::to_string(StopReason::end_of_turn), "end_of_turn");
  EXPECT_EQ(text::to_string(StopReason::stop_string), "stop string");
  EXPECT_EQ(text::to_string(StopReason::length_limit), "limit");
  EXPECT_EQ(text::to_string(StopReason::context_full), "context full");
  EXPECT_EQ(text::to_string(StopReason::cancelled), "cancelled");
}

TEST(TextApi, ModelWithoutVocabularySaysSoAndHowToGiveOne) {
  gpu::Context ctx{tools::device_from_env()};
  Engine<TinyTwoStreams> engine{ctx};
  engine.load(tiny_model_dir());  // config.json + safetensors, no tokenizer.json
  EXPECT_FALSE(engine.has_tokenizer());
  try {
    engine.generate("hello");
    FAIL() << "generate without a tokenizer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("carries no vocabulary"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("LoadOptions::tokenizer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(engine.load(tiny_model_dir(), {.tokenizer = tiny_model_dir() / "no-such-tokenizer.json"}), Error);
}

// A Hugging Face directory that holds tokenizer.json carries its vocabulary,
// whether the directory or its config.json is named (the loader opens the
// model once and says where the vocabulary is: LoadReport::vocabulary).
TEST(TextApi, DirectoryWithTokenizerJsonCarriesItsVocabulary) {
  const unicorn::test::TempDir tmp("unicorn-text-api");
  const fs::path& dir = tmp.path();
  for (const auto& f : fs::directory_iterator(tiny_model_dir())) fs::create_symlink(f.path(), dir / f.path().filename());
  fs::copy_file(tiny_tokenizer(), dir / "tokenizer.json");
  gpu::Context ctx{tools::device_from_env()};
  Engine<TinyTwoStreams> engine{ctx};
  for (const fs::path& model : {dir, dir / "config.json"}) {
    const LoadReport r = engine.load(model);
    EXPECT_EQ(r.vocabulary, dir) << model;
    ASSERT_TRUE(engine.has_tokenizer()) << model;
    EXPECT_FALSE(engine.tokenizer().encode("hello").empty()) << model;
  }
  EXPECT_TRUE(engine.load(tiny_model_dir()).vocabulary.empty());
  EXPECT_FALSE(engine.has_tokenizer());
}

TEST(TextApi, GenerateStreamsTheGreedyTokensText) {
  AnyEngine& e = world().engine;
  const text::Tokenizer& tok = e.tokenizer();
  const std::string prompt = "the quick brown fox";
  std::string streamed;
  int pieces = 0;
  const auto r = e.generate(prompt, {.max_tokens = 12}, [&](std::string_view s) {
    streamed += s;
    ++pieces;
  });
  EXPECT_EQ(streamed, r.text);
  EXPECT_GT(pieces, 0);
  EXPECT_EQ(r.prompt_tokens, int(tok.encode(prompt, true).size()));
  ASSERT_GT(r.generated, 0);

  const auto want = greedy_tokens(e, 0, tok.encode(prompt, true), r.generated);
  EXPECT_EQ(r.text, tok.decode(want)) << "stopped by " << text::to_string(r.stopped_by);
}

TEST(TextApi, SamplingBelongsToTheRequest) {
  AnyEngine& e = world().engine;
  const text::GenerateOptions greedy{.max_tokens = 16};
  const text::GenerateOptions seeded{.max_tokens = 16, .sampling = {.temperature = 1.5f, .seed = 11}};
  const std::string g1 = e.generate("one two three", greedy).text;
  const std::string s1 = e.generate("one two three", seeded).text;
  const std::string g2 = e.generate("one two three", greedy).text;
  const std::string s2 = e.generate("one two three", seeded).text;
  EXPECT_EQ(g1, g2) << "a sampled request left its settings behind";
  EXPECT_EQ(s1, s2) << "the same seed gave another text";
  EXPECT_NE(g1, s1) << "temperature 1.5 gave the greedy text: the sampling options were not applied";
}

TEST(TextApi, PromptPastTheContextIsRefused) {
  std::string prompt;
  for (int i = 0; i < 300; ++i) prompt += "word ";
  try {
    world().engine.generate(prompt);
    FAIL() << "a prompt past the context was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the context holds 256"), std::string::npos) << e.what();
  }
}

// A second turn feeds only the new text, and continues exactly as a fresh
// stream fed the whole conversation (greedy, token for token).
TEST(TextApi, ChatKeepsTheConversationInTheCache) {
  AnyEngine& e = world().engine;
  auto chat = e.chat("Answer briefly.");
  const auto r1 = chat.answer("what is a fox", {.max_tokens = 8});
  const uint32_t after_first = e.position(0);
  const auto r2 = chat.answer("and a dog", {.max_tokens = 8});
  ASSERT_GT(r2.generated, 0);
  EXPECT_LT(r2.prompt_tokens, int(after_first)) << "the second turn fed the first again";
  EXPECT_EQ(chat.turns(), 2);

  // The conversation as fed: everything up to the second answer's first token.
  // Every token the answer made was fed but the last, unless the last was the
  // <end_of_turn> or <eos> that ended it (not counted in `generated`).
  const auto held = e.tokens(0);
  const size_t fed = r2.stopped_by == text::StopReason::length_limit ? size_t(r2.generated - 1) : size_t(r2.generated);
  const size_t answer_from = held.size() - fed;
  const std::vector<int32_t> conversation(held.begin(), held.begin() + answer_from);
  const std::vector<int32_t> answer(held.begin() + answer_from, held.end());
  const auto want = greedy_tokens(e, 1, conversation, r2.generated);
  ASSERT_EQ(want.size(), size_t(r2.generated));
  EXPECT_EQ(std::vector<int32_t>(want.begin(), want.begin() + fed), answer);
  EXPECT_EQ(e.tokenizer().decode(want), r2.text);
  (void)r1;
}

// Two conversations on two streams, interleaved turn by turn, answer as each
// does alone.
TEST(TextApi, SessionsOnTwoStreamsAreIndependent) {
  AnyEngine& e = world().engine;
  const text::GenerateOptions opt{.max_tokens = 6, .sampling = {.temperature = 0.8f, .seed = 5}};
  std::vector<std::string> alone;
  {
    auto a = e.chat("", 0);
    alone.push_back(a.answer("red", opt).text);
    alone.push_back(a.answer("green", opt).text);
  }
  {
    auto b = e.chat("", 1);
    alone.push_back(b.answer("blue", opt).text);
    alone.push_back(b.answer("yellow", opt).text);
  }
  auto a = e.chat("", 0);
  auto b = e.chat("", 1);
  std::vector<std::string> together(4);
  together[0] = a.answer("red", opt).text;
  together[2] = b.answer("blue", opt).text;
  together[1] = a.answer("green", opt).text;
  together[3] = b.answer("yellow", opt).text;
  EXPECT_EQ(together, alone);
  EXPECT_THROW(e.chat("", 2), Error) << "a stream the engine does not have";
}

// ChatSession::cancel from another thread stops the answer after the token
// being made; the conversation goes on.
TEST(TextApi, CancelFromAnotherThreadStopsTheAnswer) {
  AnyEngine& e = world().engine;
  auto chat = e.chat();
  std::atomic<bool> first_text{false}, cancelled{false};
  std::thread canceller([&] {
    while (!first_text) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    chat.cancel();
    cancelled = true;
  });
  // Temperature 1: the answer does not end by itself within a few tokens.
  const text::GenerateOptions opt{.max_tokens = 200, .sampling = {.temperature = 1.0f, .seed = 3}};
  int pieces = 0;
  const auto r = chat.answer("tell me a long story", opt, [&](std::string_view) {
    ++pieces;
    first_text = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!cancelled && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  first_text = true;  // (an answer that ended before any text lets the thread go too)
  canceller.join();
  EXPECT_EQ(r.stopped_by, text::StopReason::cancelled) << r.generated << " tokens";
  EXPECT_EQ(pieces, 1) << "text went on after the cancel";
  const auto next = chat.answer("go on", {.max_tokens = 4});
  EXPECT_NE(next.stopped_by, text::StopReason::cancelled) << "the cancel outlived its answer";
  EXPECT_EQ(chat.turns(), 2);
}
