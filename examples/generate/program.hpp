// The generator program's entry point, compiled once for every deployment of
// a build (program.cpp); each generator binary's main.cpp calls it with its
// own deployment and defaults.
#pragma once
#include "../program.hpp"
#include "unicorn/compiled_deployment.hpp"

namespace unicorn::examples {

// The whole generator (flags, loading, generation, chat) for `deployment`;
// returns the process's exit status (see program.cpp).
int generate_main(int argc, char** argv, const CompiledDeployment& deployment, const ProgramInfo& program);

}  // namespace unicorn::examples
