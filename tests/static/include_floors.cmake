# static.include_floors: the headers under include/unicorn are a house of
# floors (docs/architecture.md), and a header includes only headers of its own
# floor or a lower one, so no include goes upward and no two directories
# include each other. Fails, naming file:line, both floors and the include, on
#   - an include of a unicorn header on a higher floor;
#   - a header in a directory that is on no floor (a new directory must be
#     placed here, and in docs/architecture.md);
#   - an include of a unicorn header that does not exist;
#   - a floor naming a directory that holds no header (the list gone stale).
#   cmake -DINCLUDE_DIR=<include> -P include_floors.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED INCLUDE_DIR)
  message(FATAL_ERROR "include_floors.cmake: -DINCLUDE_DIR=... is required")
endif()

# The floors, bottom to top: the directories under include/unicorn on each.
set(floors 0 1 2 3 4 5 6 7)
set(floor_0 base)                 # the exception type, where code is compiled
set(floor_1 config quant)         # what a deployment is, as values
set(floor_2 layout io image)      # what the compiler derives from one; file formats; images
set(floor_3 gpu model text)       # Vulkan; a file's header as a config; the tokenizer
set(floor_4 grammar)              # constrained decoding over a vocabulary
set(floor_5 engine vision)        # the engine: buffers, recorded passes, loading; the image encoder
set(floor_6 generation)           # what runs on an engine: the text loop, chats
set(floor_7 server)               # the OpenAI and Ollama HTTP server
# The top floor: the files at include/unicorn itself, the public faces (engine.hpp,
# gemma3*.hpp, separate_compilation.hpp), which may include anything.
set(top 8)
# Headers the build writes (cmake/UnicornShaders.cmake), never in the source
# tree: SPIR-V data and the modules' names, which include nothing of ours but
# quant/formats.hpp, so floor 1 (every header that includes them is above it).
set(generated unicorn/spirv.hpp unicorn/spirv_modules.hpp)

set(root ${INCLUDE_DIR}/unicorn)
foreach(n IN LISTS floors)
  foreach(d IN LISTS floor_${n})
    if(DEFINED floor_of_${d})
      message(FATAL_ERROR "include_floors.cmake: ${d}/ is on floors ${floor_of_${d}} and ${n}")
    endif()
    set(floor_of_${d} ${n})
    if(NOT IS_DIRECTORY ${root}/${d})
      string(APPEND problems "\n  floor ${n} names ${d}/, which is not a directory under ${root}")
    endif()
  endforeach()
endforeach()

# The floor of a path under include/ ("unicorn/<dir>/...", or "unicorn/<file>"
# for the top floor), in out; "" when its directory is on no floor.
function(floor_of path out)
  if(path MATCHES "^unicorn/([^/]+)/")
    set(d ${CMAKE_MATCH_1})
    if(DEFINED floor_of_${d})
      set(${out} ${floor_of_${d}} PARENT_SCOPE)
    else()
      set(${out} "" PARENT_SCOPE)
    endif()
  else()
    set(${out} ${top} PARENT_SCOPE)
  endif()
endfunction()
# A floor in words: "floor 3 (gpu, model, text)", "the top floor (include/unicorn)".
function(floor_text n out)
  if(n EQUAL top)
    set(${out} "the top floor (include/unicorn)" PARENT_SCOPE)
  else()
    list(JOIN floor_${n} ", " dirs)
    set(${out} "floor ${n} (${dirs})" PARENT_SCOPE)
  endif()
endfunction()

file(GLOB_RECURSE headers RELATIVE ${INCLUDE_DIR} ${root}/*)
set(includes 0)
foreach(h IN LISTS headers)
  floor_of(${h} from)
  if(from STREQUAL "")
    string(REGEX MATCH "^unicorn/[^/]+" d "${h}")
    string(APPEND problems "\n  include/${h}: its directory include/${d}/ is on no floor "
                           "(add it to a floor in tests/static/include_floors.cmake and docs/architecture.md)")
    continue()
  endif()
  # One list element per line: the characters that would split or join
  # elements (; [ ] \) become _, which no include path holds.
  file(READ ${INCLUDE_DIR}/${h} text)
  string(REGEX REPLACE "[][;\\\\]" "_" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*[\"<](unicorn/[^\">]*)[\">]")
      continue()
    endif()
    set(to_path ${CMAKE_MATCH_1})
    math(EXPR includes "${includes} + 1")
    string(STRIP "${line}" line)
    if(to_path IN_LIST generated)
      continue()
    endif()
    if(NOT EXISTS ${INCLUDE_DIR}/${to_path})
      string(APPEND problems "\n  include/${h}:${n}: ${line}: no such header under ${INCLUDE_DIR}")
      continue()
    endif()
    floor_of(${to_path} to)
    if(to STREQUAL "")
      continue()  # that header's own directory is reported above
    endif()
    if(to GREATER from)
      floor_text(${from} from_text)
      floor_text(${to} to_text)
      string(APPEND problems "\n  include/${h}:${n}: ${line}: goes up from ${from_text} to ${to_text}")
    endif()
  endforeach()
endforeach()

list(LENGTH headers count)
if(count LESS 50 OR includes LESS 100)
  message(FATAL_ERROR "include_floors.cmake: found only ${count} headers and ${includes} includes under ${root}: "
                      "is INCLUDE_DIR right?")
endif()
if(problems)
  message(FATAL_ERROR "the headers under include/unicorn break the floors (docs/architecture.md): a header "
                      "includes only headers of its own floor or below:${problems}")
endif()
message(STATUS "${count} headers on ${top} floors and the top one, ${includes} includes of unicorn headers, none upward")
