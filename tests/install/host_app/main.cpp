// A host app of the installed package: includes the 27B entry header and prints
// the deployment's compile-time layout. Constructs no engine (no GPU needed).
#include <iostream>
#include <unicorn/gemma27b.hpp>
#include <unicorn/layout/print.hpp>

static_assert(unicorn::Gemma3_27B::kConfig.model.layers == 62);

int main() {
  using Engine = unicorn::Gemma3_27B;
  unicorn::print_layout(std::cout, Engine::kConfig, Engine::kLayout.view());
  return 0;
}
