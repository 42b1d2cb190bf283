// Labels vision, golden: a prompt that mixes text and an image's soft tokens
// (PromptImage, engine/step.hpp) through the text engine's prefill, against
// transformers' Gemma3ForConditionalGeneration (fixtures/tiny, made by
// tests/vision/make_golden.py): the tiny text model read from the fixture's
// Hugging Face directory (its vision tensors skipped), the projector's output
// soft_tokens.bin [16, 96] as the image, golden.json's prompt (boi, 16 image
// tokens, eoi). Bidirectional inside the image gives logits_f32.bin; the same
// soft tokens under causal attention give logits_causal.bin, which differs
// from it by up to 6.2: each logits test matches both, and checks that they differ.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "unicorn/engine.hpp"
#include "../tools/tuning_env.hpp"

namespace fs = std::filesystem;
using namespace unicorn;

namespace {

// F32 deployments of the tiny text model (kGemma3Tiny, window 16). With a
// 32-token chunk the image (positions 14-29) lies in the first chunk; with a
// 24-token chunk the first chunk would cut it, so it ends before the image.
template <uint32_t Chunk, uint32_t Streams = 1>
struct TinyText {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3Tiny, schemes::all(Format::F32, Format::F32), 256, Chunk).with_streams(Streams);
};

fs::path tiny_dir() {
  const char* dir = std::getenv("UNICORN_FIXTURES");
  return (dir ? fs::path(dir) : fs::path("tests/vision/fixtures")) / "tiny";
}

std::vector<float> read_floats(const std::string& name, size_t count) {
  std::ifstream f(tiny_dir() / name, std::ios::binary);
  std::vector<float> v(count);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(count * 4));
  if (!f)
    throw std::runtime_error((tiny_dir() / name).string() + " is missing or short; regenerate with: "
                             "python3 tests/vision/make_golden.py OUT && cp -r OUT/tiny " + tiny_dir().string());
  return v;
}

struct Golden {
  std::vector<int32_t> prompt;
  uint32_t image_pos = 0, image_rows = 0;
  std::vector<float> soft, logits, causal;
};

const Golden& golden() {
  static const Golden g = [] {
    std::ifstream f(tiny_dir() / "golden.json");
    const auto json = nlohmann::json::parse(f);
    Golden g;
    g.prompt = json["prompt"].get<std::vector<int32_t>>();
    g.image_rows = json["tokens_per_image"].get<uint32_t>();
    const int32_t image_token = json["image_token"].get<int32_t>();
    g.image_pos = uint32_t(std::find(g.prompt.begin(), g.prompt.end(), image_token) - g.prompt.begin());
    g.soft = read_floats("soft_tokens.bin", size_t(g.image_rows) * kGemma3Tiny.hidden);
    g.logits = read_floats("logits_f32.bin", g.prompt.size() * kGemma3Tiny.vocab);
    g.causal = read_floats("logits_causal.bin", g.prompt.size() * kGemma3Tiny.vocab);
    return g;
  }();
  return g;
}

gpu::Context& context() {
  static gpu::Context ctx(tools::device_from_env());  // UNICORN_VALIDATION=1 from ctest
  return ctx;
}

EngineOptions options(EngineOptions o = {}) { return tools::engine_options_from_env(o); }
// Prefill's attention on attention.comp, a workgroup per (token, heads),
// instead of the tiles (Tuning::attention_rows = 0).
EngineOptions row_attention() {
  EngineOptions o;
  o.tuning.attention_rows = 0;
  return options(o);
}

// The soft tokens in a device buffer, as the image encoder leaves them.
struct SoftTokens {
  gpu::BufferSet set;
  explicit SoftTokens(std::span<const float> rows) {
    const uint64_t bytes[] = {rows.size_bytes()};
    set = gpu::BufferSet(context(), bytes, gpu::MemoryKind::HostVisible, "test soft tokens");
    std::memcpy(set[0].mapped, rows.data(), rows.size_bytes());
  }
  const gpu::Buffer& buffer() const { return set[0]; }
};

const SoftTokens& soft_tokens() {
  static const SoftTokens s(golden().soft);
  return s;
}

