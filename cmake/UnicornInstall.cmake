# Install tree: headers (with the generated SPIR-V), the INTERFACE target, and a
# package config, so a host app does:
#   find_package(unicorn REQUIRED)
#   target_link_libraries(app PRIVATE unicorn::unicorn)      #include <unicorn/gemma27b.hpp>
# and can build engines from config.json files with unicorn_add_engine() (which
# finds CLI11 then). Included by CMakeLists.txt when UNICORN_INSTALL is on (the
# default for a top-level build, off for add_subdirectory / FetchContent).
include(CMakePackageConfigHelpers)

install(DIRECTORY include/unicorn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${UNICORN_GENERATED_INCLUDE_DIR}/unicorn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
install(TARGETS unicorn EXPORT unicornTargets)
set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/unicorn)
install(EXPORT unicornTargets NAMESPACE unicorn:: DESTINATION ${_cmake_dir})
install(FILES cmake/UnicornEngine.cmake cmake/engine_code.cpp DESTINATION ${_cmake_dir})
install(FILES examples/program.hpp examples/pick_pair.hpp DESTINATION ${_cmake_dir})
install(FILES tools/tuning_env.hpp tools/ollama_env.hpp tools/program_exit.hpp tools/model_tokenizer.hpp tools/model_dims.cpp
        DESTINATION ${_cmake_dir}/tools)
install(FILES examples/generate/main.cpp examples/generate/program.cpp examples/generate/program.hpp
              examples/generate/flags.cpp examples/generate/flags.hpp examples/generate/options.hpp
        DESTINATION ${_cmake_dir}/generate)
install(FILES examples/perplexity/main.cpp examples/perplexity/kld_base.hpp examples/perplexity/scoring.hpp
        DESTINATION ${_cmake_dir}/perplexity)
install(FILES examples/server/main.cpp examples/server/program.cpp examples/server/program.hpp
              examples/server/serve.cpp DESTINATION ${_cmake_dir}/server)

file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/unicornConfig.cmake.in [=[
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
find_dependency(Vulkan)
find_dependency(Boost 1.74)
find_dependency(nlohmann_json 3)
find_dependency(Threads)
find_dependency(JPEG)
find_dependency(GIF 5)
find_dependency(PkgConfig)
pkg_check_modules(UNICORN_STB REQUIRED IMPORTED_TARGET stb)
pkg_check_modules(UNICORN_WEBP REQUIRED IMPORTED_TARGET libwebp libwebpdemux)
# CLI11 is found by unicorn_add_engine() & co. when first called: a host that
# only includes the headers needs none.
include("${CMAKE_CURRENT_LIST_DIR}/unicornTargets.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/UnicornEngine.cmake")
]=])
configure_package_config_file(${CMAKE_CURRENT_BINARY_DIR}/unicornConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/unicornConfig.cmake INSTALL_DESTINATION ${_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/unicornConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/unicornConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/unicornConfigVersion.cmake DESTINATION ${_cmake_dir})
