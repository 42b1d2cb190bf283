// Label loader: a speculative pair's engine (engine.hpp: a deployment with a
// draft builds the draft's engine beside its own) on the tiny test models:
// kGemma3Tiny (the fixture's Hugging Face directory, with the server tests'
// 512-token tokenizer) drafted by kGemma3TinyK (unicorn-convert's random
// weights). Whether it drafts, that generate(), chat() and a server made from
// it draft with it, and which draft files it refuses and why. That the drafted text is the model's
// own in every case is the speculative loop's test (speculative_tests.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "../tools/tuning_env.hpp"
#include "temp_dir.hpp"
#include "unicorn/engine.hpp"
#include "unicorn/gemma3_demo.hpp"
#include "unicorn/server/serve.hpp"

namespace fs = std::filesystem;
using namespace unicorn;

namespace {

constexpr Scheme kTinyScheme = schemes::all(Format::Q8_0, Format::F32);
struct TinyDraft {
  static constexpr DeploymentConfig kConfig = make_deployment(kGemma3TinyK, kTinyScheme, 256, 32);
};
struct TinyPair {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3Tiny, kTinyScheme, 256, 32).with_streams(2).with_draft(TinyDraft::kConfig, 8);
};
struct TinyAlone {
  static constexpr DeploymentConfig kConfig = make_deployment(kGemma3Tiny, kTinyScheme, 256, 32);
};

// ctest sets these (tests/model/CMakeLists.txt).
fs::path env_path(const char* name) {
  const char* value = std::getenv(name);
  if (!value) throw std::runtime_error(std::string(name) + " is not set (run through ctest)");
  return value;
}
fs::path model_dir() { return env_path("UNICORN_FIXTURES") / "tiny"; }
fs::path tokenizer() { return env_path("UNICORN_TINY_TOKENIZER"); }

const fs::path& scratch() {
  static const test::TempDir dir("unicorn-pair-tests");
  return dir.path();
}
// kGemma3TinyK's random weights with `vocabulary` (empty: unicorn-convert's
// dummy one of 512 tokens, whose strings are not the tokenizer's), once per process.
fs::path draft_file(const std::string& name, const fs::path& vocabulary) {
  const fs::path out = scratch() / name;
  if (!fs::exists(out)) {
    const std::string cmd = env_path("UNICORN_CONVERT").string() + " --random gemma3-tiny-k --type Q8_0 --seed 3" +
                            (vocabulary.empty() ? "" : " --tokenizer " + vocabulary.string()) + " --out " +
                            out.string() + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }
  return out;
}
fs::path same_vocabulary_draft() { return draft_file("draft.gguf", tokenizer()); }
fs::path other_vocabulary_draft() { return draft_file("draft-dummy-vocabulary.gguf", {}); }

gpu::Context& device() {
  static gpu::Context ctx{tools::device_from_env()};
  return ctx;
}
Engine<TinyPair>& pair() {
  static Engine<TinyPair> engine{device()};
  return engine;
}

std::string error_of(const auto& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The demo pair's engine type (gemma3_demo.hpp) passes Engine<D>'s checks,
// and carries its draft as a run-time value.
static_assert(Gemma3_Demo_Speculative::kConfig.has_draft() && !Gemma3_Demo::kConfig.has_draft());

}  // namespace

TEST(PairEngine, TheDemoPairCarriesItsDraft) {
  const CompiledDeployment pair = Gemma3_Demo_Speculative::compiled();
  ASSERT_NE(pair.draft, nullptr);
  EXPECT_EQ(pair.draft->config.model.name, kGemma3DemoDraft.name);
  EXPECT_EQ(pair.draft->layout.layers, kGemma3DemoDraft.layers);
  EXPECT_EQ(Gemma3_Demo::compiled().draft, nullptr);
}