// The golden prompt's image, from stream position `at` on.
std::vector<PromptImage> the_image(uint32_t at = 0) {
  return {{golden().image_pos + at, golden().image_rows, &soft_tokens().buffer()}};
}
// The same soft tokens as one-token images: each sees only itself among
// them, so attention is causal everywhere (transformers without token_type_ids).
std::vector<PromptImage> one_token_images() {
  std::vector<PromptImage> images;
  for (uint32_t i = 0; i < golden().image_rows; ++i)
    images.push_back({golden().image_pos + i, 1, &soft_tokens().buffer(), uint64_t(i) * kGemma3Tiny.hidden * 4});
  return images;
}

// max |a - b| / max |b|: the error relative to the logit scale.
double relative_error(std::span<const float> a, std::span<const float> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  return diff / scale;
}

// Within 1e-3 of the logit scale (issue 50); the F32 path on lavapipe is near 1e-6.
constexpr double kTolerance = 1e-3;
// On tensor units (fp16 operands, attention_coop) tests/model's tolerance for
// the same tiny model's prefill there (kCoopPrefillTolerance, model_tests.cpp).
constexpr double kTensorUnitTolerance = 4e-3;

#define EXPECT_THROW_WITH(expr, part)                                           \
  try {                                                                         \
    expr;                                                                       \
    ADD_FAILURE() << #expr " did not throw";                                    \
  } catch (const Error& e) {                                                    \
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what(); \
  }

class ImagePrompt : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(context().validation_errors(), 0u) << "Vulkan validation errors"; }
};

template <class D>
void expect_logits_match(const EngineOptions& o, const char* what) {
  Engine<D> engine(context(), o);
  if (o.products == Products::fp16 && !engine.tensor_units())
    GTEST_SKIP() << context().info().name << " has no tensor units: the tiles' test covers its path";
  engine.load(tiny_dir());
  const double tolerance = engine.tensor_units() ? kTensorUnitTolerance : kTolerance;
  const Golden& g = golden();
  const auto bidirectional = engine.core().forward_logits(g.prompt, the_image());
  const double e = relative_error(bidirectional, g.logits);
  engine.core().reset();
  const auto causal = engine.core().forward_logits(g.prompt, one_token_images());
  const double e_causal = relative_error(causal, g.causal);
  const double e_crossed = relative_error(bidirectional, g.causal);
  std::printf("[ golden ] %-28s chunk %u: bidirectional %.2e, causal %.2e (bidirectional vs causal golden %.2e)\n",
              what, D::kConfig.prefill_chunk, e, e_causal, e_crossed);
  EXPECT_LE(e, tolerance) << what << ": the image prompt vs transformers with token_type_ids";
  EXPECT_LE(e_causal, tolerance) << what << ": causal soft tokens vs transformers without token_type_ids";
  EXPECT_GT(e_crossed, 100 * kTolerance) << what << ": the image prompt should be far from the causal golden: the mask must matter";
}

}  // namespace

// Every position's logits of the prompt with the image, prefill's attention
// tiled (attention_tiled: an F32 deployment computes in fp32 on every
// device), on tensor units where the device has them (attention_coop, fp16
// products) and row by row (attention.comp), with the image in the first
// chunk and, with 24-token chunks, in a second chunk of its own start.
TEST_F(ImagePrompt, LogitsMatchTransformersOnTiles) { expect_logits_match<TinyText<32>>(options(), "tiles"); }
TEST_F(ImagePrompt, LogitsMatchTransformersOnTensorUnits) {
  EngineOptions o;
  o.products = Products::fp16;
  expect_logits_match<TinyText<32>>(options(o), "tensor units");
}
TEST_F(ImagePrompt, LogitsMatchTransformersRowByRow) {
  expect_logits_match<TinyText<32>>(row_attention(), "attention.comp");
}
TEST_F(ImagePrompt, ChunksEndBeforeAnImageTheyWouldCut) {
  expect_logits_match<TinyText<24>>(options(), "tiles, image in chunk 2");
}

