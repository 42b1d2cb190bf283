// The ready-made speculative pairs (unicorn/gemma3.hpp): Gemma3_Pairs for the
// generator (the demo drafted by its draft; 4B, 12B and 27B by 270M; 12B and
// 27B by 1B), Gemma3_Server_Pairs for the server, for their --draft
// (engines.hpp says why a file of their own).
#include "engines.hpp"

std::vector<unicorn::CompiledDeployment> unicorn::examples::official::pairs(Shape shape) {
  return shape == Shape::Server ? compiled(static_cast<deployments::Gemma3_Server_Pairs*>(nullptr))
                                : compiled(static_cast<deployments::Gemma3_Pairs*>(nullptr));
}
