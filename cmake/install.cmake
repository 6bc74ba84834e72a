# What `cmake --install` installs, by component (one Debian package each,
# see packaging.cmake):
#   runtime  libregcache.so.<SOVERSION>
#   dev      headers (a bridge's too: regcache/fabric.h), the libregcache.so
#            link, regcache.pc, the CMake package (regcache::regcache), the
#            man pages and tools/example/example.c
#   tools    the programs that call regcache_install_tool()
include(CMakePackageConfigHelpers)

set(REGCACHE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/regcache)

install(TARGETS regcache EXPORT regcache-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT runtime NAMELINK_COMPONENT dev)
foreach(header IN LISTS REGCACHE_PUBLIC_HEADERS REGCACHE_BRIDGE_HEADERS)
  # include/regcache.h -> <includedir>, include/regcache/x.h -> <includedir>/regcache
  file(RELATIVE_PATH rel ${CMAKE_CURRENT_SOURCE_DIR}/include
       ${CMAKE_CURRENT_SOURCE_DIR}/${header})
  get_filename_component(subdir ${rel} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${subdir}
    COMPONENT dev)
endforeach()
install(FILES tools/example/example.c DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
  COMPONENT dev)

# The CMake package: find_package(regcache) gives regcache::regcache. The
# library's dependencies are private and its headers need none of them, so
# the package finds nothing else.
install(EXPORT regcache-targets NAMESPACE regcache::
  DESTINATION ${REGCACHE_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(cmake/regcache-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/regcache-config.cmake
  INSTALL_DESTINATION ${REGCACHE_CMAKE_DIR})
# A minor release only adds calls (see the map), so any 0.x satisfies a
# request for 0.1, and any 1.x one for 1.0.
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/regcache-config-version.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/regcache-config.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/regcache-config-version.cmake
  DESTINATION ${REGCACHE_CMAKE_DIR} COMPONENT dev)

# regcache.pc. Its prefix is the one given at install time (cmake --install
# --prefix, or /usr when CPack builds the Debian packages), not at configure
# time, so it is written by an install script. The private requirements are
# those of the parts built: liburing, libibverbs (verbs.cmake), libbpf
# (bpf.cmake); pkg-config --cflags includes their flags, --static their libs.
if(REGCACHE_HAVE_BPF)
  list(APPEND REGCACHE_PC_REQUIRES_PRIVATE libbpf)
endif()
string(JOIN " " REGCACHE_PC_REQUIRES_PRIVATE ${REGCACHE_PC_REQUIRES_PRIVATE})
set(REGCACHE_PC_LIBS_PRIVATE_LINE "")
if(REGCACHE_PC_LIBS_PRIVATE)
  string(JOIN " " REGCACHE_PC_LIBS_PRIVATE_LINE "Libs.private:" ${REGCACHE_PC_LIBS_PRIVATE})
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(REGCACHE_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(REGCACHE_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(REGCACHE_PC_PREFIX "@REGCACHE_PC_PREFIX@") # filled in at install time
configure_file(cmake/regcache.pc.in ${CMAKE_CURRENT_BINARY_DIR}/regcache.pc.in @ONLY)
install(CODE "
  set(REGCACHE_PC_TEMPLATE \"${CMAKE_CURRENT_BINARY_DIR}/regcache.pc.in\")
  set(REGCACHE_PC_OUT \"${CMAKE_CURRENT_BINARY_DIR}/pc-install/regcache.pc\")
  include(\"${CMAKE_CURRENT_SOURCE_DIR}/cmake/write-pc.cmake\")
  " COMPONENT dev)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pc-install/regcache.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# regcache_install_tool(<target>): install a program of tools/ (or any other
# directory) into <bindir>, in the tools component.
function(regcache_install_tool target)
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    COMPONENT tools)
endfunction()
