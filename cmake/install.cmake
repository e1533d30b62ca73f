# `cmake --install`: the executables, the shared libtilec and libtilert, the public headers, the CMake
# package (find_package(tilec): tilec::tilert, tilec::tileops, tilec::tilec, tilec::compiler, tilec::embed and
# tilec_add_kernels) and pkg-config files. Every path in the package is relative to the prefix, so an
# installed tree can be moved or copied (docs/install.md). A runtime-only build installs libtilert,
# tilec-embed and the headers.
include(CMakePackageConfigHelpers)
set(TILEC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tilec)

set(_tilec_installed tilert_shared tilec_embed)
if(TARGET tilec_shared)
  list(APPEND _tilec_installed tilec_shared tilec_cli)
endif()
if(TARGET tileops_shared)
  list(APPEND _tilec_installed tileops_shared)
endif()
install(TARGETS ${_tilec_installed} EXPORT tilecTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development)
if(TARGET tilec_onnx_cli)
  install(TARGETS tilec_onnx_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES include/tilec/tilert.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tilec)
if(TARGET tilec_shared)
  install(FILES include/tilec/tilec.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tilec)
endif()
if(TARGET tileops_shared)
  install(FILES include/tilec/tileops.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tilec)
endif()

install(EXPORT tilecTargets NAMESPACE tilec:: DESTINATION ${TILEC_CMAKE_DIR})
configure_package_config_file(cmake/tilecConfig.cmake.in ${CMAKE_BINARY_DIR}/package/tilecConfig.cmake
                              INSTALL_DESTINATION ${TILEC_CMAKE_DIR})
# 0.x: a minor version may change the embedded-module format or the API, so only x.y.* match.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/tilecConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/tilecConfig.cmake ${CMAKE_BINARY_DIR}/package/tilecConfigVersion.cmake
              cmake/TilecAddKernels.cmake
        DESTINATION ${TILEC_CMAKE_DIR})

# pkg-config: prefix is found from the .pc file's own place (${pcfiledir}), so the tree is relocatable.
file(RELATIVE_PATH TILEC_PC_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" TILEC_PC_TO_PREFIX "${TILEC_PC_TO_PREFIX}")
set(TILEC_PC_LIBS_PRIVATE "-ldl -lpthread -lm")
configure_file(cmake/tilert.pc.in ${CMAKE_BINARY_DIR}/package/tilert.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/tilert.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET tileops_shared)
  configure_file(cmake/tileops.pc.in ${CMAKE_BINARY_DIR}/package/tileops.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/package/tileops.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
if(TARGET tilec_shared)
  configure_file(cmake/tilec.pc.in ${CMAKE_BINARY_DIR}/package/tilec.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/package/tilec.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
