# Shaders: GLSL compute (shaders/*.comp) -> SPIR-V (glslangValidator, Debian's
# glslang-tools) -> one C header per module -> generated/unicorn/spirv.hpp, which
# embeds every module as `unicorn::spirv::<name>` (a sized uint32_t array) and
# names it as spirv::Module::<name>. Variants come from a define matrix: one module per
# weight format for the kernels that read weights, per KV format for the cache.
find_program(GLSLANG_VALIDATOR glslangValidator REQUIRED)

set(UNICORN_GENERATED_INCLUDE_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)
set(_spv_dir ${UNICORN_GENERATED_INCLUDE_DIR}/unicorn/spirv)
file(MAKE_DIRECTORY ${_spv_dir})

set(UNICORN_WEIGHT_FORMATS F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS)
set(_modules "")
set(_headers "")
set(_variants "")  # family|variant|module

# unicorn_shader(<module> <source.comp> [FAMILY <family> VARIANT <format>] [DEFINES ...])
# A module of a FAMILY is one VARIANT of it (a weight or KV format): the engine
# asks for spirv::<family>(format). A module without one is spirv::Module::<module>.
function(unicorn_shader module source)
  cmake_parse_arguments(S "" "FAMILY;VARIANT" "DEFINES" ${ARGN})
  set(defines "")
  foreach(d ${S_DEFINES})
    list(APPEND defines -D${d})
  endforeach()
  set(out ${_spv_dir}/${module}.h)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${GLSLANG_VALIDATOR} -V --target-env vulkan1.2 ${defines} --vn ${module}
            --depfile ${out}.d -o ${out} ${CMAKE_CURRENT_SOURCE_DIR}/shaders/${source}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/shaders/${source}
    DEPFILE ${out}.d
    COMMENT "SPIR-V ${module}"
    VERBATIM)
  set(_modules ${_modules} ${module} PARENT_SCOPE)
  set(_headers ${_headers} ${out} PARENT_SCOPE)
  if(S_FAMILY)
    set(_variants ${_variants} "${S_FAMILY}|${S_VARIANT}|${module}" PARENT_SCOPE)
  endif()
endfunction()

