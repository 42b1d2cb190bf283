// The official engines for kGemma3_270M, both shapes (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::official::engines_270m(Shape shape) {
  return compiled<kGemma3_270M>(shape);
}
