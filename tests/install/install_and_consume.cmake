# cmake -DSTEP=prefix|consumer|engine|examples -DGRAPHCAP_BUILD_DIR=... -DWORK_DIR=...
#       -DSOURCE_DIR=... -DGENERATOR=... [-DMAKE_PROGRAM=...] [-DCXX_COMPILER=...] [-DCONFIG=...]
#       -P install_and_consume.cmake
#
# STEP=prefix installs the graphcap build in GRAPHCAP_BUILD_DIR into WORK_DIR/prefix; each other
# step configures, builds and runs one project in SOURCE_DIR (the consumer, the engine's GoogleTest
# suite, the examples) against that prefix alone, with no flags beyond the compiler and generator:
# the package must carry everything else. Any failing step fails the test with its output. The
# projects are steps of their own so that ctest runs them side by side (each is mostly one
# configure and one compile on one core).
cmake_minimum_required(VERSION 3.25)

foreach(required STEP WORK_DIR GENERATOR)
  if(NOT DEFINED ${required} OR "${${required}}" STREQUAL "")
    message(FATAL_ERROR "install_and_consume.cmake: -D${required}=... is required")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")

function(run_step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output
                  ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${name} failed (${result}):\n${output}")
  endif()
  set(last_output "${output}" PARENT_SCOPE)
  message(STATUS "${name}: ok")
endfunction()

set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
if(STEP STREQUAL "prefix")
  if(NOT GRAPHCAP_BUILD_DIR)
    message(FATAL_ERROR "install_and_consume.cmake: STEP=prefix needs -DGRAPHCAP_BUILD_DIR=...")
  endif()
  file(REMOVE_RECURSE "${prefix}")
  run_step("cmake --install" "${CMAKE_COMMAND}" --install "${GRAPHCAP_BUILD_DIR}"
           --prefix "${prefix}" ${config_args})
  return()
endif()

# Nothing but the package: no source-tree paths, no sanitizer or warning flags.
function(build_against_prefix name source_dir)
  set(build_dir "${WORK_DIR}/${name}-build")
  file(REMOVE_RECURSE "${build_dir}")
  set(configure_args -S "${source_dir}" -B "${build_dir}" -G "${GENERATOR}"
                     "-DCMAKE_PREFIX_PATH=${prefix}"
                     # Only the scratch prefix may satisfy find_package(graphcap).
                     -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
                     -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
  if(MAKE_PROGRAM)
    list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  endif()
  if(CXX_COMPILER)
    list(APPEND configure_args "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
  endif()
  # No CMAKE_BUILD_TYPE either: a plain `cmake -S . -B build` of a consumer, which the package's
  # Release configuration must serve (and the projects compile in half the time than at -O3).
  run_step("configure ${name}" "${CMAKE_COMMAND}" ${configure_args})
  run_step("build ${name}" "${CMAKE_COMMAND}" --build "${build_dir}" ${config_args})
endfunction()

# A program of a project built above (single- or multi-config generators).
function(run_program name build_dir program)
  set(path "${build_dir}/${program}")
  if(CONFIG AND NOT EXISTS "${path}")
    get_filename_component(dir "${path}" DIRECTORY)
    get_filename_component(file "${path}" NAME)
    set(path "${dir}/${CONFIG}/${file}")
  endif()
  run_step("run ${name}" "${path}")
  message(STATUS "${name} said:\n${last_output}")
endfunction()

# The program each project runs once built (of the examples, every one is built, the quickstart run).
set(program_consumer graphcap_consumer)
set(program_engine engine_tests)
set(program_examples quickstart/quickstart)
if(NOT DEFINED program_${STEP} OR NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "install_and_consume.cmake: STEP=${STEP} needs -DSOURCE_DIR and is one of "
                      "prefix, consumer, engine, examples")
endif()
build_against_prefix(${STEP} "${SOURCE_DIR}")
run_program(${STEP} "${WORK_DIR}/${STEP}-build" ${program_${STEP}})
