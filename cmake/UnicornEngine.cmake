# Engines as binaries.
#
# unicorn_add_generator(<target> HEADER <header> TYPE <deployment type>)
#   Builds the generator (examples/generate) for one deployment type.
#
# unicorn_add_perplexity(<target> HEADER <header> TYPE <deployment type>)
#   Builds unicorn-perplexity (examples/perplexity) for one deployment type, or
#   for a std::tuple of them: the model file's formats then pick the engine.
#
# unicorn_add_server(<target> HEADER <header> TYPE <deployment type>)
# unicorn_add_server(<target> CONFIG <config.json> QUANT <scheme> STREAMS <n>
#                    [CONTEXT <tokens>] [KV F16|F32] [PREFILL_CHUNK <tokens>])
#   Builds the OpenAI-compatible server (examples/server) for a deployment type,
#   or for a config.json as unicorn_add_engine does. STREAMS is its slots
#   (requests decoded together) and CONTEXT each slot's tokens: both compiled
#   in, and the server's flags may lower them, never raise them.
#
# unicorn_add_engine(<target> CONFIG <config.json> QUANT <scheme>
#                    [CONTEXT <tokens>] [KV F16|F32] [PREFILL_CHUNK <tokens>])
# unicorn_add_engine(<target> GGUF <file.gguf>
#                    [CONTEXT <tokens>] [KV F16|F32] [PREFILL_CHUNK <tokens>])
#   Turns a Hugging Face config.json of any Gemma 3-architecture checkpoint
#   (official sizes, fine-tunes, unofficial sizes), or a GGUF file, into a
#   deployment header at configure time and builds a generator binary for it.
#   QUANT is a named scheme (quant/scheme.hpp): Q4_0_QAT (Q4_0 weights, F16
#   embedding), Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q4_0, BF16, F16, F32, ... A GGUF
#   file's scheme is its own: its tensor types, as a named scheme or a mix the
#   engine expresses (model/from_gguf.hpp). The file is read by the loader's
#   own code (io/hf_config.hpp, io/gguf.hpp), through unicorn-model-dims
#   (tools/model_dims.cpp), which the first call builds at configure time: both
#   config layouts, the official releases' and newer transformers', and
#   multimodal configs' text_config, as the loader reads them.
#
# These programs parse their flags with CLI11: the first call finds it
# (find_package(CLI11 CONFIG), made GLOBAL so every directory of the host sees
# CLI11::CLI11) and stops with a message that says so when it is missing. A host
# that only includes the headers needs no CLI11.

# The generator's and the server's sources: in the source tree, or beside
# this file once installed. A binary's own source is its main.cpp (its
# deployment); program.cpp and flags.cpp (and the server's program.cpp and
# serve.cpp) do not depend on the deployment and are compiled once per build,
# into one object library each.
foreach(file generate/main generate/program generate/flags perplexity/main server/main server/program server/serve)
  string(TOUPPER ${file} var)
  string(REPLACE "/" "_" var ${var})
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/../examples/${file}.cpp)
    set(source ${CMAKE_CURRENT_LIST_DIR}/../examples/${file}.cpp)
  else()
    set(source ${CMAKE_CURRENT_LIST_DIR}/${file}.cpp)
  endif()
  set(UNICORN_${var}_SOURCE ${source} CACHE INTERNAL "")
endforeach()
# The programs' own code (flags, chat, the HTTP front end and the server's
# scheduler, report printing) compiles at -O1 in Release builds: their time
# is the GPU's and the engine's, whose code (engine_code.cpp, the readers, the
# tokenizer) and deployments stay at the build's level. -O3's code generation
# was a quarter of their compile time (serve.cpp 25.6 -> 18.1 s of CPU), and the
# H100's figures did not move (notes/build_time.md, ninth session).
set(UNICORN_PROGRAM_OPTIMIZATION $<$<CONFIG:Release>:-O1> CACHE INTERNAL "")
# The engine's host code compiled once for every program of the build that
# links it (unicorn/base/linkage.hpp): cmake/engine_code.cpp, beside this file in
# both trees.
set(UNICORN_ENGINE_CODE_SOURCE ${CMAKE_CURRENT_LIST_DIR}/engine_code.cpp CACHE INTERNAL "")