// The path a generator takes: prefill() chunks the prompt and chooses the
// next token, here the golden's greedy one; and a pass of two streams'
// chunks (begin_prefill), the first ending with the image's last token, so
// the padding rows before the second stream's segment repeat an image row.
TEST_F(ImagePrompt, PrefillOfOneAndOfTwoStreams) {
  const Golden& g = golden();
  const uint32_t V = kGemma3Tiny.vocab, n = uint32_t(g.prompt.size());
  const float* last = g.logits.data() + size_t(n - 1) * V;
  const int32_t expected = int32_t(std::max_element(last, last + V) - last);

  Engine<TinyText<32>> one(context(), options());
  one.load(tiny_dir());
  EXPECT_EQ(one.core().prefill(0, g.prompt, the_image()), expected);

  Engine<TinyText<64, 2>> two(context(), options());
  two.load(tiny_dir());
  auto& core = two.core();
  const auto image = the_image();
  const uint32_t cut = g.image_pos + g.image_rows;  // the image's end: a row count no tile divides
  const std::span<const int32_t> prompt(g.prompt);
  const PromptChunk first[] = {{0, prompt.first(cut), false, image}, {1, prompt.first(cut), false, image}};
  ASSERT_EQ(core.prefill_pass(first).size(), 2u);
  core.prefill(first);
  const PromptChunk rest[] = {{0, prompt.subspan(cut), true, image}, {1, prompt.subspan(cut), true, image}};
  const auto logits = core.forward_logits(rest);
  for (uint32_t s = 0; s < 2; ++s)
    EXPECT_LE(relative_error(std::span(logits).subspan(size_t(s) * V, V), std::span(last, V)), kTolerance)
        << "stream " << s << "'s last logits";
}

// Images a pass cannot take are refused with what is wrong, and the streams
// stay where they were.
TEST_F(ImagePrompt, RefusesImagesItCannotRun) {
  Engine<TinyText<24>> engine(context(), options());
  engine.load(tiny_dir());
  auto& core = engine.core();
  const Golden& g = golden();
  const gpu::Buffer& soft = soft_tokens().buffer();
  std::vector<int32_t> long_prompt(40, 5);
  const PromptImage too_long[] = {{2, 30, &soft}};
  EXPECT_THROW_WITH(core.prefill(0, long_prompt, too_long), "does not fit a prefill pass of 24 rows");
  const PromptImage image_to_32[] = {{2, 30, &soft}};
  const PromptChunk cut_by_chunk{0, std::span(long_prompt).first(20), true, image_to_32};
  EXPECT_THROW_WITH(core.prefill(std::span(&cut_by_chunk, 1)), "is cut by a chunk of positions [0, 20)");
  const PromptImage past_buffer[] = {{2, 16, &soft, 4}};
  EXPECT_THROW_WITH(core.prefill(0, long_prompt, past_buffer), "needs 6144 bytes of soft tokens ([16, 96] float32)");
  const PromptImage overlapping[] = {{2, 8, &soft}, {6, 8, &soft}};
  EXPECT_THROW_WITH(core.prefill(0, long_prompt, overlapping), "overlaps");
  EXPECT_EQ(core.position(0), 0u);
  // After the refusals the stream takes the prompt as if nothing had happened.
  const auto logits = core.forward_logits(g.prompt, the_image());
  EXPECT_LE(relative_error(logits, g.logits), kTolerance);
}

// --- the whole path: an image file through the engine's encoder ---

namespace {

// The tiny text model with the tiny encoder beside it: loading the fixture's
// Hugging Face directory finds the vision tower there.
template <uint32_t Chunk>
struct TinyVision {
  static constexpr DeploymentConfig kConfig = TinyText<Chunk>::kConfig.with_vision(kGemma3SiglipTiny);
};

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The server tests' tiny tokenizer with <start_of_image> and <end_of_image>
// at the golden's ids (fixtures/make_tiny_vision_tokenizer.py), so that text
// prompts can place images.
fs::path vision_tokenizer() { return tiny_dir().parent_path() / "tiny_vision_tokenizer.json"; }

}  // namespace

// image.png decoded and resized as transformers' processor does, encoded on
// the device by the engine's encoder, placed in golden.json's prompt: the
// soft tokens and every position's logits against transformers'.
TEST_F(ImagePrompt, AnImageFileGivesTransformersLogits) {
  Engine<TinyVision<32>> engine(context(), options());
  engine.load(tiny_dir());
  ASSERT_TRUE(engine.sees_images()) << "the fixture's vision tower was not found";
  const Golden& g = golden();
  const std::string png = file_bytes(tiny_dir() / "image.png");
  const text::EncodedImages encoded = engine.encode_images(std::span(&png, 1));
  ASSERT_EQ(encoded.rows, g.image_rows);
  const auto* soft = reinterpret_cast<const float*>((*encoded.soft_tokens)[0].mapped);
  const double e_soft = relative_error(std::span(soft, g.soft.size()), g.soft);
  const PromptImage image[] = {{g.image_pos, g.image_rows, &(*encoded.soft_tokens)[0]}};
  const double e = relative_error(engine.core().forward_logits(g.prompt, image), g.logits);
  std::printf("[ golden ] image file to logits: soft tokens %.2e, logits %.2e\n", e_soft, e);
  const bool fp16 = engine.context().info().coopmat;  // the encoder's products on tensor units
  EXPECT_LE(e_soft, fp16 ? 1e-2 : 1e-4) << "the projector's output vs transformers'";
  EXPECT_LE(e, fp16 ? 1e-2 : kTolerance);
}

