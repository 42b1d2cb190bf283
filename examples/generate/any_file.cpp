// unicorn-generate's own translation unit: the built-in demo model's engine
// first (it runs with no --model), then every official size's
// (engines.hpp); a model file picks the one that runs it. Usage: program.cpp's
// first comment.
#include "engines.hpp"
#include "program.hpp"
#include "unicorn/gemma3.hpp"

int main(int argc, char** argv) {
  namespace g = unicorn::examples::generate;
  std::vector<unicorn::CompiledDeployment> engines{unicorn::compiled_deployment<unicorn::deployments::Gemma3_Demo>()};
  for (auto* size : {g::engines_270m, g::engines_1b, g::engines_4b, g::engines_12b, g::engines_27b})
    for (const unicorn::CompiledDeployment& e : size()) engines.push_back(e);
  return unicorn::examples::generate_main(argc, argv, engines, this_program());
}
