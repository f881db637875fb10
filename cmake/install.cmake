# cmake --install: the headers, the library, the `mantissa` program (apps/CMakeLists.txt),
# the CMake package (mantissaConfig.cmake: find_package(mantissa CONFIG REQUIRED) ->
# mantissa::mantissa) and a pkg-config file (mantissa.pc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MANTISSA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mantissa)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mantissa DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS mantissa EXPORT mantissaTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT mantissaTargets NAMESPACE mantissa:: DESTINATION ${MANTISSA_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/mantissaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mantissaConfig.cmake INSTALL_DESTINATION ${MANTISSA_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mantissaConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mantissaConfig.cmake
              ${PROJECT_BINARY_DIR}/mantissaConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/mantissaDnnl.cmake
        DESTINATION ${MANTISSA_CMAKE_DIR})

# The .pc file finds the prefix from its own place, so `--prefix` at install time holds.
set(MANTISSA_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH MANTISSA_PC_TO_PREFIX /prefix/${MANTISSA_PC_DIR} /prefix)
string(REGEX REPLACE "/$" "" MANTISSA_PC_TO_PREFIX "${MANTISSA_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/mantissa.pc.in ${PROJECT_BINARY_DIR}/mantissa.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/mantissa.pc DESTINATION ${MANTISSA_PC_DIR})
