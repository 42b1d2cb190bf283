// unicorn-bench's entries for kGemma3_1B (catalog.hpp says why a file of their own).
#include "catalog.hpp"

std::vector<unicorn::examples::bench::Entry> unicorn::examples::bench::catalog_1b() {
  auto all = entries_of<kGemma3_1B>();
  for (const Entry& e : k_entries_of<kGemma3_1B>()) all.push_back(e);
  return all;
}
