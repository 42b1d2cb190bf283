// A server binary's own translation unit: its deployment
// (UNICORN_DEPLOYMENT_HEADER / UNICORN_DEPLOYMENT, checked at compile time
// here) and its defaults. Everything else is program.cpp and serve.cpp,
// compiled once per build.
#include UNICORN_DEPLOYMENT_HEADER
#include "program.hpp"

int main(int argc, char** argv) {
  const unicorn::CompiledDeployment deployment = unicorn::compiled_deployment<UNICORN_DEPLOYMENT>();
  return unicorn::examples::serve_main(argc, argv, {&deployment, 1}, this_program());
}
