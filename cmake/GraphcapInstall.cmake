# Install and export: find_package(graphcap CONFIG) gives graphcap::graphcap and graphcap::fake,
# and the CMake helpers for kernels written once (graphcap_fake_kernels, graphcap_embed_kernels).
# Only the public headers are installed: the ones named below, which include nothing else (a test
# compiles each one alone against the install tree: tests/install), and the generated version.h.
# Internals (detail/, capture/ but its two public types, memory/ but the pool statistics,
# handle_access.h, driver/stream_fault.h, module_image.h, fake/internal/) stay in the source tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GRAPHCAP_PUBLIC_HEADERS
    arg.h buffer.h capture_options.h capture_scope.h capture_sequence.h condition.h device.h
    device_limits.h device_options.h launch_options.h
    error.h event.h graph.h graph_cache.h graph_cache_options.h graph_pool.h graphcap.h log.h loop.h memory_stats.h
    module.h param.h pending_graph.h result.h stream.h try.h
    capture/capture_state.h capture/graph_report.h
    memory/pool_stats.h
    driver/cuda_driver.h driver/cuda_types.h driver/driver_api.h driver/entry_points.def
    driver/entry_points.h driver/entry_traits.h driver/error_names.h driver/forwarding_driver.h
    driver/launch_dims.h)
set(GRAPHCAP_FAKE_PUBLIC_HEADERS
    kernel.h
    fake/compiled_kernel.h fake/fake_driver.h fake/fault_injecting_driver.h fake/faults.h
    fake/mock_driver.h)

# A sanitized build's libraries need the sanitizers' runtimes wherever they are linked: the
# exported targets carry the link flag, so a consumer of such an install needs no flags of its own.
if(GRAPHCAP_SANITIZE)
  list(JOIN GRAPHCAP_SANITIZE "," graphcap_install_sanitizers)
  foreach(target graphcap graphcap_fake)
    target_link_options(${target} INTERFACE
                        "$<INSTALL_INTERFACE:-fsanitize=${graphcap_install_sanitizers}>")
  endforeach()
endif()

install(TARGETS graphcap graphcap_fake EXPORT graphcapTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(header IN LISTS GRAPHCAP_PUBLIC_HEADERS)
  get_filename_component(dir "${header}" DIRECTORY)
  install(FILES "src/graphcap/${header}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/graphcap/${dir}")
endforeach()
install(FILES "${PROJECT_BINARY_DIR}/include/graphcap/version.h"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/graphcap")
foreach(header IN LISTS GRAPHCAP_FAKE_PUBLIC_HEADERS)
  get_filename_component(dir "${header}" DIRECTORY)
  install(FILES "fake_driver/graphcap/${header}"
          DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/graphcap/${dir}")
endforeach()
install(EXPORT graphcapTargets NAMESPACE graphcap::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/graphcap)

configure_package_config_file(cmake/graphcapConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/graphcapConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/graphcap)
# find_package(graphcap 0.4 CONFIG) takes any 0.4.x: before 1.0 a minor version may change the API.
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/graphcapConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/graphcapConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/graphcapConfigVersion.cmake"
              cmake/GraphcapFakeKernels.cmake cmake/GraphcapEmbedKernels.cmake
              cmake/GraphcapEmbedFile.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/graphcap)
