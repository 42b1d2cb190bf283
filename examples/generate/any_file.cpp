// unicorn-generate's own translation unit: the built-in demo model's engine
// first (it runs with no --model), then every official size's
// (examples/official/engines.hpp) and the speculative pairs; a model file
// (and --draft's) picks the one that runs it.
// Usage: program.cpp's first comment.
#include "../official/engines.hpp"
#include "program.hpp"
#include "unicorn/gemma3.hpp"

int main(int argc, char** argv) {
  namespace official = unicorn::examples::official;
  std::vector<unicorn::CompiledDeployment> engines{unicorn::compiled_deployment<unicorn::deployments::Gemma3_Demo>()};
  for (const unicorn::CompiledDeployment& e : official::engines(official::Shape::Generator)) engines.push_back(e);
  for (const unicorn::CompiledDeployment& e : official::pairs(official::Shape::Generator)) engines.push_back(e);  // for --draft
  return unicorn::examples::generate_main(argc, argv, engines, this_program());
}
