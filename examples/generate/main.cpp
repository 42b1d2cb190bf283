// A generator binary's own translation unit: its deployment
// (UNICORN_DEPLOYMENT_HEADER / UNICORN_DEPLOYMENT, checked at compile time
// here) and its defaults. Everything else is program.cpp, compiled once per
// build, so a build of many generators compiles the engine once.
//
//   unicorn-gemma3-1b --model gemma-3-1b-it-q4_0.gguf --chat -p "Why is the sky blue?"
//   unicorn-gemma3-1b --model DIR --tokens 2,94,2245 --logits-out logits.f32
//   unicorn-gemma3-1b --layout
//   unicorn-gemma3-27b-phoenix-ffn-gtt --placement
#include UNICORN_DEPLOYMENT_HEADER
#include "program.hpp"

int main(int argc, char** argv) {
  return unicorn::examples::generate_main(argc, argv, unicorn::compiled_deployment<UNICORN_DEPLOYMENT>(),
                                          this_program());
}
