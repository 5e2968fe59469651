# `cmake --install`: the two commands (and the ONNX exporter cutcheck runs), the libraries
# as the CMake package `cutcheck` (namespaced targets cutcheck::core ... cutcheck::conform,
# cutcheck::cutcheck for the command), the headers under include/cutcheck/, a pkg-config
# file, and the docs.
include(CMakePackageConfigHelpers)

# Libraries in dependency order (the pkg-config file links them in this order, reversed).
set(CUTCHECK_LIBRARIES core quant model program author faults reference bound oracle harness properties conform mutate mlir onnx)
foreach(name ${CUTCHECK_LIBRARIES})
  set_target_properties(cutcheck_${name} PROPERTIES EXPORT_NAME ${name})
  add_library(cutcheck::${name} ALIAS cutcheck_${name})  # the same names in a build that vendors the source
  install(DIRECTORY ${name}/ DESTINATION ${CUTCHECK_INSTALL_INCLUDEDIR}/${name} FILES_MATCHING PATTERN "*.h")
  list(APPEND library_targets cutcheck_${name})
endforeach()
set_target_properties(cutcheck PROPERTIES EXPORT_NAME cutcheck)
set_target_properties(cutcheck-mlir PROPERTIES EXPORT_NAME cutcheck-mlir)

install(TARGETS ${library_targets} cutcheck cutcheck-mlir EXPORT cutcheckTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CUTCHECK_INSTALL_INCLUDEDIR})
# `cutcheck export-onnx` runs it from beside cutcheck: a part of the command, not a target.
install(TARGETS cutcheck-export-onnx RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cutcheck)
install(EXPORT cutcheckTargets NAMESPACE cutcheck:: DESTINATION ${config_dir})
configure_package_config_file(cmake/cutcheckConfig.cmake.in ${PROJECT_BINARY_DIR}/cutcheckConfig.cmake
                              INSTALL_DESTINATION ${config_dir})
# 0.x: a minor version may change the interface, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cutcheckConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cutcheckConfig.cmake ${PROJECT_BINARY_DIR}/cutcheckConfigVersion.cmake
        DESTINATION ${config_dir})

# Relative to the .pc file, so the installed tree can move (and be installed with --prefix).
file(RELATIVE_PATH pc_to_prefix /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/cutcheck.pc.in ${PROJECT_BINARY_DIR}/cutcheck.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cutcheck.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

file(GLOB docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES README.md ${docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY examples/downstream DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
