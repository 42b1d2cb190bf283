# The host-project tests (label install): a host project that takes unicorn
# from this source tree by add_subdirectory or by FetchContent, run by ctest as
#   cmake -DMODE=add_subdirectory|fetchcontent -DNO_CONSTRUCTORS=ON|OFF -DBUILD=ON|OFF
#         -DSOURCE_DIR=... -DHOST_DIR=... -DWORK_DIR=... -DFIXTURE_DIR=...
#         -DGENERATOR=... -DCXX_COMPILER=... -P run_host_project_test.cmake
# 1. configure HOST_DIR (host_project/) in WORK_DIR/build; unicorn, not being the
#    top-level project, must add none of its tests, examples or tools
# 2. BUILD=ON: build it: unicorn's shaders, host-tiny (unicorn_add_engine from
#    the tiny fixture's config.json) and host_check (the host's own translation
#    unit), all in the host's Vulkan-Hpp mode (NO_CONSTRUCTORS).
#    BUILD=OFF: the build tool walks the whole graph without running a command
#    (a dry run), which fails on an input that nothing makes
# 3. BUILD=ON: run host-tiny on the golden prompt; host_check compares its
#    logits with logits_f32.bin: max |diff| / max |ref| <= 1e-3
cmake_minimum_required(VERSION 3.25)
foreach(var MODE NO_CONSTRUCTORS BUILD SOURCE_DIR HOST_DIR WORK_DIR FIXTURE_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_host_project_test.cmake: -D${var}=... is required")
  endif()
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/install_common.cmake)
set(host_build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(ENV{UNICORN_VALIDATION} 1)

set(consume_args -DUNICORN_CONSUME=${MODE} -DUNICORN_SOURCE_DIR=${SOURCE_DIR})
if(MODE STREQUAL "fetchcontent")
  # CMake's override for a dependency already on disk: no clone, no network.
  list(APPEND consume_args -DFETCHCONTENT_SOURCE_DIR_UNICORN=${SOURCE_DIR})
endif()

# 1. Configure; unicorn adds only the library (and its shader tool). No build
#    type, so no optimization: what the test checks (the headers compile in the
#    host's mode, the binaries link, the logits match) does not depend on it, and
#    the generator's program.cpp compiles in 28 s of CPU instead of 68 s at -O3
#    (notes/build_time.md); the project's own build is the Release one.
step("configure host_project (${MODE})" ${CMAKE_COMMAND} -S ${HOST_DIR} -B ${host_build}
     -G "${GENERATOR}" -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
     ${consume_args} -DHOST_NO_CONSTRUCTORS=${NO_CONSTRUCTORS}
     -DUNICORN_TINY_CONFIG=${FIXTURE_DIR}/config.json)
# Every target of the host's build has a line <dir>/<target>.dir in
# TargetDirectories.txt (any generator).
file(STRINGS ${host_build}/CMakeFiles/TargetDirectories.txt target_dirs)
set(targets "")
foreach(dir IN LISTS target_dirs)
  get_filename_component(name ${dir} NAME)
  string(REGEX REPLACE "\\.dir$" "" name ${name})
  list(APPEND targets ${name})
endforeach()
foreach(target unicorn-generate unicorn-convert unicorn-chat kernel_tests cli_tests unicorn_gemma3_tokenizer)
  if(target IN_LIST targets)
    message(FATAL_ERROR "install test: the host's build has unicorn's target ${target}: as a "
                        "subproject unicorn must build no tests, examples or tools by default")
  endif()
endforeach()
foreach(target host-tiny host_check unicorn_shaders)
  if(NOT target IN_LIST targets)
    message(FATAL_ERROR "install test: the host's build lacks ${target}; its targets: ${targets}")
  endif()
endforeach()
message(STATUS "targets of the host's build: ${targets}")

if(NOT BUILD)
  # 2. The whole graph, walked and not run: Ninja's and Make's dry runs fail
  #    on an input with no rule and no file.
  step("dry-run build of host_project" ${CMAKE_COMMAND} --build ${host_build} -- -n)
  if(NOT step_out MATCHES "host_check\\.cpp")
    message(FATAL_ERROR "install test: the dry run of the host's build compiles no host_check.cpp:\n${step_out}")
  endif()
  return()
endif()

# 2. Build.
cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
step("build host_project" ${CMAKE_COMMAND} --build ${host_build} --parallel ${cores})

# 3. The engine's logits vs transformers' f32 logits.
check_golden_logits(${host_build}/host-tiny ${host_build}/host_check ${FIXTURE_DIR} ${WORK_DIR})
