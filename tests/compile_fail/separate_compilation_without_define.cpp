// expect: unicorn/separate_compilation.hpp compiles the engine's code once for a build that defines UNICORN_SEPARATE_COMPILATION
// The one translation unit of the engine's code in a header-only build would
// define every function a second time beside the inline ones (base/linkage.hpp).
#include <unicorn/separate_compilation.hpp>
