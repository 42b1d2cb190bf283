// The official engines for kGemma3_27B, both shapes (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::official::engines_27b(Shape shape) {
  return compiled<kGemma3_27B>(shape);
}
