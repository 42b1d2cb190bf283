// A generator binary's own translation unit: its deployment
// (UNICORN_DEPLOYMENT_HEADER / UNICORN_DEPLOYMENT, checked at compile time
// here) and its defaults. Everything else is program.cpp, compiled once per
// build, so a build of many generators compiles the engine once. Usage:
// program.cpp's first comment.
#include UNICORN_DEPLOYMENT_HEADER
#include "program.hpp"

int main(int argc, char** argv) {
  const unicorn::CompiledDeployment engine = unicorn::compiled_deployment<UNICORN_DEPLOYMENT>();
  return unicorn::examples::generate_main(argc, argv, {&engine, 1}, this_program());
}
