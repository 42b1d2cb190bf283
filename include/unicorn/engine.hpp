// unicorn/engine.hpp — Engine<Deployment>: one Gemma 3 deployment, typed,
// with text in and text out.
//
//   #include <unicorn/gemma27b.hpp>
//   unicorn::Gemma3_27B engine;                 // Vulkan device, buffers, recorded passes
//   engine.load("gemma-3-27b-it-q4_0.gguf");    // weights checked against the compiled layout, and the vocabulary
//   engine.generate("The sky is", {.max_tokens = 32}, print);
//   auto chat = engine.chat("You are terse.");  // KV kept across turns
//   chat.answer("Why is the sky blue?", {.sampling = {.temperature = 0.7f, .seed = 1}}, print);
//
// A deployment with a draft (speculative decoding: deployments::Gemma3_27B_QAT_Draft270M)
// takes the draft's file as LoadOptions::draft: load() builds the draft's
// engine beside its own on the same device, and generate() and chat() then
// draft with it (docs/speculative.md).
//
// The deployment type fixes model, scheme, budget and placement (which pool
// each tensor group lives in, checked against a hardware profile) at compile
// time; every invariant is checked here with a message that says what to
// change, and the run-time half (AnyEngine over engine/core.hpp) receives the
// constexpr layout. Code that should not be compiled once per deployment takes
// an AnyEngine& or a CompiledDeployment.
#pragma once

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "unicorn/config/deployment.hpp"
#include "unicorn/engine/check_tensors.hpp"
#include "unicorn/engine/core.hpp"
#include "unicorn/engine/loader.hpp"
#include "unicorn/generation/chat_session.hpp"
#include "unicorn/generation/generate.hpp"
#include "unicorn/generation/image_prompt.hpp"
#include "unicorn/image/decode.hpp"
#include "unicorn/image/preprocess.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/model/vision_from_hf.hpp"
#include "unicorn/model/vision_from_mmproj.hpp"
#include "unicorn/vision/encoder.hpp"
#include "unicorn/vision/from_weights.hpp"
#include "unicorn/layout/budget.hpp"
#include "unicorn/layout/compiled_deployment.hpp"
#include "unicorn/layout/diag.hpp"
#include "unicorn/layout/layout.hpp"
#include "unicorn/text/load_tokenizer.hpp"

namespace unicorn {

// How a model is loaded.
struct LoadOptions {
  // A tokenizer.json or a GGUF whose vocabulary replaces the model's own (or
  // supplies one: the demo model and files of older converters carry none).
  std::filesystem::path tokenizer;
  LoadProgress progress;  // (bytes placed, bytes in all), as weights reach the device
  // The image encoder's file (llama.cpp's mmproj GGUF), for a deployment that
  // has one (DeploymentConfig::vision). Empty: the one file named mmproj*.gguf
  // beside the model, as Google's releases keep it, or a Hugging Face
  // directory's own vision tower; none found, the engine reads text only.
  std::filesystem::path mmproj;
  // The draft model's file (a GGUF or a Hugging Face directory), for a
  // deployment that has a draft (DeploymentConfig::draft); empty: the engine
  // decodes alone. Its vocabulary, where the file carries one, must be the
  // model's token for token.
  std::filesystem::path draft;
};

// The engine of a compiled deployment chosen at run time; Engine<D> is this
// with D's compile-time checks and constants. Its code does not depend on D,
// so a build compiles it once however many deployments it holds.
class AnyEngine {
 public:
  // Opens the Vulkan device options.device chooses (by default the best GPU,
  // without validation). `options`: what is chosen at creation (engine/options.hpp).
  // A deployment with a draft (CompiledDeployment::draft) builds the draft's
  // engine when a load() first names its file (LoadOptions::draft), so that
  // one used without a draft costs nothing more.
  explicit AnyEngine(const CompiledDeployment& d, const EngineOptions& options = {})
      : owned_ctx_(std::make_unique<gpu::Context>(options.device)), core_(*owned_ctx_, d.config, d.layout, options),
        deployment_(d), options_(options) {}
  AnyEngine(gpu::Context& ctx, const CompiledDeployment& d, const EngineOptions& options = {})
      : core_(ctx, d.config, d.layout, options), deployment_(d), options_(options) {}

