// unicorn-bench's entries for the test models: kGemma3Tiny (catalog.hpp says
// why a file of their own), and the built-in demo model with its draft in the
// demo's scheme (F16, a Q4_0 embedding), for --draft's real acceptance on
// held-out text (--text).
#include "catalog.hpp"

std::vector<unicorn::examples::bench::Entry> unicorn::examples::bench::catalog_tiny() {
  constexpr Scheme kDemoScheme = deployments::Gemma3_Demo::kConfig.scheme;
  auto all = entries_of<kGemma3Tiny>();
  for (const Entry& e : entries(static_cast<std::tuple<Bench<kGemma3Demo, kDemoScheme>,
                                                      Bench<kGemma3DemoDraft, kDemoScheme>>*>(nullptr)))
    all.push_back(e);
  return all;
}
