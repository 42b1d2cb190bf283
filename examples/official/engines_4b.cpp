// The official engines for kGemma3_4B, both shapes (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::official::engines_4b(Shape shape) {
  return compiled<kGemma3_4B>(shape);
}