  const CompiledDeployment& deployment() const { return deployment_; }
  // The engine's configuration: the deployment's, with the embedding in the
  // format of the file loaded (Scheme::takes_embedding).
  const DeploymentConfig& config() const { return core_.config(); }
  // Its run-time layout: the deployment's, with that embedding and the
  // context chosen at creation (EngineOptions::context).
  const LayoutView& layout() const { return core_.layout(); }

  // Loads a GGUF file or a Hugging Face directory: the weights, and the
  // vocabulary it carries (or options.tokenizer's). Throws unicorn::Error
  // naming the first mismatch with this engine. The model's own vocabulary is
  // built on the first call of tokenizer() (about 0.4 s for Gemma 3's 262,144
  // tokens), so a program that never needs text (unicorn-bench) does not wait.
  // options.draft loads the draft's weights too (refused by an engine
  // compiled without a draft, and where its vocabulary differs).
  LoadReport load(const std::filesystem::path& model, const LoadOptions& options = {}) {
    tokenizer_.reset();
    vocabulary_.clear();
    model_.clear();
    draft_loaded_ = false;
    if (!options.draft.empty() && !deployment_.draft)
      throw Error(options.draft.string() + ": " + std::string(config().model.name) +
                  "'s engine has no draft compiled in; a draft file goes with a speculative pair's engine "
                  "(DeploymentConfig::with_draft, e.g. deployments::Gemma3_27B_QAT_Draft270M: docs/speculative.md)");
    if (!options.tokenizer.empty()) tokenizer_ = text::load_tokenizer(options.tokenizer);  // a bad path fails first
    LoadReport report = load_model(core_, model, options.progress);
    if (!tokenizer_) vocabulary_ = report.vocabulary;  // the file was opened once, by the loader
    model_ = model;
    load_vision(model, options.mmproj);
    if (!options.draft.empty()) load_draft(options.draft, options.progress);
    return report;
  }
  // Whether generate() and chat() draft: the deployment has a draft and its
  // weights were loaded (LoadOptions::draft).
  bool has_draft() const { return draft_loaded_; }
  // The draft's engine when has_draft(), else nullptr (the server's scheduler
  // takes its core: server::Model::draft).
  const AnyEngine* draft() const { return draft_loaded_ ? draft_.get() : nullptr; }
  AnyEngine* draft() { return draft_loaded_ ? draft_.get() : nullptr; }
  // Whether images can be given: the deployment has an image encoder and its
  // weights were found at load().
  bool sees_images() const { return encoder_ != nullptr; }
  // The image encoder's file, when sees_images().
  const std::string& vision_source() const { return vision_source_; }
  // The tokenizer loaded with the model; an error naming the model if it had
  // none and LoadOptions::tokenizer gave none. Not to be called from two
  // threads at once before its first use.
  const text::Tokenizer& tokenizer() const {
    if (!tokenizer_ && !vocabulary_.empty()) tokenizer_ = text::model_tokenizer(vocabulary_);
    if (!tokenizer_)
      throw Error(model_.empty() ? std::string("tokenizer: no model is loaded")
                                 : model_.string() + " carries no vocabulary: load it with LoadOptions::tokenizer "
                                                     "(a tokenizer.json, or a GGUF that has one)");
    return *tokenizer_;
  }
  bool has_tokenizer() const { return tokenizer_.has_value() || !vocabulary_.empty(); }

