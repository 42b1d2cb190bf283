// unicorn-generate's engines for kGemma3_4B (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::generate::engines_4b() {
  auto all = compiled<EverySize<kGemma3_4B>>();
  for (const CompiledDeployment& e : compiled<KMixes<kGemma3_4B>>()) all.push_back(e);
  return all;
}
