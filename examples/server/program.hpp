// The server program's entry point, compiled once for every deployment of a
// build (program.cpp, with the HTTP front end serve.cpp); each server
// binary's main.cpp calls it with its own deployment and defaults, and
// unicorn-server's any_file.cpp with every engine it holds.
#pragma once
#include <span>

#include "../program.hpp"
#include "unicorn/layout/compiled_deployment.hpp"

namespace unicorn::examples {

// The whole server (flags, loading, serving until SIGINT/SIGTERM) for the one
// of `engines` that runs --model's file (the first without --model); returns
// the process's exit status (see program.cpp).
int serve_main(int argc, char** argv, std::span<const CompiledDeployment> engines, const ProgramInfo& program);

}  // namespace unicorn::examples
