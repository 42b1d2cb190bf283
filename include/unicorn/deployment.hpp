// unicorn/deployment.hpp — a deployment: model, scheme and run-time budget.
//
// A config is a value; a deployment is a type (STYLE.md). A deployment type is
// any type with `static constexpr DeploymentConfig kConfig`. The engine, the
// layout and every compile-time check are derived from that one value.
#pragma once

#include "unicorn/model/dims.hpp"
#include "unicorn/quant/scheme.hpp"

namespace unicorn {

struct DeploymentConfig {
  ModelDims model;
  Scheme scheme;
  uint32_t max_context;    // KV cache length in positions (<= model.max_context)
  uint32_t prefill_chunk;  // prompt tokens per prefill pass (matrix-matrix work)
};

template <class D>
concept Deployment = requires {
  { D::kConfig } -> std::convertible_to<DeploymentConfig>;
};

// Builds a deployment config with defaults a user would pick: the full model
// context (capped where a 128K KV cache is rarely wanted) and 512-token prefill.
constexpr DeploymentConfig make_deployment(const ModelDims& model, Scheme scheme,
                                           uint32_t max_context = 0, uint32_t prefill_chunk = 512) {
  const uint32_t ctx = max_context ? max_context : model.max_context;
  return {model, scheme, ctx, prefill_chunk < ctx ? prefill_chunk : ctx};
}

}  // namespace unicorn
