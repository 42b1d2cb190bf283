# The tests' scratch folder ($TMPDIR of every test, tests/CMakeLists.txt):
# MODE=prepare empties it before the tests; MODE=check fails if a test left
# anything there, names what, and removes it so the next run starts clean.
if(MODE STREQUAL "prepare")
  file(REMOVE_RECURSE "${DIR}")
  file(MAKE_DIRECTORY "${DIR}")
elseif(MODE STREQUAL "check")
  file(GLOB leftovers LIST_DIRECTORIES true "${DIR}/*" "${DIR}/.*")
  if(leftovers)
    file(REMOVE_RECURSE ${leftovers})
    list(JOIN leftovers "\n  " names)
    message(FATAL_ERROR "tests left files in their temporary folder (now removed):\n  ${names}")
  endif()
else()
  message(FATAL_ERROR "scratch.cmake: MODE must be prepare or check")
endif()
