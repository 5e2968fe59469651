# `cmake --install`: the two commands (and the ONNX exporter cutcheck runs), the ONNX
# Runtime backend and llama.cpp engine launchers with their node programs, the libraries
# as the CMake package `cutcheck` (namespaced targets cutcheck::core ... cutcheck::conform,
# cutcheck::cutcheck for the command), the public headers under include/cutcheck/, a
# pkg-config file, and the docs.
include(CMakePackageConfigHelpers)

# cutcheck::conform, what a backend's own tests link (docs/ci.md): the conformance
# libraries together, from the backend interface to the reports.
add_library(cutcheck_conform INTERFACE)
target_link_libraries(cutcheck_conform INTERFACE cutcheck_backend cutcheck_campaign cutcheck_engine cutcheck_report)

# The libraries, installed as the package's targets.
set(CUTCHECK_LIBRARIES core quant model program author faults reference bound oracle harness properties backend campaign engine report
                       conform mutate mlir onnx)
foreach(name ${CUTCHECK_LIBRARIES})
  set_target_properties(cutcheck_${name} PROPERTIES EXPORT_NAME ${name})
  add_library(cutcheck::${name} ALIAS cutcheck_${name})  # the same names in a build that vendors the source
  list(APPEND library_targets cutcheck_${name})
endforeach()

# The public headers: what a backend tested from its own C++ project includes (a backend,
# a campaign and its report, the program folder it lowers; examples/downstream), and every
# header those include, found by following their `#include "room/name.h"` lines. Nothing
# else is installed, so the kernels' SIMD internals and the campaigns' machinery stay free
# to change.
set(CUTCHECK_PUBLIC_HEADERS backend/backend.h campaign/campaign.h report/report.h core/temp_folder.h core/version.h
                            program/folder.h program/manifest.h)
set(public_headers "")
set(pending ${CUTCHECK_PUBLIC_HEADERS})
while(pending)
  list(POP_FRONT pending header)
  if(header IN_LIST public_headers)
    continue()
  endif()
  list(APPEND public_headers ${header})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${header})
  file(STRINGS ${PROJECT_SOURCE_DIR}/${header} includes REGEX "^#include \"[a-z_]+/[a-z_0-9]+\\.h\"")
  list(TRANSFORM includes REPLACE "^#include \"([^\"]+)\".*$" "\\1")
  list(APPEND pending ${includes})
endwhile()
foreach(header IN LISTS public_headers)
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CUTCHECK_INSTALL_INCLUDEDIR}/${folder})
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
# cutcheck-ort and cutcheck-llamacpp: launchers beside cutcheck (tools/CMakeLists.txt
# configures them for the installed tree), and under share/cutcheck/NAME the node program
# with its package.json and lock file. Their node packages are not installed: nothing is
# downloaded at build or install time. docs/ci.md's one command fetches them there
# (`npm ci --ignore-scripts`), and until then each launcher says so (exit 2).
foreach(tool ort llamacpp)
  install(PROGRAMS ${PROJECT_BINARY_DIR}/installed/cutcheck-${tool} DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES tools/${tool}/run.mjs tools/${tool}/package.json tools/${tool}/package-lock.json
          DESTINATION ${CMAKE_INSTALL_DATADIR}/cutcheck/${tool})
endforeach()

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cutcheck)
install(EXPORT cutcheckTargets NAMESPACE cutcheck:: DESTINATION ${config_dir})
configure_package_config_file(cmake/cutcheckConfig.cmake.in ${PROJECT_BINARY_DIR}/cutcheckConfig.cmake
                              INSTALL_DESTINATION ${config_dir})
# 0.x: a minor version may change the interface, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cutcheckConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cutcheckConfig.cmake ${PROJECT_BINARY_DIR}/cutcheckConfigVersion.cmake
        DESTINATION ${config_dir})

# pkg-config: cutcheck::conform and every library it needs, read off the targets' link
# interfaces, so that a library added to a target's links is in the .pc file too.
# Depth first: each library goes in front of `pc_closure` once every library it needs is
# in it, so each comes before all it needs (the order a static link takes); an interface
# library (cutcheck::conform) has no file to link and is left out. What is not a cutcheck
# library goes to `pc_external`.
function(cutcheck_link_closure target)
  get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
  foreach(link IN LISTS links)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" link "${link}")  # a static library's private links
    if(link IN_LIST library_targets)
      if(NOT link IN_LIST pc_closure)
        cutcheck_link_closure(${link})
      endif()
    elseif(NOT link IN_LIST pc_external)
      list(APPEND pc_external ${link})
    endif()
  endforeach()
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY" AND NOT target IN_LIST pc_closure)
    list(PREPEND pc_closure ${target})
  endif()
  set(pc_closure ${pc_closure} PARENT_SCOPE)
  set(pc_external ${pc_external} PARENT_SCOPE)
endfunction()
set(pc_closure "")
set(pc_external "")
cutcheck_link_closure(cutcheck_conform)
list(TRANSFORM pc_closure REPLACE "^cutcheck_(.*)$" "-lcutcheck_\\1" OUTPUT_VARIABLE pc_libs)
# What the closure links besides: a pkg-config module where the Debian package has one.
set(pc_requires "")
foreach(link IN LISTS pc_external)
  if(link STREQUAL "fmt::fmt")
    list(APPEND pc_requires fmt)
  elseif(link STREQUAL "nlohmann_json::nlohmann_json")
    list(APPEND pc_requires nlohmann_json)
  elseif(link STREQUAL "Eigen3::Eigen")
    list(APPEND pc_requires eigen3)
  elseif(link STREQUAL "rapidcheck")
    list(APPEND pc_libs -lrapidcheck)  # librapidcheck-dev ships no .pc file
  elseif(link STREQUAL "Threads::Threads")
    list(APPEND pc_libs -pthread)
  else()
    message(FATAL_ERROR "cmake/install.cmake: no pkg-config equivalent of '${link}', which cutcheck::conform links: add one")
  endif()
endforeach()
list(JOIN pc_requires " " pc_requires)
list(JOIN pc_libs " " pc_libs)
# Relative to the .pc file, so the installed tree can move (and be installed with --prefix).
file(RELATIVE_PATH pc_to_prefix /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/cutcheck.pc.in ${PROJECT_BINARY_DIR}/cutcheck.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cutcheck.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

file(GLOB docs ${PROJECT_SOURCE_DIR}/docs/*.md)
# Laid out as in the clone, so that the README's and the pages' links hold.
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${docs} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY examples/downstream DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
