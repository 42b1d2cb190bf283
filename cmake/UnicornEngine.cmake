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
#   Turns a Hugging Face config.json of any Gemma 3-architecture checkpoint
#   (official sizes, fine-tunes, unofficial sizes) into a deployment header at
#   configure time and builds a generator binary for it. QUANT is one of F32,
#   F16, BF16, Q8_0, Q4_0 (all weights) or Q4_0_QAT (Q4_0 weights, F16 embedding).
#   Both config layouts are read: the official releases' (rope_theta,
#   rope_local_base_freq, rope_scaling, sliding_window_pattern) and newer
#   transformers' (layer_types, rope_parameters per layer type); multimodal
#   configs are read from their text_config.
#
# These programs parse their flags with CLI11: the first call finds it
# (find_package(CLI11 CONFIG), made GLOBAL so every directory of the host sees
# CLI11::CLI11) and stops with a message that says so when it is missing. A host
# that only includes the headers needs no CLI11.

# The generator's and the server's sources: in the source tree, or beside
# this file once installed. A binary's own source is its main.cpp (its
# deployment); program.cpp (and the server's serve.cpp) do not depend on the
# deployment and are compiled once per build, into one object library each.
foreach(file generate/main generate/program perplexity/main server/main server/program server/serve)
  string(TOUPPER ${file} var)
  string(REPLACE "/" "_" var ${var})
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/../examples/${file}.cpp)
    set(source ${CMAKE_CURRENT_LIST_DIR}/../examples/${file}.cpp)
  else()
    set(source ${CMAKE_CURRENT_LIST_DIR}/${file}.cpp)
  endif()
  set(UNICORN_${var}_SOURCE ${source} CACHE INTERNAL "")
endforeach()
# tools/tuning_env.hpp, through which these programs read UNICORN_* variables
# into the values the library takes: in the source tree, or beside this file.
if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/../tools/tuning_env.hpp)
  set(UNICORN_TOOLS_INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/../tools CACHE INTERNAL "")
else()
  set(UNICORN_TOOLS_INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/tools CACHE INTERNAL "")
endif()

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
    add_library(unicorn_generate_program OBJECT ${UNICORN_GENERATE_PROGRAM_SOURCE})
    target_link_libraries(unicorn_generate_program PUBLIC unicorn::unicorn CLI11::CLI11)
    _unicorn_link_libedit(unicorn_generate_program)
    target_include_directories(unicorn_generate_program PRIVATE ${UNICORN_TOOLS_INCLUDE_DIR})
  endif()
  _unicorn_add_binary(${target} ${UNICORN_GENERATE_MAIN_SOURCE} "${G_HEADER}" ${G_TYPE})
  target_link_libraries(${target} PRIVATE unicorn_generate_program)
endfunction()

function(unicorn_add_perplexity target)
  _unicorn_find_cli11("unicorn_add_perplexity(${target})")
  cmake_parse_arguments(P "" "HEADER;TYPE" "" ${ARGN})
  _unicorn_add_binary(${target} ${UNICORN_PERPLEXITY_MAIN_SOURCE} "${P_HEADER}" "${P_TYPE}")
endfunction()

function(unicorn_add_server target)
  _unicorn_find_cli11("unicorn_add_server(${target})")
  cmake_parse_arguments(S "" "HEADER;TYPE;CONFIG;QUANT;STREAMS;CONTEXT;KV;PREFILL_CHUNK" "" ${ARGN})
  if(S_CONFIG)
    if(NOT S_STREAMS)
      message(FATAL_ERROR "unicorn_add_server(${target}): STREAMS (the slots served at once) is required with CONFIG")
    endif()
    _unicorn_deployment_header(${target} header type CONFIG ${S_CONFIG} QUANT ${S_QUANT} CONTEXT "${S_CONTEXT}"
                               KV "${S_KV}" PREFILL_CHUNK "${S_PREFILL_CHUNK}" STREAMS ${S_STREAMS})
    set(S_HEADER ${header})
    set(S_TYPE ${type})
  elseif(NOT S_HEADER OR NOT S_TYPE)
    message(FATAL_ERROR "unicorn_add_server(${target}): give HEADER and TYPE, or CONFIG, QUANT and STREAMS")
  endif()
  # The server program and its HTTP front end (Boost.Beast) do not depend on
  # the deployment: one object library for every server of the build.
  if(NOT TARGET unicorn_server_program)
    add_library(unicorn_server_program OBJECT ${UNICORN_SERVER_PROGRAM_SOURCE} ${UNICORN_SERVER_SERVE_SOURCE})
    target_link_libraries(unicorn_server_program PUBLIC unicorn::unicorn CLI11::CLI11)
    target_include_directories(unicorn_server_program PRIVATE ${UNICORN_TOOLS_INCLUDE_DIR})
  endif()
  _unicorn_add_binary(${target} ${UNICORN_SERVER_MAIN_SOURCE} "${S_HEADER}" ${S_TYPE})
  target_link_libraries(${target} PRIVATE unicorn_server_program)
