# cmake --install (docs/install.md): what goes where.
#   include/agmm.h, include/agmm_ext.h, include/agmm_model.h  the public headers
#   lib*/libagmm.so.X.Y.Z (+ links), libagmm.a  the library, shared and static
#   lib*/pkgconfig/agmm.pc                       pkg-config
#   lib*/cmake/agmm/                             find_package(agmm):
#       agmm::agmm (shared), agmm::agmm_static
#   bin/agmm                                     the tool (libagmm linked in
#                                                statically: no RPATH needed)
include(CMakePackageConfigHelpers)

set(AGMM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/agmm CACHE STRING
    "Where agmmConfig.cmake goes, relative to the prefix")

install(FILES include/agmm.h include/agmm_ext.h include/agmm_model.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set_target_properties(agmm_shared PROPERTIES EXPORT_NAME agmm)
set_target_properties(agmm PROPERTIES EXPORT_NAME agmm_static)
install(TARGETS agmm_shared agmm EXPORT agmmTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS agmm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The CMake package. agmm::agmm_static's link interface names the same
# libraries the build found (absolute paths of libopenblas, libdnnl,
# libgomp) and the imported targets Threads::Threads and MPI::MPI_C, which
# agmmConfig.cmake finds again with find_dependency.
install(EXPORT agmmTargets NAMESPACE agmm::
        DESTINATION ${AGMM_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/agmmConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/agmmConfig.cmake
  INSTALL_DESTINATION ${AGMM_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/agmmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/agmmConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/agmmConfigVersion.cmake
        DESTINATION ${AGMM_INSTALL_CMAKEDIR})

# agmm.pc. Relocatable: the prefix is found from the .pc file's own place
# (${pcfiledir}), so `cmake --install build --prefix DIR` needs no
# reconfigure. The shared library records its dependencies itself (Libs);
# a static link (pkg-config --static) also needs Libs.private and the
# Requires.private modules: Debian's openblas.pc, and ompi-c.pc (or
# mpich.pc) in an MPI build; hwloc as -lhwloc (hwloc.pc --static wants
# -ludev, which libhwloc-dev does not bring; the shared libhwloc does). oneDNN has no .pc on Debian: -ldnnl -lgomp.
set(AGMM_PC_REQUIRES_PRIVATE "")
set(AGMM_PC_LIBS_PRIVATE "")
find_package(PkgConfig QUIET)
if(AGMM_BLAS STREQUAL "OpenBLAS")
  list(APPEND AGMM_PC_REQUIRES_PRIVATE openblas)
else()
  foreach(_l IN LISTS BLAS_LIBRARIES)
    string(APPEND AGMM_PC_LIBS_PRIVATE " ${_l}")
  endforeach()
endif()
if(AGMM_ONEDNN)
  string(APPEND AGMM_PC_LIBS_PRIVATE " -ldnnl -lgomp")
endif()
if(AGMM_HWLOC)  # not hwloc.pc: its static libs want libudev's (-ludev)
  string(APPEND AGMM_PC_LIBS_PRIVATE " -lhwloc")
endif()
if(AGMM_MPI)
  set(_agmm_mpi_pc "")
  if(PKG_CONFIG_FOUND)
    if(MPI_C_LIBRARIES MATCHES "openmpi")
      pkg_check_modules(_AGMM_PC_OMPI QUIET ompi-c)
      if(_AGMM_PC_OMPI_FOUND)
        set(_agmm_mpi_pc ompi-c)
      endif()
    elseif(MPI_C_LIBRARIES MATCHES "mpich")
      pkg_check_modules(_AGMM_PC_MPICH QUIET mpich)
      if(_AGMM_PC_MPICH_FOUND)
        set(_agmm_mpi_pc mpich)
      endif()
    endif()
  endif()
  if(_agmm_mpi_pc)
    list(APPEND AGMM_PC_REQUIRES_PRIVATE ${_agmm_mpi_pc})
  else()  # no .pc for this MPI: the libraries FindMPI found
    foreach(_l IN LISTS MPI_C_LIBRARIES)
      string(APPEND AGMM_PC_LIBS_PRIVATE " ${_l}")
    endforeach()
  endif()
endif()
string(APPEND AGMM_PC_LIBS_PRIVATE " -lm -pthread")
string(STRIP "${AGMM_PC_LIBS_PRIVATE}" AGMM_PC_LIBS_PRIVATE)
string(REPLACE ";" ", " AGMM_PC_REQUIRES_PRIVATE "${AGMM_PC_REQUIRES_PRIVATE}")
# ${pcfiledir}/<..> back up from LIBDIR/pkgconfig to the prefix.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "agmm.pc: CMAKE_INSTALL_LIBDIR must be relative to the prefix")
endif()
file(RELATIVE_PATH AGMM_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" AGMM_PC_UP "${AGMM_PC_UP}")
configure_file(cmake/agmm.pc.in ${CMAKE_CURRENT_BINARY_DIR}/agmm.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/agmm.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
