# Warnings and sanitizers shared by every graphcap target (not imposed on projects that embed us).
add_library(graphcap_compile_options INTERFACE)
target_compile_features(graphcap_compile_options INTERFACE cxx_std_20)
target_compile_options(graphcap_compile_options INTERFACE
  $<$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
  $<$<AND:$<BOOL:${GRAPHCAP_WERROR}>,$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>>:-Werror>)

if(GRAPHCAP_SANITIZE)
  list(JOIN GRAPHCAP_SANITIZE "," graphcap_sanitizers)
  # Global, so GoogleTest's and Benchmark's callers and our code agree on instrumentation.
  add_compile_options(-fsanitize=${graphcap_sanitizers} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${graphcap_sanitizers})
  # Executables under AddressSanitizer + UBSan linked as position-dependent: linked as PIE (the
  # toolchain's default) the test executables carried 2 million dynamic relocations (the
  # sanitizers' static data), applied at every start, and ctest starts one process per test: about
  # 0.37 s of CPU per start, 0.20 s without them (measured, docs/reliability.md "## CI"). Not
  # for ThreadSanitizer, whose runtime expects a PIE on x86-64.
  if("address" IN_LIST GRAPHCAP_SANITIZE)
    add_link_options($<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
  endif()
endif()

# Options for test code: the test executables' own sources, their support library and the gMock
# MockDriver. That code is gtest/gmock template instantiation and runs for seconds, so it is
# compiled unoptimised (about twice as fast on CI's 2 cores; the library and the fake under test
# keep the preset's optimisation). Under ASan + UBSan it keeps ASan but not UBSan's checks: at -O0
# they doubled the compile of a gtest file (fake_driver_tests' largest unity file 107 s -> 51 s,
# MockDriver 54 s -> 33 s; reliability.md "CI") while the code they would check there is the
# tests' and gMock's own. graphcap, the fake, their kernels and the examples, everything a test
# exercises, stay under both (public headers hold almost no inline code to instantiate in a test).
add_library(graphcap_test_code_options INTERFACE)
target_compile_options(graphcap_test_code_options INTERFACE $<$<NOT:$<CONFIG:Debug>>:-O0>)
if("undefined" IN_LIST GRAPHCAP_SANITIZE)
  target_compile_options(graphcap_test_code_options INTERFACE -fno-sanitize=undefined)
endif()

# The linker for graphcap's own targets (-fuse-ld=NAME): empty for the compiler's default (GNU ld).
# The CI presets ask for lld (Debian's lld, on the CI machine): linking the sanitized test
# executables was tens of seconds each with GNU ld. A compiler that cannot use the one named keeps
# its default (checked here), so a machine without lld still builds.
set(GRAPHCAP_LINKER "" CACHE STRING "Linker for graphcap's targets (-fuse-ld=): empty, lld, gold or mold")
if(GRAPHCAP_LINKER)
  include(CheckLinkerFlag)
  string(MAKE_C_IDENTIFIER "GRAPHCAP_LINKER_${GRAPHCAP_LINKER}_WORKS" graphcap_linker_check)
  check_linker_flag(CXX "-fuse-ld=${GRAPHCAP_LINKER}" ${graphcap_linker_check})
  if(${graphcap_linker_check})
    add_link_options(-fuse-ld=${GRAPHCAP_LINKER})
  else()
    message(STATUS "graphcap: -fuse-ld=${GRAPHCAP_LINKER} does not link here; the default linker")
  endif()
endif()
