// A generator binary's own translation unit: its deployment
// (UNICORN_DEPLOYMENT_HEADER / UNICORN_DEPLOYMENT, checked at compile time
// here) and its defaults. Everything else is program.cpp, compiled once per
// build, so a build of many generators compiles the engine once. Usage:
// program.cpp's first comment. UNICORN_DRAFTED_DEPLOYMENT, where defined, is
// a second engine: the same model with a draft, which --draft picks
// (unicorn-chat's: the demo pair).
#include UNICORN_DEPLOYMENT_HEADER
#include "program.hpp"

int main(int argc, char** argv) {
#ifdef UNICORN_DRAFTED_DEPLOYMENT
  const unicorn::CompiledDeployment engines[] = {unicorn::compiled_deployment<UNICORN_DEPLOYMENT>(),
                                                 unicorn::compiled_deployment<UNICORN_DRAFTED_DEPLOYMENT>()};
  return unicorn::examples::generate_main(argc, argv, engines, this_program());
#else
  const unicorn::CompiledDeployment engine = unicorn::compiled_deployment<UNICORN_DEPLOYMENT>();
  return unicorn::examples::generate_main(argc, argv, {&engine, 1}, this_program());
#endif
}
