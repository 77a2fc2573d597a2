# cmake -DROOT=<repository> -P check_fault_examples.cmake
#
# The docs' fault examples are tested, and their table of entry points is asserted:
#  - every fault README.md or docs/*.md arms (in a code block or inline code) (fail_call / fail_always / fail_when
#    with an entry point and a code) is armed the same way in
#    tests/faults/documented_faults_test.cc, which checks that it fires and what it answers;
#  - every entry point the table "Which entry point each operation calls" of
#    docs/testing-on-the-fake.md names is one tests/faults/entry_points_by_operation_test.cc
#    asserts an operation calls.
# A doc example armed on an entry point graphcap never calls passed its reader's test for the
# wrong reason; this keeps each example in a test that would fail.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "check_fault_examples.cmake: -DROOT=<repository> is required")
endif()

file(READ "${ROOT}/tests/faults/documented_faults_test.cc" examples_test)
file(READ "${ROOT}/tests/faults/entry_points_by_operation_test.cc" table_test)
string(REPLACE ";" "" examples_test "${examples_test}")
string(REPLACE ";" "" table_test "${table_test}")

set(problems "")
set(examples 0)
file(GLOB documents "${ROOT}/README.md" "${ROOT}/docs/*.md")
foreach(document IN LISTS documents)
  file(RELATIVE_PATH shown "${ROOT}" "${document}")
  file(READ "${document}" text)
  string(REPLACE ";" "" text "${text}")
  string(REGEX MATCHALL "fail_(call|always|when)\\(\"[A-Za-z0-9_]*\",[ \n]*(graphcap::)?[A-Z_]+"
         armed "${text}")
  foreach(fault IN LISTS armed)
    string(REGEX REPLACE "[ \n]+" " " fault "${fault}")
    string(REPLACE "graphcap::" "" fault "${fault}")
    math(EXPR examples "${examples} + 1")
    string(FIND "${examples_test}" "${fault}" at)
    if(at EQUAL -1)
      string(APPEND problems "\n  ${shown}: ${fault}...) is armed in no test of "
                             "tests/faults/documented_faults_test.cc")
    endif()
  endforeach()
endforeach()

# The table: from its heading to the first line that is not a table row.
file(STRINGS "${ROOT}/docs/testing-on-the-fake.md" lines)
set(in_table FALSE)
set(seen_heading FALSE)
set(names 0)
foreach(line IN LISTS lines)
  if(line MATCHES "^### Which entry point each operation calls")
    set(seen_heading TRUE)
    continue()
  endif()
  if(seen_heading AND line MATCHES "^\\|")
    set(in_table TRUE)
    string(REGEX REPLACE "^\\|[^|]*\\|" "" calls "${line}")  # the second column on
    string(REGEX MATCHALL "`cu[A-Z][A-Za-z0-9]*`" named "${calls}")
    foreach(name IN LISTS named)
      string(REPLACE "`" "" name "${name}")
      math(EXPR names "${names} + 1")
      string(FIND "${table_test}" "\"${name}\"" at)
      if(at EQUAL -1)
        string(APPEND problems "\n  docs/testing-on-the-fake.md's table names ${name}, which "
                               "tests/faults/entry_points_by_operation_test.cc does not assert")
      endif()
    endforeach()
  elseif(in_table)
    break()
  endif()
endforeach()
if(names EQUAL 0)
  string(APPEND problems "\n  docs/testing-on-the-fake.md: no table of entry points found")
endif()

if(problems)
  message(FATAL_ERROR "docs' fault examples not checked by a test:${problems}")
endif()
message(STATUS "${examples} fault examples in the docs, each armed in a test; ${names} entry "
               "points of the table, each asserted")
