# The install test (label install), run by ctest as
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DHOST_APP_DIR=... -DWORK_DIR=...
#         -DFIXTURE_DIR=... -DGENERATOR=... -DCXX_COMPILER=... -P run_install_test.cmake
# 1. cmake --install BUILD_DIR --prefix WORK_DIR/prefix
# 2. configure and build host_app/ against that prefix only (find_package(unicorn))
# 3. run `app` (the 27B compile-time layout: no GPU work) and check its summary
# 4. run `host-tiny` (made by the installed unicorn_add_engine from the fixture's
#    config.json) with the golden prompt, and compare its logits with
#    logits_f32.bin: max |diff| / max |ref| <= 1e-3 (check_logits)
cmake_minimum_required(VERSION 3.25)
foreach(var BUILD_DIR SOURCE_DIR HOST_APP_DIR WORK_DIR FIXTURE_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: -D${var}=... is required")
  endif()
endforeach()
set(prefix ${WORK_DIR}/prefix)
set(host_build ${WORK_DIR}/host_app)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(ENV{UNICORN_VALIDATION} 1)

# step(<name> <command>...): runs a command, fails the test with its output if it fails.
function(step name)
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(TIMESTAMP t1 "%s")
  math(EXPR secs "${t1} - ${t0}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${name} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  if(err MATCHES "Vulkan validation error")
    message(FATAL_ERROR "install test: ${name}: Vulkan validation errors:\n${err}")
  endif()
  message(STATUS "${name}: ok (${secs} s)")
  set(step_out "${out}" PARENT_SCOPE)
  set(step_err "${err}" PARENT_SCOPE)
endfunction()

# 1. Install.
step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
file(GLOB spirv_modules ${prefix}/include/unicorn/spirv/*.h)
# The package directory is <libdir>/cmake/unicorn (libdir from GNUInstallDirs).
file(GLOB_RECURSE package_config ${prefix}/unicornConfig.cmake)
if(NOT package_config)
  message(FATAL_ERROR "install test: no unicornConfig.cmake under ${prefix}")
endif()
get_filename_component(package_dir "${package_config}" DIRECTORY)
foreach(f ${prefix}/include/unicorn/gemma27b.hpp ${prefix}/include/unicorn/engine.hpp
          ${prefix}/include/unicorn/spirv.hpp ${package_dir}/unicornTargets.cmake
          ${package_dir}/UnicornEngine.cmake ${package_dir}/generate/main.cpp)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "install test: ${f} was not installed")
  endif()
endforeach()
if(NOT spirv_modules)
  message(FATAL_ERROR "install test: no SPIR-V modules under ${prefix}/include/unicorn/spirv: "
                      "build the project (all targets) before running ctest")
endif()

# 2. The host app, built against the prefix alone.
step("configure host_app" ${CMAKE_COMMAND} -S ${HOST_APP_DIR} -B ${host_build} -G "${GENERATOR}"
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
     -DCMAKE_PREFIX_PATH=${prefix} -DUNICORN_TINY_CONFIG=${FIXTURE_DIR}/config.json)
# Nothing of the source or build tree may leak into the host app's compile lines.
file(GLOB_RECURSE build_files ${host_build}/*.ninja ${host_build}/flags.make)
if(NOT build_files)
  message(FATAL_ERROR "install test: no build.ninja or flags.make under ${host_build}")
endif()
foreach(f IN LISTS build_files)
  file(READ ${f} text)
  foreach(tree ${SOURCE_DIR}/include ${BUILD_DIR}/generated)
    string(FIND "${text}" "${tree}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "install test: ${f} refers to ${tree}: "
                          "the package leaks source- or build-tree paths")
    endif()
  endforeach()
endforeach()
cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
step("build host_app" ${CMAKE_COMMAND} --build ${host_build} --parallel ${cores})

# 3. The 27B layout, printed by a host app that includes <unicorn/gemma27b.hpp>.
step("run app" ${host_build}/app)
string(REGEX MATCH "^[^\n]*\n[^\n]*\n[^\n]*\n" summary "${step_out}")  # before the tensor table
foreach(expected "model gemma3-27b" "62 layers" "heads 32/16 x 128" "scheme: embedding F16")
  string(FIND "${summary}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "install test: app's layout summary lacks \"${expected}\":\n${summary}")
  endif()
endforeach()
message(STATUS "app prints the 27B layout:\n${summary}")

# 4. host-tiny on the golden prompt vs transformers' f32 logits.
file(READ ${FIXTURE_DIR}/golden.json golden)
string(JSON n LENGTH "${golden}" prompt)
math(EXPR last "${n} - 1")
set(ids "")
foreach(i RANGE ${last})
  string(JSON id GET "${golden}" prompt ${i})
  list(APPEND ids ${id})
endforeach()
list(JOIN ids "," ids)
set(logits ${WORK_DIR}/host-tiny-logits.f32)
step("run host-tiny" ${host_build}/host-tiny --model ${FIXTURE_DIR} --tokens ${ids}
     --logits-out ${logits})
message(STATUS "host-tiny: ${step_err}")
step("check logits" ${host_build}/check_logits ${logits} ${FIXTURE_DIR}/logits_f32.bin 1e-3)
message(STATUS "${step_out}")
