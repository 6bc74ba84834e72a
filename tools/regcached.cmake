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
  ${PROJECT_SOURCE_DIR}/src/daemon/log.c)
# The skeleton is generated in the top directory's scope: depend on its
# target rather than list the file (a fresh configure would not know it).
add_dependencies(regcached regcache_node_skel)
target_include_directories(regcached PRIVATE ${PROJECT_SOURCE_DIR}/src
  ${REGCACHE_BPF_OUT} ${PROJECT_SOURCE_DIR}/src/monitor/bpf)
target_link_libraries(regcached PRIVATE PkgConfig::LIBBPF)
include(GNUInstallDirs)
install(TARGETS regcached RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR}
  COMPONENT tools)

# regcached-bench: the daemon's costs against the in-process bpf monitor.
add_executable(regcached-bench ${CMAKE_CURRENT_LIST_DIR}/regcached-bench.c)
target_link_libraries(regcached-bench PRIVATE regcache PkgConfig::URING)
add_dependencies(regcached-bench regcached)
