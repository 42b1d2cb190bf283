// The engine's host code, compiled once for every program of a build that
// links unicorn_engine_code (cmake/UnicornEngine.cmake, unicorn/base/linkage.hpp).
#include <unicorn/separate_compilation.hpp>
