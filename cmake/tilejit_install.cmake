# `cmake --install build --prefix P`: libtilejit.so, the tilejit CLI, the public headers under
# P/include/tilejit/ (and nothing internal), and a CMake package: find_package(tilejit CONFIG)
# gives tilejit::tilejit. The config file is written by hand: the shared library hides its
# dependencies (SQLite is linked in, libcuda and libnvrtc are opened at run time), so there is
# nothing for a consumer to find but the library and its headers.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tilejit_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS tilejit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/tilejit
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/capi/tilejit_c.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tilejit)

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tilejit)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tilejitConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tilejitConfig.cmake INSTALL_DESTINATION ${config_dir}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tilejitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tilejitConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/tilejitConfigVersion.cmake
        DESTINATION ${config_dir})
