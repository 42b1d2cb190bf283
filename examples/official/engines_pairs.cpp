// The ready-made speculative pairs (unicorn/gemma3.hpp's Gemma3_Pairs: the demo
// drafted by its draft; 4B, 12B and 27B by 270M; 12B and 27B by 1B), for
// unicorn-generate's --draft (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::official::pairs() {
  return compiled(static_cast<deployments::Gemma3_Pairs*>(nullptr));
}
