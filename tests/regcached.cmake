# Tests of the regcached daemon and its monitor backend. Each runs under
# regcached-launch, which starts a private daemon as root on a private
# socket and runs the program as uid 65534 with no capabilities (or as root
# with ROOT, for tests that drop privileges themselves). Not root: skip.
if(NOT TARGET regcached)
  return()
endif()

add_executable(regcached-launch regcached-launch.c)
target_compile_definitions(regcached-launch PRIVATE
  RCD_DAEMON_PATH="$<TARGET_FILE:regcached>")
add_dependencies(regcached-launch regcached)

# regcached_add_test(NAME n SOURCES a.c ... [ROOT] [LIBS ...] [TIMEOUT s]
#                    [DAEMON_ARGS ...] [RUNS "name:arg arg" ...])
# PROGRAM: run an existing test program (a scenario of tests/CMakeLists.txt)
# instead of building one from SOURCES.
# RUNS: one CTest test per entry, named n-name, with the program's args;
# without RUNS, one test n.
function(regcached_add_test)
  cmake_parse_arguments(T "ROOT" "NAME;TIMEOUT;PROGRAM" "SOURCES;LIBS;DAEMON_ARGS;RUNS" ${ARGN})
  if(NOT T_PROGRAM)
    set(T_PROGRAM ${T_NAME})
  endif()
  if(NOT TARGET ${T_PROGRAM})
    add_executable(${T_PROGRAM} ${T_SOURCES})
    target_link_libraries(${T_PROGRAM} PRIVATE regcache_test_helpers regcache ${T_LIBS})
    target_include_directories(${T_PROGRAM} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  endif()
  set(launch $<TARGET_FILE:regcached-launch>)
  if(T_ROOT)
    list(APPEND launch --root)
  endif()
  foreach(a ${T_DAEMON_ARGS})
    list(APPEND launch --daemon-arg ${a})
  endforeach()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(NOT T_RUNS)
    set(T_RUNS "-:")
  endif()
  foreach(run ${T_RUNS})
    string(REGEX MATCH "^([^:]*):(.*)$" _ "${run}")
    set(suffix "${CMAKE_MATCH_1}")
    separate_arguments(args UNIX_COMMAND "${CMAKE_MATCH_2}")
    if(suffix STREQUAL "-")
      set(name ${T_NAME})
    else()
      set(name ${T_NAME}-${suffix})
    endif()
    add_test(NAME ${name} COMMAND ${launch} -- $<TARGET_FILE:${T_PROGRAM}> ${args})
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77
      TIMEOUT ${T_TIMEOUT} LABELS "regcached;monitor")
  endforeach()
endfunction()

set(scenario_cases munmap mremap madvise uring_madvise map_fixed sbrk
  free_malloc shmdt guard file_punch private_file overflow clone_vm int80)
set(runs "")
foreach(c ${scenario_cases})
  list(APPEND runs "${c}:${c} plain" "${c}@restart:${c} restart" "${c}@dead:${c} dead")
endforeach()
regcached_add_test(NAME regcached-scenarios SOURCES regcached-scenarios.c RUNS ${runs})
# The scenarios of the other monitors (monitor-*.c, each written once),
# through the daemon as uid 65534: the cross-thread race, and each way an
# application changes its memory. regcached-scenarios adds what only a
# daemon can do: die or restart between caching a buffer and changing it.
regcached_add_test(NAME monitor-race@regcached PROGRAM monitor-race TIMEOUT 300)
foreach(s free-malloc madvise map-fixed mremap munmap sbrk shmdt uring-madvise)
  regcached_add_test(NAME monitor-${s}@regcached PROGRAM monitor-${s})
endforeach()
# A forked child registers with the daemon as a client of its own (the
# parent's ring and socket are not its own), and the parent's registration
# outlives the child's exit. As root: the test reads frame numbers.
regcached_add_test(NAME monitor-fork@regcached PROGRAM monitor-fork ROOT)
# Attack tests speak the wire protocol by hand (regcached-wire.h).
function(regcached_wire_test NAME)
  regcached_add_test(NAME ${NAME} SOURCES ${NAME}.c ${ARGN})
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
set(copy_srcs cache.c region.c index.c lru.c budget.c stats.c log.c monitor.c
  monitor/none.c monitor/regcached.c monitor/ring.c monitor/vma.c
  monitor/ranges.c registrar/io_uring.c version.c)
list(TRANSFORM copy_srcs PREPEND ${PROJECT_SOURCE_DIR}/src/)
add_library(regcache_copy STATIC ${copy_srcs})
target_include_directories(regcache_copy PUBLIC ${PROJECT_SOURCE_DIR}/include
  PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(regcache_copy PUBLIC PkgConfig::URING Threads::Threads)
add_library(regcache_copy_test_helpers STATIC helpers.c)
target_link_libraries(regcache_copy_test_helpers PUBLIC regcache_copy)
set_target_properties(regcache_copy regcache_copy_test_helpers PROPERTIES
  POSITION_INDEPENDENT_CODE ON)
add_library(regcached-copy-helper SHARED regcached-copy-helper.c)
target_link_libraries(regcached-copy-helper PRIVATE regcache_copy_test_helpers)
target_link_options(regcached-copy-helper PRIVATE -Wl,--exclude-libs,ALL)
regcached_add_test(NAME regcached-two-copies SOURCES regcached-two-copies.c
  LIBS regcached-copy-helper)
regcached_add_test(NAME regcached-namespaces SOURCES regcached-namespaces.c ROOT
  RUNS "munmap:$<TARGET_FILE:regcached-scenarios> munmap"
       "madvise:$<TARGET_FILE:regcached-scenarios> madvise")
regcached_add_test(NAME regcached-startup SOURCES regcached-startup.c)
add_executable(regcached-refuse regcached-refuse.c)
target_link_libraries(regcached-refuse PRIVATE regcache_test_helpers regcache)
add_test(NAME regcached-refuse COMMAND regcached-refuse $<TARGET_FILE:regcached>)
set_tests_properties(regcached-refuse PROPERTIES SKIP_RETURN_CODE 77
  LABELS "regcached")

# Under ASan the free_malloc scenario is reported "Not Run (Disabled)",
# not passed: it needs free() to unmap a chunk at once, which ASan's
# allocator never does (monitor-free-malloc skips likewise). It runs in the
# plain and TSan builds.
if(REGCACHE_SANITIZE MATCHES address)
  message(STATUS "regcached: the free_malloc scenarios are disabled under ASan")
  set_tests_properties(regcached-scenarios-free_malloc
    regcached-scenarios-free_malloc@restart regcached-scenarios-free_malloc@dead
    PROPERTIES DISABLED TRUE)
endif()