# Cooperative-matrix kernels are written in the NV form (GL_NV_cooperative_matrix),
# the one Debian 12's glslang 12 compiles; unicorn-spirv-coop-khr (a host tool
# built here, tools/spirv_coop_khr.hpp) rewrites the SPIR-V into the KHR form at
# build time. Each gives two modules: <module> (KHR, what the engine runs) and
# <module>_nv (the NV form, kept for the conversion tests and NV-only drivers),
# both written by the tool from one glslang compile.
# spirv-val (SPIRV-Tools 2023.1 predates SPV_KHR_cooperative_matrix) checks the
# NV form here; tests/kernel checks the KHR form's structure.
add_executable(unicorn-spirv-coop-khr ${CMAKE_CURRENT_SOURCE_DIR}/tools/spirv_coop_khr.cpp)
target_compile_features(unicorn-spirv-coop-khr PRIVATE cxx_std_20)
target_include_directories(unicorn-spirv-coop-khr PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
find_program(SPIRV_VAL spirv-val)

# unicorn_coop_shader(<module> <source.comp> [FAMILY <family> VARIANT <format>] [DEFINES ...])
# (the NV form's module is a variant of <family>_nv)
function(unicorn_coop_shader module source)
  cmake_parse_arguments(S "" "FAMILY;VARIANT" "DEFINES" ${ARGN})
  set(defines "")
  foreach(d ${S_DEFINES})
    list(APPEND defines -D${d})
  endforeach()
  set(spv ${_spv_dir}/${module}_nv.spv)
  set(nv_header ${_spv_dir}/${module}_nv.h)
  set(khr_header ${_spv_dir}/${module}.h)
  set(validate "")
  if(SPIRV_VAL)
    set(validate COMMAND ${SPIRV_VAL} --target-env vulkan1.2 ${spv})
  endif()
  add_custom_command(
    OUTPUT ${spv} ${nv_header} ${khr_header}
    COMMAND ${GLSLANG_VALIDATOR} -V --target-env vulkan1.2 ${defines} --depfile ${spv}.d
            -o ${spv} ${CMAKE_CURRENT_SOURCE_DIR}/shaders/${source}
    ${validate}
    COMMAND unicorn-spirv-coop-khr ${spv} ${khr_header} ${module} --nv-header ${nv_header}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/shaders/${source} unicorn-spirv-coop-khr
    DEPFILE ${spv}.d
    COMMENT "SPIR-V ${module} (NV form -> KHR form)"
    VERBATIM)
  set(_modules ${_modules} ${module} ${module}_nv PARENT_SCOPE)
  set(_headers ${_headers} ${nv_header} ${khr_header} PARENT_SCOPE)
  if(S_FAMILY)
    set(_variants ${_variants} "${S_FAMILY}|${S_VARIANT}|${module}" "${S_FAMILY}_nv|${S_VARIANT}|${module}_nv"
        PARENT_SCOPE)
  endif()
endfunction()

foreach(fmt ${UNICORN_WEIGHT_FORMATS})
  string(TOLOWER ${fmt} f)
  foreach(kernel embed matvec matmul convert)
    unicorn_shader(${kernel}_${f} ${kernel}.comp FAMILY ${kernel} VARIANT ${fmt} DEFINES FMT_${fmt})
  endforeach()
  unicorn_coop_shader(matmul_coop_${f} matmul_coop.comp FAMILY matmul_coop VARIANT ${fmt} DEFINES FMT_${fmt})
  unicorn_coop_shader(matmul_coop_splitk_${f} matmul_coop_splitk.comp FAMILY matmul_coop_splitk VARIANT ${fmt}
                      DEFINES FMT_${fmt})
endforeach()
# Decode's matvec on integer dot products (q8 inputs), where the device has them:
# every block format (kernels::matvec_dot_takes).
set(_block_formats ${UNICORN_WEIGHT_FORMATS})
list(FILTER _block_formats EXCLUDE REGEX "^(F32|F16|BF16)$")
foreach(fmt ${_block_formats})
  string(TOLOWER ${fmt} f)
  unicorn_shader(matvec_dot_${f} matvec.comp FAMILY matvec_dot VARIANT ${fmt} DEFINES FMT_${fmt} INT_DOT)
endforeach()
foreach(kv F16 F32)
  string(TOLOWER ${kv} f)
  unicorn_shader(attn_prep_${f} attn_prep.comp FAMILY attn_prep VARIANT ${kv} DEFINES KV_${kv})
  unicorn_shader(attention_${f} attention.comp FAMILY attention VARIANT ${kv} DEFINES KV_${kv})
  unicorn_shader(attention_tiled_${f} attention_tiled.comp FAMILY attention_tiled VARIANT ${kv} DEFINES KV_${kv})
  unicorn_coop_shader(attention_coop_${f} attention_coop.comp FAMILY attention_coop VARIANT ${kv} DEFINES KV_${kv})
endforeach()
foreach(kernel rmsnorm geglu logits_max sample logprobs bandwidth check_finite)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/shaders/${kernel}.comp)
    unicorn_shader(${kernel} ${kernel}.comp)
  endif()
endforeach()
# The image encoder's ops that the text model lacks (include/unicorn/vision/):
# its products run on the matmul modules above.
foreach(kernel vision_patches vision_layernorm vision_attention vision_gelu vision_pool)
  unicorn_shader(${kernel} ${kernel}.comp)
endforeach()
unicorn_coop_shader(vision_attention_coop vision_attention_coop.comp)