  // Text in, text out, on stream 0: starts a new sequence (<bos> + prompt),
  // streams the continuation to `on_text` and returns it with its timings.
  // Sampling, stop strings, the token limit and a cancel flag are options.
  // With options.images, each image goes where the prompt writes
  // <start_of_image> (text::kImageMarker), or all before the prompt when it
  // writes none.
  text::GenerateResult generate(std::string_view prompt, const text::GenerateOptions& options = {},
                                const text::TextSink& on_text = {}) {
    core_.reset(0);
    if (options.images.empty()) {
      const auto ids = tokenizer().encode(prompt, /*add_bos=*/true);
      check_fits(ids.size());
      return text::detail::generate(core_, tokenizer(), 0, ids, options, on_text, nullptr, {}, draft_core());
    }
    std::string text = "<bos>";
    if (text::count_image_markers(prompt) == 0)
      for (size_t i = 0; i < options.images.size(); ++i) text += text::kImageMarker;
    text += prompt;
    const text::PlacedImages p = text::place_images(tokenizer(), text, options.images, image_encoder(), 0);
    check_fits(p.ids.size());
    return text::detail::generate(core_, tokenizer(), 0, p.ids, options, on_text, nullptr, p.images, draft_core());
  }
  // A conversation on `stream` (Gemma 3's chat template; the KV cache is kept
  // across turns, and ChatSession::cancel stops an answer from any thread).
  // Sessions on different streams are independent; use one thread at a time.
  text::ChatSession chat(std::string system_prompt = {}, uint32_t stream = 0) {
    return text::ChatSession(core_, tokenizer(), std::move(system_prompt), stream, image_encoder(), draft_core());
  }

  // The image encoder as the prompt builders take it (generation/image_prompt.hpp):
  // files in, their soft tokens in one host-visible buffer out. Throws
  // naming why when this engine reads no images.
  text::ImageEncoder image_encoder() {
    return [this](std::span<const std::string> files) { return encode_images(files); };
  }
  // The encoder itself (unicorn-bench times it apart from decoding the file).
  vision::VisionEncoder& vision_encoder() {
    if (!encoder_) (void)encode_images({});  // throws, saying why there is none
    return *encoder_;
  }
  text::EncodedImages encode_images(std::span<const std::string> files) {
    if (!encoder_)
      throw Error(config().has_vision()
                      ? "images: no image encoder was loaded with " + model_.string() +
                            " (give its mmproj file: LoadOptions::mmproj, --mmproj)"
                      : "images: this model has no vision encoder (" + std::string(config().model.name) +
                            " reads text only; Gemma 3 4B, 12B and 27B see images)");
    const VisionDims& v = config().vision;
    text::EncodedImages out;
    out.rows = v.tokens_per_image;
    out.image_bytes = uint64_t(out.rows) * config().model.hidden * sizeof(float);
    const uint64_t sizes[] = {out.image_bytes * std::max<size_t>(files.size(), 1)};
    auto buffer = std::make_shared<gpu::BufferSet>(core_.context(), sizes, gpu::MemoryKind::HostVisible,
                                                   "image soft tokens");
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string name = "image " + std::to_string(i + 1) + " of " + std::to_string(files.size());
      const image::RgbImage rgb = image::decode_image(std::as_bytes(std::span(files[i])), name);
      encoder_->encode(image::pixel_values(rgb, v));
      const std::vector<float> soft = encoder_->soft_tokens();
      vision::check_soft_tokens(soft, config().model.hidden, name, core_.context().info().name);
      std::memcpy(static_cast<std::byte*>((*buffer)[0].mapped) + i * out.image_bytes, soft.data(), out.image_bytes);
    }
    out.soft_tokens = std::move(buffer);
    return out;
  }

