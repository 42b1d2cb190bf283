// unicorn/engine/options.hpp — what is chosen when an engine is created, as
// values (DESIGN.md decision 8: the library reads no environment for them).
//
// The deployment type fixes everything the compile-time checks bound; these
// choose within it: how many KV cache positions each stream gets (at most the
// compiled context).
#pragma once

#include <cstdint>

namespace unicorn {

struct EngineOptions {
  // KV cache positions per stream; 0: the compiled DeploymentConfig::max_context.
  // Global layers keep one per position of the context; the sliding-window
  // layers keep a ring of window + prefill_chunk positions, or the context
  // where it is shorter (layout.hpp). More than the compiled context is an error.
  uint32_t context = 0;
};

}  // namespace unicorn
