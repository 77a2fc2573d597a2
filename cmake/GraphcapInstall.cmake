# Install and export: find_package(graphcap CONFIG) gives graphcap::graphcap and graphcap::fake.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS graphcap graphcap_fake EXPORT graphcapTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY src/graphcap fake_driver/graphcap DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(EXPORT graphcapTargets NAMESPACE graphcap::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/graphcap)

configure_package_config_file(cmake/graphcapConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/graphcapConfig.cmake"
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/graphcap)
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/graphcapConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/graphcapConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/graphcapConfigVersion.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/graphcap)