  // Scans every loaded weight for NaN and Inf on the GPU (engine/check_tensors.hpp);
  // throws unicorn::Error naming the first bad tensor and element.
  TensorCheck check_tensors() { return unicorn::check_tensors(core_); }
  std::vector<float> forward_logits(std::span<const int32_t> tokens) { return core_.forward_logits(tokens); }
  // Teacher forcing through the batched pass (one step of `batch`: row i is
  // batch[i]'s raw logits) and through a prefill pass of several streams'
  // chunks (a row for each chunk that ends its prompt): unicorn-bench's
  // --invariance compares them bit for bit.
  std::vector<float> forward_logits(std::span<const StreamToken> batch) { return core_.forward_logits(batch); }
  std::vector<float> forward_logits(std::span<const PromptChunk> chunks) { return core_.forward_logits(chunks); }
  int32_t prefill(std::span<const int32_t> tokens) { return core_.prefill(tokens); }
  // Runs tokens into the KV cache and computes no logits (perplexity's unscored context).
  void feed(std::span<const int32_t> tokens) { core_.feed(0, tokens); }
  int32_t decode(int32_t token) { return core_.decode(token); }
  void reset() { core_.reset(); }
  // How prefill() and decode() choose tokens (default: greedy), every stream.
  void set_sampling(const SamplingParams& p) { core_.set_sampling(p); }
  uint32_t position() const { return core_.position(); }
  // Several streams (config().streams, each with its own KV cache and position):
  //   engine.prefill(s, prompt_s) for each stream s (or several streams' prompt
  //   chunks in one pass: engine.prefill(chunks), config().prefill_chunk rows at most), then
  //   next = engine.decode(batch)   // batch: {stream, token} per stream, one pass over the weights
  int32_t prefill(uint32_t stream, std::span<const int32_t> tokens) { return core_.prefill(stream, tokens); }
  std::vector<int32_t> prefill(std::span<const PromptChunk> chunks) { return core_.prefill(chunks); }
  // One pass's chunks from `waiting` (each a stream's prompt tokens still to
  // feed, in order): as many as config().prefill_chunk rows hold, each starting
  // at a multiple of the prefill attention tile's tokens, the last cut short
  // where the rows run out (then it does not end its prompt).
  std::vector<PromptChunk> prefill_pass(std::span<const PromptChunk> waiting) const {
    return core_.prefill_pass(waiting);
  }
  // That tile's tokens, and where a chunk after `rows` rows of a pass starts:
  // the rows a pass computes, padding included (unicorn-bench's prefill passes).
  uint32_t prefill_alignment() const { return core_.prefill_alignment(); }
  uint32_t prefill_segment_start(uint32_t rows) const { return core_.prefill_segment_start(rows); }
  std::vector<int32_t> decode(std::span<const StreamToken> batch) { return core_.decode(batch); }
  void reset(uint32_t stream) { core_.reset(stream); }
  uint32_t position(uint32_t stream) const { return core_.position(stream); }
  uint32_t streams() const { return core_.streams(); }
  // One stream's sampling (its draws start over); the tokens its KV cache holds.
  void set_sampling(uint32_t stream, const SamplingParams& p) { core_.set_sampling(stream, p); }
  // Structured output: the stream's next tokens only among those a mask of
  // mask_words() words allows (a grammar matcher's; EngineCore::constrain).
  void constrain(uint32_t stream, std::span<const uint32_t> allowed) { core_.constrain(stream, allowed); }
  uint32_t mask_words() const { return core_.mask_words(); }
  std::span<const int32_t> tokens(uint32_t stream) const { return core_.tokens(stream); }
  // Keep a stream's first `pos` tokens, so a prompt sharing them prefills only
  // the rest (the prompt cache); can_rewind says whether the sliding-window
  // layers still hold what the next token would see.
  bool can_rewind(uint32_t stream, uint32_t pos) const { return core_.can_rewind(stream, pos); }
  void rewind(uint32_t stream, uint32_t pos) { core_.rewind(stream, pos); }
  // Speculative decoding's parts (EngineCore::verify; generate() and chat()
  // run them with a draft; unicorn-bench times them): the verify pass's rows,
  // several tokens of a stream checked in one pass, and the draw counter.
  uint32_t verify_rows() const { return core_.verify_rows(); }
  std::vector<int32_t> verify(uint32_t stream, std::span<const int32_t> tokens) { return core_.verify(stream, tokens); }
  uint32_t draws(uint32_t stream) const { return core_.draws(stream); }
  void set_draws(uint32_t stream, uint32_t n) { core_.set_draws(stream, n); }
  // Positions each stream's KV cache holds (EngineOptions::context, else the
  // compiled context), and the device memory the engine allocated, per kind.
  uint32_t context_size() const { return core_.context_size(); }
  DeviceMemory device_memory() const { return core_.device_memory(); }
  // Tokens a stream may hold: context_size(), or less.
  uint32_t context_limit() const { return core_.context_limit(); }
  void set_context_limit(uint32_t tokens) { core_.set_context_limit(tokens); }
  // Whether a batched step's kernels depend on its size (see EngineCore::BatchPasses).
  using BatchPasses = detail::EngineCore::BatchPasses;
  void set_batch_passes(BatchPasses p) { core_.set_batch_passes(p); }

