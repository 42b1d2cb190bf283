# The install test (label install), run by ctest as
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DHOST_APP_DIR=... -DWORK_DIR=...
#         -DFIXTURE_DIR=... -DGENERATOR=... -DCXX_COMPILER=... -P run_install_test.cmake
# 1. cmake --install BUILD_DIR --prefix WORK_DIR/prefix
# 2. configure and build host_app/ against that prefix only (find_package(unicorn))
# 3. run `app` (the 27B compile-time layout: no GPU work) and check its summary
# 4. run `host-tiny` (made by the installed unicorn_add_engine from the fixture's
#    config.json) with the golden prompt, and compare its logits with
#    logits_f32.bin: max |diff| / max |ref| <= 1e-3 (check_logits)
# 5. configure host_app headers-only with CLI11 hidden (must work), and with its
#    engine and CLI11 hidden (must fail, naming CLI11)
# The host defines no Vulkan-Hpp mode (Vulkan-Hpp's constructors);
# install.fetchcontent builds the engine under VULKAN_HPP_NO_CONSTRUCTORS.
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

include(${CMAKE_CURRENT_LIST_DIR}/install_common.cmake)

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

# 2. The host app, built against the prefix alone; unoptimized (no build type),
#    as run_host_project_test.cmake says why.
step("configure host_app" ${CMAKE_COMMAND} -S ${HOST_APP_DIR} -B ${host_build} -G "${GENERATOR}"
     -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
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
check_golden_logits(${host_build}/host-tiny ${host_build}/check_logits ${FIXTURE_DIR} ${WORK_DIR})

# 5. A headers-only host needs no CLI11, and unicorn_add_engine without CLI11
#    says what is missing. Configure only: CMAKE_DISABLE_FIND_PACKAGE_CLI11 makes
#    find_package(CLI11) find nothing.
step("configure headers-only host_app without CLI11" ${CMAKE_COMMAND} -S ${HOST_APP_DIR}
     -B ${WORK_DIR}/host_headers_only -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
     -DCMAKE_PREFIX_PATH=${prefix} -DUNICORN_HOST_ENGINES=OFF -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${HOST_APP_DIR} -B ${WORK_DIR}/host_no_cli11
                -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
                -DUNICORN_TINY_CONFIG=${FIXTURE_DIR}/config.json -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \t\r\n]+" " " said "${err}")
if(rc EQUAL 0 OR NOT said MATCHES "unicorn_add_engine\\(host-tiny\\) builds a command-line program.*found no CLI11 package")
  message(FATAL_ERROR "install test: a host calling unicorn_add_engine without CLI11 must fail "
                      "configuring with unicorn's message about CLI11; got (${rc}):\n${out}\n${err}")
endif()
message(STATUS "unicorn_add_engine without CLI11: fails, naming CLI11")
