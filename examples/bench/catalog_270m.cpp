// unicorn-bench's entries for kGemma3_270M (catalog.hpp says why a file of their own).
#include "catalog.hpp"

std::vector<unicorn::examples::bench::Entry> unicorn::examples::bench::catalog_270m() {
  auto all = entries_of<kGemma3_270M>();
  for (const Entry& e : k_entries_of<kGemma3_270M>()) all.push_back(e);
  return all;
}
