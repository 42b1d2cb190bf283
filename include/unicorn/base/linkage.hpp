// unicorn/base/linkage.hpp — where the engine's host code is compiled: in every
// translation unit that uses it (header-only, the default), or once.
//
// Header-only: every function is inline, and a host needs the headers alone.
// A build of many programs over the engine (ours: the generators, the server,
// unicorn-bench, unicorn-perplexity and the tests) instead defines
// UNICORN_SEPARATE_COMPILATION for all of them and compiles
// unicorn/separate_compilation.hpp in exactly one translation unit (CMake:
// unicorn_engine_code, cmake/UnicornEngine.cmake). The headers then declare
// what that unit defines, and the engine's code is compiled once per build
// instead of once per program (notes/build_time.md).
//
// UNICORN_DECL starts such a definition: `inline` header-only, nothing when
// compiled once. A header's definitions follow its declarations in a block
//   #if UNICORN_DEFINE_HERE ... #endif
// which is compiled header-only, or in that one unit (which defines
// UNICORN_COMPILING_ENGINE_CODE before it includes anything); EngineCore's
// definitions, in files of their own, are engine/definitions.hpp's.
#pragma once

#define UNICORN_LINKAGE_INCLUDED 1
#if defined(UNICORN_SEPARATE_COMPILATION)
#define UNICORN_DECL
#if defined(UNICORN_COMPILING_ENGINE_CODE)
#define UNICORN_DEFINE_HERE 1
#else
#define UNICORN_DEFINE_HERE 0
#endif
#else
#define UNICORN_DECL inline
#define UNICORN_DEFINE_HERE 1
#endif