  // Measurement (unicorn-bench): device time per kernel of a prefill of
  // `tokens` or of a decode step of n streams, which kernel a step of n
  // streams runs its products on, and the pipeline cache found at start-up.
  using Profile = detail::EngineCore::Profile;
  Profile profile(std::span<const int32_t> tokens) { return core_.profile(tokens); }
  Profile profile_batch(uint32_t n) { return core_.profile_batch(n); }
  std::string batch_linear_path(uint32_t n) const { return core_.batch_linear_path(n); }
  // Every recorded pass, dispatch by dispatch: kernel, constants, workgroups, barriers.
  std::string plan() const { return core_.plan(); }
  // What prefill's products run on (EngineOptions::products), in words.
  std::string prefill_linear_path() const { return core_.products_path(); }
  bool tensor_units() const { return core_.tensor_units(); }
  // What a decode step's block-format products run on, in words (unicorn-bench).
  std::string decode_linear_path() const {
    return core_.int_dot() ? "matvec_dot: block formats on integer dot products, inputs as bytes (q8) per block of 32"
                           : "matvec: fp32";
  }
  gpu::PipelineCache::Stats pipeline_cache() const { return core_.pipeline_cache(); }

  const gpu::Context& context() const { return core_.context(); }
  // The engine's internals, for the library's own layers (the server's
  // scheduler) and tests; host code and the programs in examples/ and tools/
  // need none of it (static.products_use_the_public_api holds them to that).
  detail::EngineCore& core() { return core_; }

 private:
  detail::EngineCore* draft_core() { return draft_loaded_ ? &draft_->core_ : nullptr; }

  // The draft's weights, and its vocabulary against the model's: the
  // compiled vocabularies are one size (diag::check_pair) and the loader
  // checks each file's rows; where the draft's file carries a vocabulary, its
  // token strings must be those of the tokenizer the model runs with (its own,
  // or LoadOptions::tokenizer), id for id over the rows. A draft file that carries none is
  // taken to share the model's (the draft's tokenizer itself is never used).
  void load_draft(const std::filesystem::path& file, const LoadProgress& progress) {
    // The draft's engine: the same device and options, a KV cache as long as
    // the model's (diag::check_pair: the draft's compiled context is at least that).
    if (!draft_) {
      EngineOptions options = options_;
      options.context = std::min(core_.context_size(), deployment_.draft->config.max_context);
      options.streams = 0;  // its one
      draft_ = std::make_unique<AnyEngine>(core_.context(), *deployment_.draft, options);
    }
    const LoadReport report = draft_->load(file, {.progress = progress});
    if (!report.vocabulary.empty() && has_tokenizer()) {
      const std::optional<text::Tokenizer> theirs = text::model_tokenizer(report.vocabulary);
      const text::Tokenizer& ours = tokenizer();
      if (theirs) {
        const std::string why = file.string() + ": the draft's vocabulary is not the one " + model_.string() +
                                " runs with; a draft must share the model's tokenizer (Gemma 3 270M or 1B for "
                                "Gemma 3 4B, 12B and 27B): ";
        // The ids either engine can choose: a tokenizer.json may name tokens
        // past the embedding's rows (Gemma 3's <image_soft_token>), a GGUF not.
        const size_t ids = std::min({size_t(config().model.vocab), ours.vocab_size(), theirs->vocab_size()});
        for (size_t id = 0; id < ids; ++id)
          if (theirs->token_text(int32_t(id)) != ours.token_text(int32_t(id)))
            throw Error(why + "token " + std::to_string(id) + " is '" + std::string(theirs->token_text(int32_t(id))) +
                        "' in the draft and '" + std::string(ours.token_text(int32_t(id))) + "' in the model");
      }
    }
    draft_loaded_ = true;
  }

