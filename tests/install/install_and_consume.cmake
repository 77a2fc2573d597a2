# cmake -DGRAPHCAP_BUILD_DIR=... -DWORK_DIR=... -DCONSUMER_SOURCE_DIR=... -DGENERATOR=...
#       [-DMAKE_PROGRAM=...] [-DCXX_COMPILER=...] [-DCONFIG=...] [-DSANITIZE=a,b]
#       -P install_and_consume.cmake
#
# Installs the graphcap build in GRAPHCAP_BUILD_DIR into WORK_DIR/prefix, then configures, builds
# and runs the consumer project against that prefix alone. Any failing step fails the test with
# its output.
cmake_minimum_required(VERSION 3.25)

foreach(required GRAPHCAP_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR GENERATOR)
  if(NOT DEFINED ${required} OR "${${required}}" STREQUAL "")
    message(FATAL_ERROR "install_and_consume.cmake: -D${required}=... is required")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${prefix}" "${consumer_build}")

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

set(configure_args -S "${CONSUMER_SOURCE_DIR}" -B "${consumer_build}" -G "${GENERATOR}"
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
if(SANITIZE)
  # The installed libraries are instrumented: the consumer must link the same runtimes.
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}"
       "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
run_step("configure the consumer" "${CMAKE_COMMAND}" ${configure_args})
run_step("build the consumer" "${CMAKE_COMMAND}" --build "${consumer_build}" ${config_args})

set(consumer "${consumer_build}/bin/graphcap_consumer")
if(CONFIG AND NOT EXISTS "${consumer}")
  set(consumer "${consumer_build}/bin/${CONFIG}/graphcap_consumer")  # multi-config generators
endif()
run_step("run the consumer" "${consumer}")
message(STATUS "the consumer said: ${last_output}")