endfunction()

# Reads key `path...` of JSON `json` into `out`, or `default` when absent/null.
function(_unicorn_json out json default)
  string(JSON value ERROR_VARIABLE err GET "${json}" ${ARGN})
  if(err OR value STREQUAL "" OR value STREQUAL "null" OR value MATCHES "NOTFOUND$")
    set(value "${default}")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

function(unicorn_add_engine target)
  _unicorn_find_cli11("unicorn_add_engine(${target})")
  cmake_parse_arguments(E "" "CONFIG;QUANT;CONTEXT;KV;PREFILL_CHUNK" "" ${ARGN})
  _unicorn_deployment_header(${target} header type CONFIG "${E_CONFIG}" QUANT "${E_QUANT}" CONTEXT "${E_CONTEXT}"
                             KV "${E_KV}" PREFILL_CHUNK "${E_PREFILL_CHUNK}" STREAMS 1)
  unicorn_add_generator(${target} HEADER ${header} TYPE ${type})
endfunction()

# Writes the deployment header for a config.json (see unicorn_add_engine) and
# sets <header_var> to its path and <type_var> to its deployment type.
function(_unicorn_deployment_header target header_var type_var)
  cmake_parse_arguments(E "" "CONFIG;QUANT;CONTEXT;KV;PREFILL_CHUNK;STREAMS" "" ${ARGN})
  if(NOT E_CONFIG OR NOT E_QUANT)
    message(FATAL_ERROR "unicorn_add_engine(${target}): CONFIG and QUANT are required")
  endif()
  get_filename_component(config "${E_CONFIG}" ABSOLUTE)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${config}")
  file(READ "${config}" json)
  string(JSON text ERROR_VARIABLE no_text GET "${json}" text_config)
  if(no_text)
    set(text "${json}")
  endif()

  # Defaults are transformers' Gemma3TextConfig defaults.
  _unicorn_json(hidden "${text}" 2304 hidden_size)
  _unicorn_json(layers "${text}" 26 num_hidden_layers)
  _unicorn_json(heads "${text}" 8 num_attention_heads)
  _unicorn_json(kv_heads "${text}" 4 num_key_value_heads)
  _unicorn_json(head_dim "${text}" 256 head_dim)
  _unicorn_json(ffn "${text}" 9216 intermediate_size)
  _unicorn_json(vocab "${text}" 262208 vocab_size)
  _unicorn_json(window "${text}" 4096 sliding_window)
  _unicorn_json(qpas "${text}" 256 query_pre_attn_scalar)
  _unicorn_json(eps "${text}" 1e-6 rms_norm_eps)
  _unicorn_json(max_ctx "${text}" 131072 max_position_embeddings)
  _unicorn_json(pattern "${text}" 6 sliding_window_pattern)
  _unicorn_json(theta_global "${text}" 1000000 rope_theta)
  _unicorn_json(theta_local "${text}" 10000 rope_local_base_freq)
  _unicorn_json(scale_global "${text}" 1 rope_scaling factor)
  # Newer layout: rope_parameters per layer type.
  _unicorn_json(theta_global "${text}" ${theta_global} rope_parameters full_attention rope_theta)
  _unicorn_json(theta_local "${text}" ${theta_local} rope_parameters sliding_attention rope_theta)
  _unicorn_json(scale_global "${text}" ${scale_global} rope_parameters full_attention factor)
  # The 64 image soft-token rows of multimodal checkpoints have no text use.
  if(vocab EQUAL 262208)
    set(vocab 262144)
  endif()
  # layer_types, when present, must follow the every-Nth-layer-global pattern.
  string(JSON n_types ERROR_VARIABLE no_types LENGTH "${text}" layer_types)
  if(NOT no_types AND n_types GREATER 0)
    set(first_global 0)
    math(EXPR last "${n_types} - 1")
    foreach(i RANGE ${last})
      string(JSON kind GET "${text}" layer_types ${i})
      if(kind STREQUAL "full_attention" AND first_global EQUAL 0)
        math(EXPR first_global "${i} + 1")
      endif()
    endforeach()
    if(first_global GREATER 0)
      set(pattern ${first_global})
    endif()
    foreach(i RANGE ${last})
      string(JSON kind GET "${text}" layer_types ${i})
      # math(EXPR) has no comparison operators: test the remainder instead.
      math(EXPR rem "(${i} + 1) % ${pattern}")
      if(rem EQUAL 0)
        set(is_global TRUE)
      else()
        set(is_global FALSE)
      endif()
      if((kind STREQUAL "full_attention") AND NOT is_global OR
         (kind STREQUAL "sliding_attention") AND is_global)
        message(FATAL_ERROR "unicorn_add_engine(${target}): ${config}: layer_types is not "
                            "'every ${pattern}th layer global' (layer ${i} is ${kind}); "
                            "the engine supports that pattern only")
      endif()
    endforeach()
  endif()

  if(NOT E_CONTEXT)
    set(E_CONTEXT ${max_ctx})
    if(E_CONTEXT GREATER 32768)
      set(E_CONTEXT 32768)
    endif()
  endif()
  if(NOT E_KV)
    set(E_KV F16)
  endif()
  if(NOT E_PREFILL_CHUNK)
    set(E_PREFILL_CHUNK 512)
  endif()
  if(E_QUANT STREQUAL "Q4_0_QAT")
    set(scheme "unicorn::Scheme{unicorn::Format::F16, unicorn::Format::Q4_0, unicorn::Format::Q4_0, unicorn::Format::${E_KV}}")
  elseif(E_QUANT MATCHES "^(F32|F16|BF16|Q8_0|Q4_0)$")
    set(scheme "unicorn::schemes::all(unicorn::Format::${E_QUANT}, unicorn::Format::${E_KV})")
  else()
    message(FATAL_ERROR "unicorn_add_engine(${target}): QUANT must be F32, F16, BF16, Q8_0, Q4_0 or Q4_0_QAT, not '${E_QUANT}'")
  endif()

  string(MAKE_C_IDENTIFIER "${target}" type)
  set(header ${CMAKE_BINARY_DIR}/unicorn_engines/${target}.hpp)
  file(CONFIGURE OUTPUT ${header} CONTENT "// Generated by unicorn_add_engine(${target}) from
// ${config}. Do not edit: change the config.json or the CMake call.
#pragma once
#include <unicorn/deployment.hpp>

namespace unicorn::engines {
inline constexpr ModelDims k_${type}_model{
    .name = \"${target}\", .hidden = ${hidden}, .layers = ${layers}, .heads = ${heads},
    .kv_heads = ${kv_heads}, .head_dim = ${head_dim}, .ffn = ${ffn}, .vocab = ${vocab},
    .sliding_window = ${window}, .global_every = ${pattern},
    .rope_theta_local = float(${theta_local}), .rope_theta_global = float(${theta_global}),
    .rope_scale_global = float(${scale_global}), .query_pre_attn_scalar = float(${qpas}),
    .rms_eps = float(${eps}), .max_context = ${max_ctx}};
struct ${type} {
  static constexpr DeploymentConfig kConfig =
      make_deployment(k_${type}_model, ${scheme}, ${E_CONTEXT}, ${E_PREFILL_CHUNK}).with_streams(${E_STREAMS});
};
}  // namespace unicorn::engines
")
  set(${header_var} ${header} PARENT_SCOPE)
  set(${type_var} unicorn::engines::${type} PARENT_SCOPE)
endfunction()
