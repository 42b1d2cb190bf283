# static.products_use_the_public_api: the programs (examples/ and tools/, the
# products users run and the code they copy) use unicorn's public API only
# (issues 19 and 52). A line of code that does any of these fails the test,
# named with its file and line:
#   - names a `detail` namespace (`detail::`, `namespace detail`,
#     `using namespace unicorn::detail`): what a program needs must be public,
#     and a program's own helpers take a name that says what they are;
#   - calls `.core()` or `->core()`, AnyEngine's internals (the server's
#     scheduler and the tests use them; a program has AnyEngine's members).
# Comments may mention them.
#   cmake -DSOURCE_DIR=<repository root> -P public_api.cmake
if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "public_api.cmake: -DSOURCE_DIR=... is required")
endif()
set(product_dirs examples tools)

# The characters that would split or join list elements (; [ ] \), as
# control characters while the lines are a list, and back in the message.
string(ASCII 1 semicolon)
string(ASCII 2 open)
string(ASCII 3 close)
string(ASCII 4 backslash)
set(found "")
set(count 0)
foreach(dir IN LISTS product_dirs)
  file(GLOB_RECURSE sources ${SOURCE_DIR}/${dir}/*.cpp ${SOURCE_DIR}/${dir}/*.hpp)
  if(NOT sources)
    message(FATAL_ERROR "public_api.cmake: no sources under ${SOURCE_DIR}/${dir}: is SOURCE_DIR right?")
  endif()
  list(SORT sources)
  foreach(f IN LISTS sources)
    math(EXPR count "${count} + 1")
    file(READ ${f} text)  # one list element per line
    string(REPLACE ";" "${semicolon}" text "${text}")
    string(REPLACE "[" "${open}" text "${text}")
    string(REPLACE "]" "${close}" text "${text}")
    string(REPLACE "\\" "${backslash}" text "${text}")
    string(REPLACE "\n" ";" lines "${text}")
    set(n 0)
    foreach(line IN LISTS lines)
      math(EXPR n "${n} + 1")
      string(REGEX REPLACE "/\\*[^*]*\\*/" "" code "${line}")  # /*add_bos=*/
      string(REGEX REPLACE "//.*$" "" code "${code}")
      set(why "")
      if(code MATCHES "(^|[^A-Za-z0-9_])detail[ \t]*::")
        set(why "names a detail namespace")
      elseif(code MATCHES "namespace[ \t]+([A-Za-z0-9_]+[ \t]*=[ \t]*)?(::)?([A-Za-z0-9_]+::)*detail([^A-Za-z0-9_]|$)")
        set(why "declares or uses a detail namespace")
      elseif(code MATCHES "(\\.|->)[ \t]*core[ \t]*\\(")
        set(why "calls core(), the engine's internals")
      endif()
      if(why)
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
        string(STRIP "${line}" line)
        string(REPLACE "${semicolon}" ";" line "${line}")
        string(REPLACE "${open}" "[" line "${line}")
        string(REPLACE "${close}" "]" line "${line}")
        string(REPLACE "${backslash}" "\\" line "${line}")
        string(APPEND found "\n  ${rel}:${n}: ${why}: ${line}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "programs in examples/ and tools/ use the public API only (unicorn's detail namespaces and "
                      "AnyEngine::core() are the library's and the tests'; a program's own helpers take a name "
                      "other than detail):${found}")
endif()
message(STATUS "${count} sources in examples/ and tools/, none names a detail namespace or calls core()")