# Two generated headers. unicorn/spirv_modules.hpp (light: names only) has
# `enum class Module`, one value per module, so a kernel that does not exist
# does not compile, and each family's variant by format (spirv::matvec(Format::Q4_0)
# is Module::matvec_q4_0). unicorn/spirv.hpp adds the modules' words.
set(_names "// Generated by cmake/UnicornShaders.cmake. Do not edit.\n")
string(APPEND _names "// The SPIR-V modules of the build by name; their words are in unicorn/spirv.hpp.\n#pragma once\n")
string(APPEND _names "#include <cstddef>\n#include <cstdint>\n#include <optional>\n#include <string_view>\n\n")
string(APPEND _names "#include \"unicorn/quant/formats.hpp\"\n\nnamespace unicorn::spirv {\n\n")
string(APPEND _names "enum class Module : uint16_t {\n")
foreach(m ${_modules})
  string(APPEND _names "  ${m},\n")
endforeach()
string(APPEND _names "};\n\ninline constexpr std::string_view kModuleNames[] = {\n")
foreach(m ${_modules})
  string(APPEND _names "    \"${m}\",\n")
endforeach()
string(APPEND _names "};\nconstexpr std::string_view name(Module m) { return kModuleNames[size_t(m)]; }\n\n")
# Families, in the order they were declared.
set(_families "")
foreach(v ${_variants})
  string(REPLACE "|" ";" parts "${v}")
  list(GET parts 0 family)
  list(APPEND _families ${family})
endforeach()
list(REMOVE_DUPLICATES _families)
string(APPEND _names "// Each family's module for a format (the weights', or the KV cache's), or none.\n")
foreach(family ${_families})
  string(APPEND _names "constexpr std::optional<Module> ${family}(Format f) {\n  switch (f) {\n")
  foreach(v ${_variants})
    string(REPLACE "|" ";" parts "${v}")
    list(GET parts 0 fam)
    list(GET parts 1 variant)
    list(GET parts 2 module)
    if(fam STREQUAL family)
      string(APPEND _names "    case Format::${variant}: return Module::${module};\n")
    endif()
  endforeach()
  string(APPEND _names "    default: return std::nullopt;\n  }\n}\n")
endforeach()
string(APPEND _names "\n}  // namespace unicorn::spirv\n")
file(CONFIGURE OUTPUT ${UNICORN_GENERATED_INCLUDE_DIR}/unicorn/spirv_modules.hpp CONTENT "${_names}")

set(_agg "// Generated by cmake/UnicornShaders.cmake. Do not edit.\n")
string(APPEND _agg "// Every SPIR-V module's words, by spirv::Module (unicorn/spirv_modules.hpp).\n#pragma once\n")
string(APPEND _agg "#include <cstdint>\n#include <iterator>\n#include <span>\n#include <string_view>\n\n")
string(APPEND _agg "#include \"unicorn/spirv_modules.hpp\"\n\nnamespace unicorn::spirv {\n")
foreach(m ${_modules})
  string(APPEND _agg "#include \"unicorn/spirv/${m}.h\"\n")
endforeach()
# The modules' arrays are `const` at namespace scope (glslangValidator's --vn
# form), so internal to each translation unit; the table that points at them
# is too: an inline (external, COMDAT) table that points at TU-local arrays
# breaks the link wherever the linker drops one TU's copy (GCC -O1 -g, ASan
# builds).
string(APPEND _agg "\nstatic constexpr std::span<const uint32_t> kModuleWords[] = {\n")
foreach(m ${_modules})
  string(APPEND _agg "    ${m},\n")
endforeach()
string(APPEND _agg "};\nstatic constexpr std::span<const uint32_t> words(Module m) { return kModuleWords[size_t(m)]; }\n\n")
string(APPEND _agg "// A module by name, or none (the kernel tests' lookup).\n")
string(APPEND _agg "static constexpr std::span<const uint32_t> find(std::string_view name) {\n")
string(APPEND _agg "  for (size_t i = 0; i < std::size(kModuleNames); ++i)\n")
string(APPEND _agg "    if (kModuleNames[i] == name) return kModuleWords[i];\n  return {};\n}\n")
string(APPEND _agg "}  // namespace unicorn::spirv\n")
file(CONFIGURE OUTPUT ${UNICORN_GENERATED_INCLUDE_DIR}/unicorn/spirv.hpp CONTENT "${_agg}")

add_custom_target(unicorn_shaders DEPENDS ${_headers})
