# regcache_subscriber_wait(): a thread sleeps until the monitor reports a
# change (docs/monitor-bpf.md, Waiting), and the UCX bridge's forwarding
# thread that uses it.
include_guard(GLOBAL)

regcache_add_test(NAME monitor-wait SOURCES monitor-wait.c TIMEOUT 180
  LABELS monitor MONITORS bpf userfaultfd none)
target_include_directories(monitor-wait PRIVATE ${PROJECT_SOURCE_DIR}/tools/common)
# Numbers, not a property: what a sleeper costs the unmapping thread.
add_test(NAME monitor-wait-bench@bpf COMMAND monitor-wait bench)
set_tests_properties(monitor-wait-bench@bpf PROPERTIES
  ENVIRONMENT "REGCACHE_MONITOR=bpf" SKIP_RETURN_CODE 77 TIMEOUT 300
  LABELS "bench")

if(TARGET regcache-ucx AND TOOLS_UCX_INCLUDE AND TOOLS_UCX_UCS AND TOOLS_UCX_UCM)
  add_executable(bridge-ucx-idle bridge-ucx-idle.c lib/bridge_ucx_rcache.c)
  target_link_libraries(bridge-ucx-idle PRIVATE regcache_test_helpers regcache
    ${TOOLS_UCX_UCS} ${TOOLS_UCX_UCM} ${CMAKE_DL_LIBS})
  target_include_directories(bridge-ucx-idle PRIVATE
    ${PROJECT_SOURCE_DIR}/tests/lib ${TOOLS_UCX_INCLUDE} ${PROJECT_SOURCE_DIR}/tools/common)
  # The forwarding thread asleep: under 5% of a core (measured ~0).
  add_test(NAME bridge-ucx-idle COMMAND ${PROJECT_BINARY_DIR}/tools/regcache-run
    $<TARGET_FILE:bridge-ucx-idle> below 5)
  set_tests_properties(bridge-ucx-idle PROPERTIES
    ENVIRONMENT "REGCACHE_MONITOR=bpf;REGCACHE_UCX_THREAD=1"
    SKIP_RETURN_CODE 77 TIMEOUT 60 LABELS "bridge;ucx")
  # Negative control: the old 20 us polling, over 2% (measured ~40-50% on
  # a quiet machine, 9% with other tests and guests on both cores: a
  # polling thread gets what the CPU has left, a sleeping one takes ~0).
  add_test(NAME bridge-ucx-idle-poll COMMAND ${PROJECT_BINARY_DIR}/tools/regcache-run
    $<TARGET_FILE:bridge-ucx-idle> above 2)
  set_tests_properties(bridge-ucx-idle-poll PROPERTIES
    ENVIRONMENT "REGCACHE_MONITOR=bpf;REGCACHE_UCX_THREAD=1;REGCACHE_UCX_POLL_US=20"
    SKIP_RETURN_CODE 77 TIMEOUT 60 LABELS "bridge;ucx")
  # Each measures one thread's CPU time: not beside the other tests.
  set_tests_properties(bridge-ucx-idle bridge-ucx-idle-poll PROPERTIES
    RUN_SERIAL TRUE)
  # The bridge is preloaded ahead of ASan's runtime (as in bridges.cmake).
  if(REGCACHE_SANITIZE MATCHES address)
    set_property(TEST bridge-ucx-idle bridge-ucx-idle-poll APPEND PROPERTY
      ENVIRONMENT "ASAN_OPTIONS=verify_asan_link_order=0")
  endif()
endif()
