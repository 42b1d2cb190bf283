// The generator program's entry point, compiled once for every deployment of
// a build (program.cpp); each generator binary's main.cpp calls it with its
// own deployments (one, or several that a model file picks among) and defaults.
#pragma once
#include "../program.hpp"
#include <span>

#include "unicorn/layout/compiled_deployment.hpp"

namespace unicorn::examples {

// The whole generator (flags, loading, generation, chat) for `engines` (the
// first runs when no --model is given); returns the process's exit status
// (see program.cpp).
int generate_main(int argc, char** argv, std::span<const CompiledDeployment> engines, const ProgramInfo& program);

}  // namespace unicorn::examples