# unicorn_link_engine_code(<target> [PUBLIC|PRIVATE])
#   <target> sees the engine's declarations only (UNICORN_SEPARATE_COMPILATION)
#   and links its code, compiled once per build into unicorn_engine_code, which
#   the first call makes. Every translation unit of a program must agree, so a
#   program links it for all of its targets that include unicorn's headers, or
#   for none (header-only, the default of unicorn::unicorn).
function(unicorn_link_engine_code target)
  set(scope ${ARGN})
  if(NOT scope)
    set(scope PRIVATE)
  endif()
  if(NOT TARGET unicorn_engine_code)
    add_library(unicorn_engine_code STATIC ${UNICORN_ENGINE_CODE_SOURCE})
    target_link_libraries(unicorn_engine_code PUBLIC unicorn::unicorn)
    target_compile_definitions(unicorn_engine_code PUBLIC UNICORN_SEPARATE_COMPILATION)
  endif()
  target_link_libraries(${target} ${scope} unicorn_engine_code)
endfunction()

# tools/tuning_env.hpp, through which these programs read UNICORN_* variables
# into the values the library takes, tools/program_exit.hpp (how they end), and
# tools/model_dims.cpp (unicorn-model-dims):
# in the source tree, or beside this file.
if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/../tools/tuning_env.hpp)
  set(UNICORN_TOOLS_INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/../tools CACHE INTERNAL "")
else()
  set(UNICORN_TOOLS_INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/tools CACHE INTERNAL "")
endif()
# The include directories unicorn-model-dims compiles with: unicorn's, Boost's and
# nlohmann_json's, taken now, where those targets are visible (a host's
# directory calling unicorn_add_engine may not see the imported ones).
set(_unicorn_model_dims_includes "")
foreach(dep unicorn::unicorn Boost::headers nlohmann_json::nlohmann_json)
  if(TARGET ${dep})
    get_target_property(dirs ${dep} INTERFACE_INCLUDE_DIRECTORIES)
    if(dirs)
      string(REGEX REPLACE "\\$<BUILD_INTERFACE:([^>]*)>" "\\1" dirs "${dirs}")
      string(REGEX REPLACE "\\$<INSTALL_INTERFACE:[^>]*>" "" dirs "${dirs}")
      list(APPEND _unicorn_model_dims_includes ${dirs})
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES _unicorn_model_dims_includes)
set(UNICORN_MODEL_DIMS_INCLUDE_DIRS "${_unicorn_model_dims_includes}" CACHE INTERNAL "")
unset(_unicorn_model_dims_includes)

# Finds CLI11 for `who` (words for the message), once per build.
function(_unicorn_find_cli11 who)
  if(TARGET CLI11::CLI11)
    return()
  endif()
  find_package(CLI11 CONFIG QUIET GLOBAL)
  if(NOT CLI11_FOUND)
    message(FATAL_ERROR
      "unicorn: ${who} builds a command-line program, whose flags are parsed by CLI11, and CMake "
      "found no CLI11 package (CLI11Config.cmake). Install it (Debian/Ubuntu: apt-get install "
      "libcli11-dev; vcpkg/conan: cli11) or set CLI11_DIR to its CMake directory. A host that only "
      "includes unicorn's headers (target unicorn::unicorn) needs no CLI11.")
  endif()
endfunction()

