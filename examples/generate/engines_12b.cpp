// unicorn-generate's engines for kGemma3_12B (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::generate::engines_12b() {
  auto all = compiled<EverySize<kGemma3_12B>>();
  for (const CompiledDeployment& e : compiled<KMixes<kGemma3_12B>>()) all.push_back(e);
  return all;
}
