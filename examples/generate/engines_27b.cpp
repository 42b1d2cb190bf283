// unicorn-generate's engines for kGemma3_27B (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::generate::engines_27b() {
  auto all = compiled<EverySize<kGemma3_27B>>();
  for (const CompiledDeployment& e : compiled<KMixes<kGemma3_27B>>()) all.push_back(e);
  return all;
}