  // The image encoder of a deployment that has one: from `mmproj`, else the
  // one mmproj*.gguf beside the model, else a Hugging Face directory's own.
  void load_vision(const std::filesystem::path& model, const std::filesystem::path& mmproj) {
    encoder_.reset();
    vision_source_.clear();
    namespace fs = std::filesystem;
    if (!config().has_vision()) {
      if (!mmproj.empty())
        throw Error(mmproj.string() + ": " + std::string(config().model.name) +
                    " has no image encoder compiled in; an mmproj file goes with Gemma 3 4B, 12B or 27B");
      return;
    }
    fs::path file = mmproj;
    if (file.empty() && !fs::is_directory(model)) {
      std::vector<fs::path> found;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(model.parent_path().empty() ? "." : model.parent_path(), ec))
        if (e.path().filename().string().starts_with("mmproj") && e.path().extension() == ".gguf")
          found.push_back(e.path());
      if (found.size() > 1)
        throw Error(model.string() + ": " + std::to_string(found.size()) + " mmproj*.gguf files lie beside it (" +
                    found[0].filename().string() + ", " + found[1].filename().string() +
                    "...): name the image encoder's with LoadOptions::mmproj (--mmproj)");
      if (found.empty()) return;  // text only
      file = found[0];
    }
    const uint32_t hidden = config().model.hidden;
    const auto build = [&](const VisionWeights& w) {
      check_vision_fits_text(w, config().model);
      check_vision_fits(w, config().vision, !file.empty());
      const vision::WeightTable t = vision::weight_table(w);
      encoder_ = std::make_unique<vision::VisionEncoder>(core_.context(), config().vision, hidden, t.tensors);
      vision_source_ = w.source;
    };
    if (!file.empty()) {
      const io::GgufFile g = io::GgufFile::open(file);
      build(vision_from_mmproj(g));
    } else {
      const io::SafetensorsModel st = io::SafetensorsModel::open(model);
      const auto vision = [](const io::SafeTensor& t) { return t.name.find("vision_tower.") != std::string::npos; };
      if (std::ranges::none_of(st.tensors(), vision)) return;  // a text-only directory
      build(vision_from_hf(model, st));
    }
  }

  void check_fits(size_t prompt_tokens) const {
    if (prompt_tokens >= core_.context_limit())
      throw Error("the prompt is " + std::to_string(prompt_tokens) + " tokens; the context holds " +
                  std::to_string(core_.context_limit()));
  }

  std::unique_ptr<gpu::Context> owned_ctx_;
  detail::EngineCore core_;
  CompiledDeployment deployment_;
  mutable std::optional<text::Tokenizer> tokenizer_;  // built by tokenizer() from vocabulary_
  std::filesystem::path vocabulary_;                  // where the model's own tokenizer is (LoadReport::vocabulary)
  std::filesystem::path model_;
  std::unique_ptr<vision::VisionEncoder> encoder_;  // a deployment with vision whose weights were found
  std::string vision_source_;
  EngineOptions options_;             // the draft's engine is made with them
  std::unique_ptr<AnyEngine> draft_;  // a deployment with a draft: its engine, from the first load() that names one
  bool draft_loaded_ = false;         // its weights are in (has_draft)
};

template <Deployment D>
class Engine : public AnyEngine {
 public:
  static constexpr DeploymentConfig kConfig = D::kConfig;
  static constexpr const auto& kLayout = kLayoutOf<D>;
  static constexpr const Budget& kBudget = kBudgetOf<D>;  // bytes per pool and tensor group
  static_assert(diag::check_deployment<D>());
  static constexpr uint32_t kStreams = kConfig.streams;

  // D as a run-time value (for AnyEngine, or code compiled once for any deployment).
  static CompiledDeployment compiled() { return {kConfig, kLayout.view(), kBudget, compiled_draft<D>()}; }

  explicit Engine(const EngineOptions& options = {}) : AnyEngine(compiled(), options) {}
  explicit Engine(gpu::Context& ctx, const EngineOptions& options = {}) : AnyEngine(ctx, compiled(), options) {}
};

}  // namespace unicorn