TEST(PairEngine, DraftsOnceTheDraftsWeightsAreLoaded) {
  Engine<TinyPair>& e = pair();
  EXPECT_FALSE(e.has_draft());  // compiled with one, no weights yet
  EXPECT_EQ(e.draft(), nullptr);
  e.load(model_dir(), {.tokenizer = tokenizer(), .draft = same_vocabulary_draft()});
  ASSERT_TRUE(e.has_draft());
  ASSERT_NE(e.draft(), nullptr);
  EXPECT_EQ(e.draft()->config().model.name, kGemma3TinyK.name);
  EXPECT_EQ(e.draft()->streams(), 1u);
  EXPECT_EQ(e.draft()->context_size(), e.context_size());
  EXPECT_EQ(&e.draft()->context(), &e.context());  // one device
  // Loaded again without one, the engine decodes alone.
  e.load(model_dir(), {.tokenizer = tokenizer()});
  EXPECT_FALSE(e.has_draft());
  EXPECT_EQ(e.draft(), nullptr);
}

// generate() and chat() hand the loaded draft to the loop: it verifies in
// passes, and the greedy text is the model's alone (--draft-max 0).
TEST(PairEngine, GenerateAndChatDraftWithTheLoadedDraft) {
  Engine<TinyPair>& e = pair();
  e.load(model_dir(), {.tokenizer = tokenizer(), .draft = same_vocabulary_draft()});
  ASSERT_TRUE(e.has_draft());
  const text::GenerateResult drafted = e.generate("the quick brown fox", {.max_tokens = 12});
  const text::GenerateResult alone = e.generate("the quick brown fox", {.max_tokens = 12, .draft_max = 0});
  EXPECT_GT(drafted.verify_passes, 0);
  EXPECT_GT(drafted.drafted, 0);
  EXPECT_EQ(alone.verify_passes, 0);
  EXPECT_EQ(drafted.text, alone.text);
  const text::GenerateResult turn = e.chat().answer("hello", {.max_tokens = 8});
  EXPECT_GT(turn.verify_passes, 0);
}

// A server made from the engine (server::Model) takes the loaded draft, and
// none without one: unicorn-server --draft's rounds.
TEST(PairEngine, AServerTakesTheLoadedDraft) {
  Engine<TinyPair>& e = pair();
  e.load(model_dir(), {.tokenizer = tokenizer(), .draft = same_vocabulary_draft()});
  ASSERT_NE(e.draft(), nullptr);
  EXPECT_EQ(server::Model(e).draft, &e.draft()->core());
  e.load(model_dir(), {.tokenizer = tokenizer()});
  EXPECT_EQ(server::Model(e).draft, nullptr);
}

TEST(PairEngine, RefusesADraftWhoseVocabularyIsNotTheModels) {
  Engine<TinyPair>& e = pair();
  const std::string what =
      error_of([&] { e.load(model_dir(), {.tokenizer = tokenizer(), .draft = other_vocabulary_draft()}); });
  EXPECT_NE(what.find("the draft's vocabulary is not the one"), std::string::npos) << what;
  EXPECT_NE(what.find("in the draft and"), std::string::npos) << what;  // names the first token that differs
  EXPECT_FALSE(e.has_draft());
}

TEST(PairEngine, RefusesADraftOfAnotherShape) {
  Engine<TinyPair>& e = pair();
  // kGemma3Tiny's weights where kGemma3TinyK's belong: the loader names the difference.
  EXPECT_THROW(e.load(model_dir(), {.tokenizer = tokenizer(), .draft = model_dir()}), Error);
  EXPECT_FALSE(e.has_draft());
}

TEST(PairEngine, AnEngineWithoutADraftRefusesADraftFile) {
  Engine<TinyAlone> e{device()};
  EXPECT_EQ(Engine<TinyAlone>::compiled().draft, nullptr);
  const std::string what =
      error_of([&] { e.load(model_dir(), {.tokenizer = tokenizer(), .draft = same_vocabulary_draft()}); });
  EXPECT_NE(what.find("has no draft compiled in"), std::string::npos) << what;
  EXPECT_FALSE(e.has_draft());
}
