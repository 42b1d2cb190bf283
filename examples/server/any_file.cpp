// unicorn-server's own translation unit: the built-in demo model's engine
// first (it serves with no --model), then every official size's in every
// format its files come in, each with the per-size servers' slots and context
// (examples/official/engines.hpp), then the speculative pairs; a model file
// (and --draft's) picks the one that serves it.
// Usage: program.cpp's first comment.
#include "../official/engines.hpp"
#include "program.hpp"
#include "unicorn/gemma3.hpp"

int main(int argc, char** argv) {
  namespace official = unicorn::examples::official;
  std::vector<unicorn::CompiledDeployment> engines{
      unicorn::compiled_deployment<unicorn::deployments::Gemma3_Demo_Server>()};
  for (const unicorn::CompiledDeployment& e : official::engines(official::Shape::Server)) engines.push_back(e);
  for (const unicorn::CompiledDeployment& e : official::pairs(official::Shape::Server)) engines.push_back(e);  // for --draft
  return unicorn::examples::serve_main(argc, argv, engines, this_program());
}
