// The server program's entry point, compiled once for every deployment of a
// build (program.cpp, with the HTTP front end serve.cpp); each server
// binary's main.cpp calls it with its own deployment and defaults.
#pragma once
#include "../program.hpp"
#include "unicorn/compiled_deployment.hpp"

namespace unicorn::examples {

// The whole server (flags, loading, serving until SIGINT/SIGTERM) for
// `deployment`; returns the process's exit status (see program.cpp).
int serve_main(int argc, char** argv, const CompiledDeployment& deployment, const ProgramInfo& program);

}  // namespace unicorn::examples