# The chat's line editing and history (examples/generate/program.cpp): libedit
# (Debian: libedit-dev), found by pkg-config. Without it the chat reads plain
# lines, and configuring says so.
function(_unicorn_link_libedit target)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND AND NOT TARGET PkgConfig::UNICORN_LIBEDIT)
    pkg_check_modules(UNICORN_LIBEDIT QUIET IMPORTED_TARGET GLOBAL libedit)
  endif()
  if(TARGET PkgConfig::UNICORN_LIBEDIT)
    target_link_libraries(${target} PUBLIC PkgConfig::UNICORN_LIBEDIT)
    target_compile_definitions(${target} PRIVATE UNICORN_HAVE_LIBEDIT=1)
  else()
    message(STATUS "unicorn: no libedit (Debian: libedit-dev): the chat reads lines without editing or history")
  endif()
endfunction()

# A binary of `source` for one deployment type.
function(_unicorn_add_binary target source header type)
  add_executable(${target} ${source})
  target_link_libraries(${target} PRIVATE unicorn::unicorn CLI11::CLI11)
  target_include_directories(${target} PRIVATE ${UNICORN_TOOLS_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE
    UNICORN_DEPLOYMENT_HEADER="${header}" UNICORN_DEPLOYMENT=${type}
    UNICORN_BINARY_NAME="${target}")
endfunction()

function(unicorn_add_generator target)
  _unicorn_find_cli11("unicorn_add_generator(${target})")
  cmake_parse_arguments(G "" "HEADER;TYPE" "" ${ARGN})
  if(NOT TARGET unicorn_generate_program)
    add_library(unicorn_generate_program OBJECT ${UNICORN_GENERATE_PROGRAM_SOURCE} ${UNICORN_GENERATE_FLAGS_SOURCE})
    target_link_libraries(unicorn_generate_program PUBLIC unicorn::unicorn CLI11::CLI11)
    unicorn_link_engine_code(unicorn_generate_program PUBLIC)
    _unicorn_link_libedit(unicorn_generate_program)
    target_compile_options(unicorn_generate_program PRIVATE ${UNICORN_PROGRAM_OPTIMIZATION})
    target_include_directories(unicorn_generate_program PRIVATE ${UNICORN_TOOLS_INCLUDE_DIR})
  endif()
  _unicorn_add_binary(${target} ${UNICORN_GENERATE_MAIN_SOURCE} "${G_HEADER}" ${G_TYPE})
  target_link_libraries(${target} PRIVATE unicorn_generate_program)
endfunction()

function(unicorn_add_perplexity target)
  _unicorn_find_cli11("unicorn_add_perplexity(${target})")
  cmake_parse_arguments(P "" "HEADER;TYPE" "" ${ARGN})
  _unicorn_add_binary(${target} ${UNICORN_PERPLEXITY_MAIN_SOURCE} "${P_HEADER}" "${P_TYPE}")
  unicorn_link_engine_code(${target})
endfunction()

# The server program and its HTTP front end (Boost.Beast) do not depend on
# the deployment: one object library, unicorn_server_program, for every server
# of the build (unicorn_add_server's, and unicorn-server with its many engines).
function(_unicorn_server_program)
  if(NOT TARGET unicorn_server_program)
    add_library(unicorn_server_program OBJECT ${UNICORN_SERVER_PROGRAM_SOURCE} ${UNICORN_SERVER_SERVE_SOURCE})
    target_link_libraries(unicorn_server_program PUBLIC unicorn::unicorn CLI11::CLI11)
    unicorn_link_engine_code(unicorn_server_program PUBLIC)
    target_compile_options(unicorn_server_program PRIVATE ${UNICORN_PROGRAM_OPTIMIZATION})
    target_include_directories(unicorn_server_program PRIVATE ${UNICORN_TOOLS_INCLUDE_DIR})
  endif()
endfunction()

function(unicorn_add_server target)
  _unicorn_find_cli11("unicorn_add_server(${target})")
  cmake_parse_arguments(S "" "HEADER;TYPE;CONFIG;QUANT;STREAMS;CONTEXT;KV;PREFILL_CHUNK" "" ${ARGN})
  if(S_CONFIG)
    if(NOT S_STREAMS)
      message(FATAL_ERROR "unicorn_add_server(${target}): STREAMS (the slots served at once) is required with CONFIG")
    endif()
    _unicorn_deployment_header(${target} header type CONFIG ${S_CONFIG} QUANT "${S_QUANT}" CONTEXT "${S_CONTEXT}"
                               KV "${S_KV}" PREFILL_CHUNK "${S_PREFILL_CHUNK}" STREAMS ${S_STREAMS})
    set(S_HEADER ${header})
    set(S_TYPE ${type})
  elseif(NOT S_HEADER OR NOT S_TYPE)
    message(FATAL_ERROR "unicorn_add_server(${target}): give HEADER and TYPE, or CONFIG, QUANT and STREAMS")
  endif()
  _unicorn_server_program()
  _unicorn_add_binary(${target} ${UNICORN_SERVER_MAIN_SOURCE} "${S_HEADER}" ${S_TYPE})
  target_link_libraries(${target} PRIVATE unicorn_server_program)
endfunction()

# Builds unicorn-model-dims (tools/model_dims.cpp) for this build tree, once per
# version of its sources, and sets <out> to the program. `who` is the caller,
# for messages.
function(_unicorn_model_dims_tool out who)
  set(source ${UNICORN_TOOLS_INCLUDE_DIR}/model_dims.cpp)
  # Its version: the tool and unicorn's headers it includes (the directories of
  # model/'s floor and those below it: docs/architecture.md). Editing one of
  # them reconfigures, which rebuilds the tool and rewrites the engines.
  set(inputs ${source})
  foreach(dir IN LISTS UNICORN_MODEL_DIMS_INCLUDE_DIRS)
    if(EXISTS ${dir}/unicorn/model/from_gguf.hpp)
      file(GLOB headers ${dir}/unicorn/base/*.hpp ${dir}/unicorn/config/*.hpp ${dir}/unicorn/quant/*.hpp
                        ${dir}/unicorn/io/*.hpp ${dir}/unicorn/layout/*.hpp ${dir}/unicorn/model/*.hpp)
      list(APPEND inputs ${headers})
    endif()
  endforeach()
  set(hashes "")
  foreach(f IN LISTS inputs)
    file(SHA256 ${f} h)
    string(APPEND hashes ${h})
  endforeach()
  string(SHA256 version "${hashes}")
  string(SUBSTRING ${version} 0 16 version)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${inputs})
  set(dir ${CMAKE_BINARY_DIR}/unicorn_engines/model_dims)
  set(tool ${dir}/unicorn-model-dims-${version}${CMAKE_EXECUTABLE_SUFFIX})
  if(NOT EXISTS ${tool})
    message(STATUS "unicorn: building unicorn-model-dims, which reads model files for ${who}")
    try_compile(built ${dir}/build SOURCES ${source}
                CMAKE_FLAGS "-DINCLUDE_DIRECTORIES:STRING=${UNICORN_MODEL_DIMS_INCLUDE_DIRS}"
                CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON
                OUTPUT_VARIABLE log COPY_FILE ${tool})
    if(NOT built)
      message(FATAL_ERROR "${who}: could not build unicorn-model-dims (${source}), which reads "
                          "model files for it:\n${log}")
    endif()
  endif()
  set(${out} ${tool} PARENT_SCOPE)
endfunction()

function(unicorn_add_engine target)
  _unicorn_find_cli11("unicorn_add_engine(${target})")
  cmake_parse_arguments(E "" "CONFIG;GGUF;QUANT;CONTEXT;KV;PREFILL_CHUNK" "" ${ARGN})
  _unicorn_deployment_header(${target} header type CONFIG "${E_CONFIG}" GGUF "${E_GGUF}" QUANT "${E_QUANT}"
                             CONTEXT "${E_CONTEXT}" KV "${E_KV}" PREFILL_CHUNK "${E_PREFILL_CHUNK}" STREAMS 1)
  unicorn_add_generator(${target} HEADER ${header} TYPE ${type})
endfunction()

# Writes the deployment header for a config.json or a GGUF file (see
# unicorn_add_engine) and sets <header_var> to its path and <type_var> to its
# deployment type.
function(_unicorn_deployment_header target header_var type_var)
  cmake_parse_arguments(E "" "CONFIG;GGUF;QUANT;CONTEXT;KV;PREFILL_CHUNK;STREAMS" "" ${ARGN})
  if(E_GGUF)
    if(E_CONFIG OR E_QUANT)
      message(FATAL_ERROR "unicorn_add_engine(${target}): GGUF takes neither CONFIG nor QUANT: a GGUF file's "
                          "hyperparameters and scheme are its own")
    endif()
    set(source "${E_GGUF}")
  elseif(NOT E_CONFIG OR NOT E_QUANT)
    message(FATAL_ERROR "unicorn_add_engine(${target}): give CONFIG and QUANT, or GGUF")
  else()
    set(source "${E_CONFIG}")
  endif()
  get_filename_component(source "${source}" ABSOLUTE)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source}")
  if(NOT E_KV)
    set(E_KV F16)
  endif()
  # The engine's dimensions and scheme, as the loader will read the same file:
  # one `field=value` line per ModelDims field, then scheme= (tools/model_dims.cpp).
  _unicorn_model_dims_tool(tool "unicorn_add_engine(${target})")
  if(E_GGUF)
    set(args ${source} ${E_KV})
  else()
    set(args ${source} ${E_QUANT} ${E_KV})
  endif()
  execute_process(COMMAND ${tool} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(STRIP "${err}" err)
    message(FATAL_ERROR "unicorn_add_engine(${target}): ${err}")
  endif()
  set(fields "")
  string(REGEX MATCHALL "[a-z_]+=[^\n]*" lines "${out}")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "^([a-z_]+)=(.*)$" _ "${line}")
    if(CMAKE_MATCH_1 STREQUAL "scheme")
      set(scheme "${CMAKE_MATCH_2}")
    elseif(CMAKE_MATCH_1 STREQUAL "scheme_name")
      set(scheme_name "${CMAKE_MATCH_2}")
    else()
      string(APPEND fields ",\n    .${CMAKE_MATCH_1} = ${CMAKE_MATCH_2}")
      set(dims_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  if(NOT DEFINED dims_max_context OR NOT DEFINED scheme)
    message(FATAL_ERROR "unicorn_add_engine(${target}): unicorn-model-dims printed no max_context or scheme:\n${out}")
  endif()
  if(E_GGUF)
    if(NOT scheme_name)
      set(scheme_name "a mix of its own")
    endif()
    message(STATUS "unicorn_add_engine(${target}): ${E_GGUF}: ${dims_layers} layers, hidden ${dims_hidden}, "
                   "scheme ${scheme_name}")
  endif()

  if(NOT E_CONTEXT)
    set(E_CONTEXT ${dims_max_context})
    if(E_CONTEXT GREATER 32768)
      set(E_CONTEXT 32768)
    endif()
  endif()
  if(NOT E_PREFILL_CHUNK)
    set(E_PREFILL_CHUNK 512)
  endif()

  string(MAKE_C_IDENTIFIER "${target}" type)
  set(header ${CMAKE_BINARY_DIR}/unicorn_engines/${target}.hpp)
  file(CONFIGURE OUTPUT ${header} CONTENT "// Generated by unicorn_add_engine(${target}) from
// ${source}. Do not edit: change the file or the CMake call.
#pragma once
#include <unicorn/config/deployment.hpp>

namespace unicorn::engines {
inline constexpr ModelDims k_${type}_model{
    .name = \"${target}\"${fields}};
struct ${type} {
  static constexpr DeploymentConfig kConfig =
      make_deployment(k_${type}_model, ${scheme}, ${E_CONTEXT}, ${E_PREFILL_CHUNK}).with_streams(${E_STREAMS});
};
}  // namespace unicorn::engines
")
  set(${header_var} ${header} PARENT_SCOPE)
  set(${type_var} unicorn::engines::${type} PARENT_SCOPE)
endfunction()
