# cmake -DROOT=<repository> -P check_readme_snippet.cmake
#
# The README's "Using it" code is examples/quickstart/main.cc's, compiled in every build and run
# in CI: the first ```cpp block after the "## Using it" heading must equal the lines between the
# two "// [README]" markers of main.cc, with their indentation of two spaces removed.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "check_readme_snippet.cmake: -DROOT=<repository> is required")
endif()

file(READ "${ROOT}/examples/quickstart/main.cc" source)
string(REGEX MATCH "  // \\[README\\]\n(.*)\n  // \\[README\\]\n" found "${source}")
if(NOT found)
  message(FATAL_ERROR "examples/quickstart/main.cc has no region between two '// [README]' lines")
endif()
set(snippet "${CMAKE_MATCH_1}")
string(REPLACE "\n  " "\n" snippet "${snippet}")  # each line once (REGEX REPLACE would repeat)
string(REGEX REPLACE "^  " "" snippet "${snippet}")

file(READ "${ROOT}/README.md" readme)
string(FIND "${readme}" "\n## Using it\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md has no '## Using it' section")
endif()
string(SUBSTRING "${readme}" ${at} -1 readme)
string(REGEX MATCH "```cpp\n([^`]*)\n```" found "${readme}")
if(NOT found)
  message(FATAL_ERROR "README.md's 'Using it' section has no ```cpp block")
endif()
set(shown "${CMAKE_MATCH_1}")

if(NOT shown STREQUAL snippet)
  message(FATAL_ERROR "README.md's 'Using it' code differs from examples/quickstart/main.cc's "
                      "[README] region; paste the region (dedented by two spaces):\n${snippet}")
endif()
string(REGEX MATCHALL "\n" newlines "${snippet}")
list(LENGTH newlines count)
math(EXPR count "${count} + 1")
message(STATUS "README.md's 'Using it' code is examples/quickstart/main.cc's (${count} lines)")
