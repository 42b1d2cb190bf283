// unicorn-generate's engines for kGemma3_270M (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::generate::engines_270m() {
  return compiled<Formats<kGemma3_270M>>();
}
