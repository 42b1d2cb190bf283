// unicorn/layout/compiled_deployment.hpp — a deployment type as a run-time value,
// after its compile-time checks; the one thing a binary's own translation unit
// needs from the engine.
//
// A generator's or server's main.cpp names its deployment and hands
// compiled_deployment<D>() to program code compiled once for every deployment
// of a build (examples/*/program.cpp, which include engine.hpp). This header
// has the deployment's constexpr layout, budget and checks (layout/diag.hpp) and none
// of the run-time engine (Vulkan, the recorded passes, the loaders), so such a
// translation unit compiles in about a second instead of parsing the whole
// engine (notes/build_time.md).
#pragma once

#include "unicorn/config/deployment.hpp"
#include "unicorn/layout/budget.hpp"
#include "unicorn/layout/diag.hpp"
#include "unicorn/layout/layout.hpp"

namespace unicorn {

// A compiled deployment as a run-time value: what Engine<D> fixes and checks
// at compile time (config, static layout, bytes per pool), for code compiled
// once for every deployment of a build instead of once per deployment (the
// generator, chat and server programs: examples/*/program.cpp), and for a
// binary that holds several and picks one at run time. The layout and budget
// are D's constexpr tables, alive for the whole program.
// A deployment with a draft (speculative decoding) carries the draft's, whose
// engine AnyEngine builds beside its own (engine.hpp).
struct CompiledDeployment {
  const DeploymentConfig& config;
  LayoutView layout;
  const Budget& budget;  // the draft's bytes included (Budget: draft_bytes)
  const CompiledDeployment* draft = nullptr;  // DraftOf<D>'s, alive for the whole program
};

template <Deployment D>
CompiledDeployment compiled_deployment();

// The draft of D as a run-time value (nullptr: D has none).
template <Deployment D>
const CompiledDeployment* compiled_draft() {
  if constexpr (D::kConfig.has_draft()) {
    static const CompiledDeployment draft = compiled_deployment<DraftOf<D>>();
    return &draft;
  } else {
    return nullptr;
  }
}

// D as a run-time value, after the compile-time checks Engine<D> makes
// (diag::check_deployment: each failure is a static_assert that says what to change).
template <Deployment D>
CompiledDeployment compiled_deployment() {
  static_assert(diag::check_deployment<D>());
  return {D::kConfig, kLayoutOf<D>.view(), kBudgetOf<D>, compiled_draft<D>()};
}

}  // namespace unicorn
