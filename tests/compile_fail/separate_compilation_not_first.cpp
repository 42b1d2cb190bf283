// expect: unicorn/separate_compilation.hpp must come before any other unicorn header in its translation unit
// A header included before it has already skipped its definitions block
// (UNICORN_DEFINE_HERE was 0 then), so its code would be missing at link time.
#define UNICORN_SEPARATE_COMPILATION 1
#include <unicorn/base/linkage.hpp>
#include <unicorn/separate_compilation.hpp>
