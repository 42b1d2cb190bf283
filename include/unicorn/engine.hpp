// unicorn/engine.hpp — Engine<Deployment>: one Gemma 3 deployment, typed.
//
//   #include <unicorn/gemma27b.hpp>
//   unicorn::Gemma3_27B engine;                 // Vulkan device, buffers, recorded passes
//   engine.load("gemma-3-27b-it-q4_0.gguf");    // checked against the compiled layout
//
// The deployment type fixes model, scheme, budget and placement (which pool
// each tensor group lives in, checked against a hardware profile) at compile
// time; every invariant is checked here with a message that says what to
// change, and the run-time half (AnyEngine over engine/core.hpp) receives the
// constexpr layout. Code that should not be compiled once per deployment takes
// an AnyEngine& or a CompiledDeployment.
#pragma once

#include <filesystem>
#include <memory>

#include "unicorn/compiled_deployment.hpp"
#include "unicorn/deployment.hpp"
#include "unicorn/engine/check_tensors.hpp"
#include "unicorn/diag.hpp"
#include "unicorn/engine/core.hpp"
#include "unicorn/engine/loader.hpp"
#include "unicorn/layout/layout.hpp"
#include "unicorn/placement/budget.hpp"

namespace unicorn {

// The engine of a compiled deployment chosen at run time; Engine<D> is this
// with D's compile-time checks and constants. Its code does not depend on D,
// so a build compiles it once however many deployments it holds.
class AnyEngine {
 public:
  // Opens the default Vulkan device (UNICORN_DEVICE / UNICORN_VALIDATION apply).
  explicit AnyEngine(const CompiledDeployment& d)
      : owned_ctx_(std::make_unique<gpu::Context>()), core_(*owned_ctx_, d.config, d.layout), deployment_(d) {}
  AnyEngine(gpu::Context& ctx, const CompiledDeployment& d) : core_(ctx, d.config, d.layout), deployment_(d) {}

  const CompiledDeployment& deployment() const { return deployment_; }
  const DeploymentConfig& config() const { return deployment_.config; }

  // Loads a GGUF file or a Hugging Face directory; throws unicorn::Error naming
  // the first mismatch with this engine.
  LoadReport load(const std::filesystem::path& model, const LoadProgress& progress = {}) {
    return load_model(core_, model, progress);
  }
  // Scans every loaded weight for NaN and Inf on the GPU (engine/check_tensors.hpp);
  // throws unicorn::Error naming the first bad tensor and element.
  TensorCheck check_tensors() { return unicorn::check_tensors(core_); }
  std::vector<float> forward_logits(std::span<const int32_t> tokens) { return core_.forward_logits(tokens); }
  int32_t prefill(std::span<const int32_t> tokens) { return core_.prefill(tokens); }
  // Runs tokens into the KV cache and computes no logits (perplexity's unscored context).
  void feed(std::span<const int32_t> tokens) { core_.feed(0, tokens); }
  int32_t decode(int32_t token) { return core_.decode(token); }
  void reset() { core_.reset(); }
  void set_sampling(const SamplingParams& p) { core_.set_sampling(p); }
  uint32_t position() const { return core_.position(); }
  // Several streams (config().streams, each with its own KV cache and position):
  //   engine.prefill(s, prompt_s) for each stream s (or several streams' prompt
  //   chunks in one pass: engine.prefill(chunks), config().prefill_chunk rows at most), then
  //   next = engine.decode(batch)   // batch: {stream, token} per stream, one pass over the weights
  int32_t prefill(uint32_t stream, std::span<const int32_t> tokens) { return core_.prefill(stream, tokens); }
  std::vector<int32_t> prefill(std::span<const PromptChunk> chunks) { return core_.prefill(chunks); }
  std::vector<int32_t> decode(std::span<const StreamToken> batch) { return core_.decode(batch); }
  void reset(uint32_t stream) { core_.reset(stream); }
  uint32_t position(uint32_t stream) const { return core_.position(stream); }
  const gpu::Context& context() const { return core_.context(); }
  detail::EngineCore& core() { return core_; }

 private:
  std::unique_ptr<gpu::Context> owned_ctx_;
  detail::EngineCore core_;
  CompiledDeployment deployment_;
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
  static CompiledDeployment compiled() { return {kConfig, kLayout.view(), kBudget}; }

  Engine() : AnyEngine(compiled()) {}
  explicit Engine(gpu::Context& ctx) : AnyEngine(ctx, compiled()) {}
};

}  // namespace unicorn
