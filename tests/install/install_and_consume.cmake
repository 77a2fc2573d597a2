# cmake -DGRAPHCAP_BUILD_DIR=... -DWORK_DIR=... -DCONSUMER_SOURCE_DIR=... -DEXAMPLES_SOURCE_DIR=...
#       [-DENGINE_SOURCE_DIR=...]
#       -DGENERATOR=... [-DMAKE_PROGRAM=...] [-DCXX_COMPILER=...] [-DCONFIG=...]
#       -P install_and_consume.cmake
#
# Installs the graphcap build in GRAPHCAP_BUILD_DIR into WORK_DIR/prefix, then configures, builds
# and runs the consumer project, the engine's GoogleTest suite and the examples against that
# prefix alone, with no flags beyond
# the compiler and generator: the package must carry everything else. Any failing step fails the
# test with its output.
cmake_minimum_required(VERSION 3.25)

foreach(required GRAPHCAP_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR EXAMPLES_SOURCE_DIR GENERATOR)
  if(NOT DEFINED ${required} OR "${${required}}" STREQUAL "")
    message(FATAL_ERROR "install_and_consume.cmake: -D${required}=... is required")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${prefix}" "${WORK_DIR}/consumer-build" "${WORK_DIR}/engine-build"
     "${WORK_DIR}/examples-build")

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
run_step("cmake --install" "${CMAKE_COMMAND}" --install "${GRAPHCAP_BUILD_DIR}"
         --prefix "${prefix}" ${config_args})

# Nothing but the package: no source-tree paths, no sanitizer or warning flags.
function(build_against_prefix name source_dir)
  set(build_dir "${WORK_DIR}/${name}-build")
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
  if(CONFIG)
    list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${CONFIG}")
  endif()
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

build_against_prefix(consumer "${CONSUMER_SOURCE_DIR}")
run_program(consumer "${WORK_DIR}/consumer-build" graphcap_consumer)
if(ENGINE_SOURCE_DIR)
  build_against_prefix(engine "${ENGINE_SOURCE_DIR}")
  run_program(engine "${WORK_DIR}/engine-build" engine_tests)
endif()
build_against_prefix(examples "${EXAMPLES_SOURCE_DIR}")
run_program(quickstart "${WORK_DIR}/examples-build" quickstart/quickstart)
