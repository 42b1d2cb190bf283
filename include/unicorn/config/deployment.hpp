// unicorn/config/deployment.hpp — a deployment: model, scheme, run-time budget, and
// where its memory lives.
//
// A config is a value; a deployment is a type (STYLE.md). A deployment type is
// any type with `static constexpr DeploymentConfig kConfig`. The engine, the
// layout and every compile-time check are derived from that one value.
//
//   make_deployment(kGemma3_27B, schemes::kQ4_0_QAT, 32768)
//       .on(profiles::Phoenix<GiB(16)>{})
//       .placed(placement::Attention<Pool::Vram>::Embeddings<Pool::Vram>::Ffn<Pool::Gtt>{})
//
// With neither .on() nor .placed() a deployment is "everything in Vram" on the
// generic profile, whose pools are unbounded: it compiles and runs as before.
#pragma once

#include "unicorn/config/dims.hpp"
#include "unicorn/config/placement.hpp"
#include "unicorn/config/vision_dims.hpp"
#include "unicorn/config/profiles.hpp"
#include "unicorn/quant/scheme.hpp"

namespace unicorn {

// The most tokens a draft may propose a round (DeploymentConfig::draft_max):
// the verify pass then has 17 rows, within every official deployment's passes.
inline constexpr uint32_t kMaxDraftTokens = 16;

// What a scheme's mix rules read of the model (format_of).
constexpr MixShape mix_shape(const ModelDims& m) { return {m.layers, m.kv_heads ? m.heads / m.kv_heads : 1}; }

struct DeploymentConfig {
  ModelDims model;
  Scheme scheme;
  uint32_t max_context;    // KV cache length in positions (<= model.max_context): the most an engine takes
  uint32_t prefill_chunk;  // prompt tokens per prefill pass (matrix-matrix work)
  Placement placement = placement::everything_in(Pool::Vram);
  HardwareProfile hardware = profiles::kGeneric;
  // Sequences served at once: each has its own KV cache (layout.hpp) and
  // position; a batched decode step takes one token of each (engine/core.hpp).
  uint32_t streams = 1;
  // The image encoder beside the text model (config/vision_dims.hpp); a
  // deployment without one has vision.name empty and refuses images.
  VisionDims vision{};
  // Speculative decoding: the deployment whose model drafts tokens for this
  // one (a static constexpr DeploymentConfig; nullptr: none), and the most
  // tokens it drafts a round: this engine's verify pass checks them in
  // draft_max + 1 rows that read every weight once (EngineCore::verify).
  const DeploymentConfig* draft = nullptr;
  uint32_t draft_max = 0;
  // Whether `draft` is set. A flag, not `draft != nullptr`: GCC does not fold
  // a global's address compared with null in a constant expression under
  // -fsanitize=address/undefined (tools/sanitize.sh's build).
  bool drafted = false;
  // The KV cache positions an engine gets when its creator asks for none
  // (EngineOptions::context 0): 0 for max_context. Gemma 3's 128K engines
  // default to 32K (deployments::kGeneratorContext); -c opens the rest.
  uint32_t default_context = 0;

  constexpr bool has_vision() const { return !vision.name.empty(); }
  constexpr bool has_draft() const { return drafted; }
  constexpr uint32_t context_by_default() const {
    return default_context && default_context < max_context ? default_context : max_context;
  }

  // Copies with one change.
  constexpr DeploymentConfig placed(const Placement& p) const {
    DeploymentConfig c = *this;
    c.placement = p;
    return c;
  }
  template <PlacementType P>
  constexpr DeploymentConfig placed(P) const { return placed(P::kPlacement); }
  constexpr DeploymentConfig on(const HardwareProfile& h) const {
    DeploymentConfig c = *this;
    c.hardware = h;
    return c;
  }
  template <HardwareProfileType H>
  constexpr DeploymentConfig on(H) const { return on(H::kProfile); }
  constexpr DeploymentConfig with_streams(uint32_t n) const {
    DeploymentConfig c = *this;
    c.streams = n;
    return c;
  }
  // The same deployment with Gemma 3's image encoder and projector beside
  // its text model (kGemma3Siglip for 4B, 12B and 27B).
  constexpr DeploymentConfig with_vision(const VisionDims& v) const {
    DeploymentConfig c = *this;
    c.vision = v;
    return c;
  }
  // The same deployment with `d`'s model drafting up to max_tokens tokens a
  // round for it (`d` must outlive it: a deployment's static kConfig).
  constexpr DeploymentConfig with_draft(const DeploymentConfig& d, uint32_t max_tokens = kMaxDraftTokens) const {
    DeploymentConfig c = *this;
    c.draft = &d;
    c.drafted = true;
    c.draft_max = max_tokens;
    return c;
  }
  // The same deployment compiled for its max_context, whose engines take n
  // positions unless asked for another context (default_context).
  constexpr DeploymentConfig with_default_context(uint32_t n) const {
    DeploymentConfig c = *this;
    c.default_context = n;
    return c;
  }
  // The same deployment with a KV cache of n positions: the engine's run-time
  // layout for a context shorter than the compiled one (EngineOptions::context).
  constexpr DeploymentConfig with_context(uint32_t n) const {
    DeploymentConfig c = *this;
    c.max_context = n;
    return c;
  }
};

template <class D>
concept Deployment = requires {
  { D::kConfig } -> std::convertible_to<DeploymentConfig>;
};

// The deployment that drafts for D (D::kConfig.draft), as a type, so that its
// layout, budget and checks are computed as any deployment's are
// (layout/diag.hpp's check_pair, Engine<D>'s second engine).
template <Deployment D>
struct DraftOf {
  static constexpr DeploymentConfig kConfig = *D::kConfig.draft;
};

// Builds a deployment config with defaults a user would pick: the full model
// context (capped where a 128K KV cache is rarely wanted) and 512-token prefill.
constexpr DeploymentConfig make_deployment(const ModelDims& model, Scheme scheme,
                                           uint32_t max_context = 0, uint32_t prefill_chunk = 512) {
  const uint32_t ctx = max_context ? max_context : model.max_context;
  return {model, scheme, ctx, prefill_chunk < ctx ? prefill_chunk : ctx};
}

}  // namespace unicorn