// AnyEngine::generate and ChatSession place the images where the prompt
// writes <start_of_image> (before it when it writes none), feed the prompt
// a pass at a time without cutting an image (24-row passes here), and choose
// what teacher forcing of the same rows chooses.
TEST_F(ImagePrompt, GenerateAndChatPlaceImagesAsTeacherForcing) {
  Engine<TinyVision<24>> engine(context(), options());
  engine.load(tiny_dir(), {.tokenizer = vision_tokenizer()});
  ASSERT_TRUE(engine.sees_images());
  const std::string png = file_bytes(tiny_dir() / "image.png");
  const std::vector<std::string> images{png, png};
  // Teacher forcing of the same text and images: the last row's greedy
  // token and its log-probability.
  const auto forced = [&](std::string_view text, std::span<const std::string> files) {
    auto placed = text::place_images(engine.tokenizer(), text, files, engine.image_encoder(), 0);
    engine.core().reset(0);
    const auto logits = engine.core().forward_logits(placed.ids, placed.images);
    const std::span<const float> last(logits.data() + logits.size() - kGemma3Tiny.vocab, kGemma3Tiny.vocab);
    const auto best = std::ranges::max_element(last);
    double sum = 0;
    for (float x : last) sum += std::exp(double(x) - *best);
    return std::pair{int32_t(best - last.begin()), float(-std::log(sum))};
  };
  // What generation chose first (chosen by the pass that ended the prompt),
  // and its log-probability as the sampler computed it on the device.
  const auto first = [&](const text::GenerateResult& r) {
    return std::pair{r.pending, engine.core().logprobs(0).logprob};
  };
  const auto expect_near = [](std::pair<int32_t, float> got, std::pair<int32_t, float> want, const char* what) {
    EXPECT_EQ(got.first, want.first) << what;
    EXPECT_NEAR(got.second, want.second, 1e-4) << what << ": the chosen token's log-probability";
  };
  text::GenerateOptions o{.max_tokens = 1, .sampling = {.logprobs = true}, .images = images};
  const text::TextSink none;
  // Markers where the prompt writes them: the second image past a 24-row pass.
  // (Each generation's result is read before teacher forcing resets the stream.)
  const auto r = engine.generate("see<start_of_image>and<start_of_image>then", o, none);
  EXPECT_GT(r.prompt_tokens, 2 * 16 + 8) << "two images' rows and markers";
  const auto two = first(r);
  expect_near(two, forced("<bos>see<start_of_image>and<start_of_image>then", images), "two images");
  // No markers: all before the text.
  const auto before = first(engine.generate("then", o, none));
  expect_near(before, forced("<bos><start_of_image><start_of_image>then", images), "images before the text");
  // A chat turn.
  auto chat = engine.chat();
  const auto turn = first(chat.answer("what?", {.max_tokens = 1, .sampling = {.logprobs = true}, .images = {png}}, none));
  expect_near(turn,
              forced("<bos><start_of_turn>user\n<start_of_image>what?<end_of_turn>\n<start_of_turn>model\n",
                     std::span(&png, 1)),
              "a chat turn");
  o.images = {png};
  EXPECT_THROW_WITH(engine.generate("a<start_of_image>b<start_of_image>", o), "places 2 images");
  // A model without an encoder says so.
  Engine<TinyText<32>> text_only(context(), options());
  text_only.load(tiny_dir(), {.tokenizer = vision_tokenizer()});
  EXPECT_FALSE(text_only.sees_images());
  EXPECT_THROW_WITH(text_only.generate("x", o), "has no vision encoder");
  // A file that is no image is named.
  o.images = {"not an image"};
  EXPECT_THROW_WITH(engine.generate("x", o), "image 1 of 1");
}
