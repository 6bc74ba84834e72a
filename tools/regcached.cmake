# regcached: the node's monitor daemon (src/daemon/, docs/regcached.md).
# Built with the eBPF monitor (src/monitor/bpf.cmake builds the node
# variant of its programs).
if(NOT REGCACHE_HAVE_BPF)
  message(STATUS "regcached: not built (needs the eBPF monitor's toolchain)")
  return()
endif()
add_executable(regcached ${CMAKE_CURRENT_LIST_DIR}/regcached.c
  ${PROJECT_SOURCE_DIR}/src/daemon/server.c
  ${PROJECT_SOURCE_DIR}/src/daemon/clients.c
  ${PROJECT_SOURCE_DIR}/src/daemon/bpf_set.c
  ${PROJECT_SOURCE_DIR}/src/daemon/daemon_log.c
  ${PROJECT_SOURCE_DIR}/src/kernel/bpf_kernel.c
  ${PROJECT_SOURCE_DIR}/src/kernel/vma.c
  ${PROJECT_SOURCE_DIR}/src/base/env.c
  ${PROJECT_SOURCE_DIR}/src/base/log.c)
# The skeleton is generated in the top directory's scope: depend on its
# target rather than list the file (a fresh configure would not know it).
add_dependencies(regcached regcache_node_skel)
target_include_directories(regcached PRIVATE ${PROJECT_SOURCE_DIR}/src
  ${REGCACHE_BPF_OUT} ${PROJECT_SOURCE_DIR}/src/monitor/bpf)
target_link_libraries(regcached PRIVATE PkgConfig::LIBBPF)
include(GNUInstallDirs)
install(TARGETS regcached RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR}
  COMPONENT tools)

# regcached-bench: the daemon's costs against the in-process bpf monitor;
# its clock and medians are the other benchmarks' (device.c).
add_executable(regcached-bench ${CMAKE_CURRENT_LIST_DIR}/regcached-bench.c
  ${CMAKE_CURRENT_LIST_DIR}/device.c)
target_link_libraries(regcached-bench PRIVATE regcache PkgConfig::URING)
add_dependencies(regcached-bench regcached)
# From the build tree it starts the daemon beside it; installed, the one in
# <sbindir>, found relative to its own directory.
file(RELATIVE_PATH regcached_sbin_from_bin ${CMAKE_INSTALL_FULL_BINDIR}
  ${CMAKE_INSTALL_FULL_SBINDIR})
target_compile_definitions(regcached-bench PRIVATE
  REGCACHED_FROM_BINDIR="${regcached_sbin_from_bin}")
regcache_install_tool(regcached-bench)

# The systemd units (deploy/systemd) name the installed daemon and its
# documentation, so they are written at install time, when the prefix is
# known (cmake --install --prefix, or /usr for the Debian packages), as
# regcache.pc is.
install(FILES ${PROJECT_SOURCE_DIR}/docs/regcached.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT tools)
foreach(unit regcached.service regcached.socket)
  install(CODE "
    foreach(dir SBINDIR DOCDIR)
      if(dir STREQUAL SBINDIR)
        set(rel \"${CMAKE_INSTALL_SBINDIR}\")
      else()
        set(rel \"${CMAKE_INSTALL_DOCDIR}\")
      endif()
      if(IS_ABSOLUTE \"\${rel}\")
        set(full_\${dir} \"\${rel}\")
      else()
        set(full_\${dir} \"\${CMAKE_INSTALL_PREFIX}/\${rel}\")
      endif()
    endforeach()
    file(READ \"${PROJECT_SOURCE_DIR}/deploy/systemd/${unit}\" text)
    string(REPLACE /usr/sbin/regcached \"\${full_SBINDIR}/regcached\" text \"\${text}\")
    string(REPLACE /usr/share/doc/regcache/regcached.md \"\${full_DOCDIR}/regcached.md\" text \"\${text}\")
    file(WRITE \"${CMAKE_CURRENT_BINARY_DIR}/systemd/${unit}\" \"\${text}\")
    " COMPONENT tools)
  # <prefix>/lib/systemd/system is in systemd's unit path for /usr and
  # /usr/local alike.
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/systemd/${unit}
    DESTINATION lib/systemd/system COMPONENT tools)
endforeach()
