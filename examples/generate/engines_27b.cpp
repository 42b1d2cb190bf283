// unicorn-generate's engines for kGemma3_27B (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::generate::engines_27b() {
  return compiled<Formats<kGemma3_27B>>();
}
