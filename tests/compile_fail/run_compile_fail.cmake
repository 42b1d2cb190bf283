# One compile-fail case: compiles CASE with the project's compiler and flags
# (-fsyntax-only: the checks are static_asserts, no code is generated) and
# passes when the result is what the case's header comment says:
#   // expect: <text>      compilation fails and the diagnostics contain <text>
#                          (several `// expect:` lines are joined with spaces)
#   // expect-also: <text> each such line must also appear, on its own (e.g. the
#                          numbers a check's template arguments carry)
#   // expect-compiles     compilation succeeds (a positive control of the harness)
# Called by ctest as: cmake -DCOMPILER=... -DFLAGS_FILE=... -DCASE=... -P run_compile_fail.cmake
# FLAGS_FILE sets UNICORN_COMPILE_FAIL_FLAGS (written by CMakeLists.txt at configure time).
cmake_minimum_required(VERSION 3.25)
foreach(var COMPILER FLAGS_FILE CASE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_compile_fail.cmake: -D${var}=... is required")
  endif()
endforeach()
include(${FLAGS_FILE})

file(STRINGS ${CASE} expect_lines REGEX "^// expect: ")
file(STRINGS ${CASE} compiles REGEX "^// expect-compiles")
file(STRINGS ${CASE} also_lines REGEX "^// expect-also: ")
set(expect "")
foreach(line IN LISTS expect_lines)
  string(REGEX REPLACE "^// expect: " "" line "${line}")
  string(APPEND expect " ${line}")
endforeach()
string(STRIP "${expect}" expect)
if(expect STREQUAL "" AND NOT compiles)
  message(FATAL_ERROR "${CASE}: no `// expect: <diagnostic>` or `// expect-compiles` line")
endif()

execute_process(
  COMMAND ${COMPILER} -std=c++20 -fsyntax-only ${UNICORN_COMPILE_FAIL_FLAGS} ${CASE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)

if(compiles)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CASE}: the positive control does not compile (the harness's "
                        "flags or the headers are broken):\n${out}")
  endif()
  message(STATUS "compiles, as expected")
  return()
endif()

if(rc EQUAL 0)
  message(FATAL_ERROR "${CASE}: compiled, but must fail with \"${expect}\"")
endif()
string(FIND "${out}" "${expect}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${CASE}: failed to compile, but not with \"${expect}\"; "
                      "the compiler said:\n${out}")
endif()
foreach(line IN LISTS also_lines)
  string(REGEX REPLACE "^// expect-also: " "" line "${line}")
  string(FIND "${out}" "${line}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${CASE}: failed with the sentence, but \"${line}\" is missing; "
                        "the compiler said:\n${out}")
  endif()
endforeach()
# Show the sentence a user sees, and where it came from.
# (A list op would split the sentences at their semicolons: swap them out first.)
string(REPLACE ";" "<semicolon>" out "${out}")
string(REGEX MATCHALL "[^\n]*(static assertion failed|required from here|In instantiation of|comparison reduces)[^\n]*" shown "${out}")
list(JOIN shown "\n" shown)
string(REPLACE "<semicolon>" ";" shown "${shown}")
message(STATUS "fails, as expected:\n${shown}")
