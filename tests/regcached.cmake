# Tests of the regcached daemon and its monitor backend. Each runs under
# regcached-launch, which starts a private daemon as root on a private
# socket and runs the program as uid 65534 with no capabilities (or as root
# with ROOT, for tests that drop privileges themselves). Not root: skip.
if(NOT TARGET regcached)
  return()
endif()

# Attack tests speak the wire protocol by hand (regcached-wire.h).
function(regcached_wire_test NAME)
  regcache_add_test(NAME ${NAME} SOURCES ${NAME}.c DAEMON ${ARGN})
  target_include_directories(${NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src)
endfunction()
regcached_wire_test(regcached-hostile)
regcached_wire_test(regcached-pid-reuse ROOT)
regcached_wire_test(regcached-client-exit ROOT)
regcached_wire_test(regcached-ring-isolation ROOT)
regcached_wire_test(regcached-watch-unopenable ROOT)
regcached_wire_test(regcached-flood ROOT DAEMON_ARGS --max-per-user 16
  --max-files-per-user 8)

# A second, static copy of the library inside a shared object: the core
# and the regcached backend (the in-process backends are stubs there).
set(copy_srcs cache.c region.c index.c lru.c budget.c stats.c base/env.c base/fork.c
  base/log.c monitor_core.c
  monitor/none.c monitor/regcached.c monitor/ring.c kernel/vma.c
  monitor/ranges.c registrar/io_uring.c version.c)
list(TRANSFORM copy_srcs PREPEND ${PROJECT_SOURCE_DIR}/src/)
add_library(regcache_copy STATIC ${copy_srcs})
target_include_directories(regcache_copy PUBLIC ${PROJECT_SOURCE_DIR}/include
  PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(regcache_copy PUBLIC PkgConfig::URING Threads::Threads)
add_library(regcache_copy_test_helpers STATIC lib/helpers.c)
target_include_directories(regcache_copy_test_helpers PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/lib)
target_link_libraries(regcache_copy_test_helpers PUBLIC regcache_copy)
set_target_properties(regcache_copy regcache_copy_test_helpers PROPERTIES
  POSITION_INDEPENDENT_CODE ON)
add_library(regcached-copy-helper SHARED lib/regcached-copy-helper.c)
target_link_libraries(regcached-copy-helper PRIVATE regcache_copy_test_helpers)
target_link_options(regcached-copy-helper PRIVATE -Wl,--exclude-libs,ALL)
regcache_add_test(NAME regcached-two-copies SOURCES regcached-two-copies.c
  LIBS regcached-copy-helper DAEMON)
regcache_add_test(NAME regcached-namespaces SOURCES regcached-namespaces.c
  DAEMON ROOT ARGS $<TARGET_FILE:changes-uring> munmap madvise)
regcache_add_test(NAME regcached-startup SOURCES regcached-startup.c DAEMON)
add_executable(regcached-refuse regcached-refuse.c)
target_link_libraries(regcached-refuse PRIVATE regcache_test_helpers regcache)
add_test(NAME regcached-refuse COMMAND regcached-refuse $<TARGET_FILE:regcached>)
set_tests_properties(regcached-refuse PROPERTIES SKIP_RETURN_CODE 77
  LABELS "regcached")
