// The official engines for kGemma3_1B, both shapes (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::official::engines_1b(Shape shape) {
  return compiled<kGemma3_1B>(shape);
}
