// unicorn-generate's engines for kGemma3_12B (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::generate::engines_12b() {
  return compiled<Formats<kGemma3_12B>>();
}
