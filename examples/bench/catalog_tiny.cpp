// unicorn-bench's entries for kGemma3Tiny (catalog.hpp says why a file of their own).
#include "catalog.hpp"

std::vector<unicorn::examples::bench::Entry> unicorn::examples::bench::catalog_tiny() {
  return entries_of<kGemma3Tiny>();
}
