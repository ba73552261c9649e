# Compiles SOURCE with clang's -Wthread-safety (and -beta) and checks that the diagnostics
# are exactly those announced by "// expect: <message>" comments, each on its
# own line. Usage:
#   cmake -DCXX=clang++ -DSOURCE=file.cc -DINCLUDE=src -P expect_diagnostics.cmake
foreach(var CXX SOURCE INCLUDE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_diagnostics: -D${var}= is required")
  endif()
endforeach()

execute_process(
  COMMAND ${CXX} -std=c++20 -fsyntax-only -Wthread-safety -Wthread-safety-beta -Wno-error -I${INCLUDE} ${SOURCE}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)

get_filename_component(name ${SOURCE} NAME)
file(STRINGS ${SOURCE} lines)
set(line_no 0)
set(expected 0)
set(failures "")
foreach(line IN LISTS lines)
  math(EXPR line_no "${line_no} + 1")
  if(line MATCHES "// expect: (.*)$")
    set(want "${CMAKE_MATCH_1}")
    math(EXPR expected "${expected} + 1")
    string(REGEX MATCH "${name}:${line_no}:[0-9]+: warning: [^\n]*" found "${out}")
    string(FIND "${found}" "warning: ${want} [-Wthread-safety" at)
    if(at EQUAL -1)
      string(APPEND failures "  line ${line_no}: expected '${want}', got '${found}'\n")
    endif()
  endif()
endforeach()

string(REGEX MATCHALL "warning: [^\n]*\\[-Wthread-safety[^\n]*" all "${out}")
list(LENGTH all reported)
if(NOT reported EQUAL expected)
  string(APPEND failures "  ${reported} thread-safety warnings, ${expected} expected\n")
endif()
string(REGEX MATCHALL "error: [^\n]*" errors "${out}")
if(errors)
  string(APPEND failures "  compile errors: ${errors}\n")
endif()

if(failures)
  message(FATAL_ERROR "${name}:\n${failures}compiler output:\n${out}")
endif()
message(STATUS "${name}: ${expected} expected thread-safety diagnostics, all reported")
