# The UCX and libfabric bridges (src/bridge/, docs/bridges.md). UCX's and
# libfabric's real caches, io_uring fixed buffers as the device.
include_guard(GLOBAL)
if(NOT TARGET regcache-ucx)
  return()
endif()

# UCX: found by tools/ucx.cmake (cache variables).
if(TOOLS_UCX_INCLUDE AND TOOLS_UCX_UCS AND TOOLS_UCX_UCM)
  regcache_add_test(NAME bridge-ucx SOURCES bridge-ucx.c
    LIBS ${TOOLS_UCX_UCS} ${TOOLS_UCX_UCM} Threads::Threads ${CMAKE_DL_LIBS}
    LABELS bridge ucx ARGS stale)
  target_include_directories(bridge-ucx PRIVATE ${TOOLS_UCX_INCLUDE})
  # Negative control: UCX's own hooks, no bridge.
  set_tests_properties(bridge-ucx PROPERTIES
    ENVIRONMENT "UCX_MEM_MMAP_HOOK_MODE=bistro")
  # No monitor, no claim: the bridge leaves UCX's hooks in place, says so,
  # and the hooks' blind spots remain (the stale checks of the control).
  add_test(NAME bridge-ucx-nomonitor COMMAND bridge-ucx stale)
  set_tests_properties(bridge-ucx-nomonitor PROPERTIES
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:regcache-ucx>;REGCACHE_MONITOR=none;UCX_MEM_MMAP_HOOK_MODE=bistro"
    PASS_REGULAR_EXPRESSION "UCX keeps its own memory hooks.*bridge absent"
    FAIL_REGULAR_EXPRESSION "check failed|FAIL"
    TIMEOUT 120 LABELS "bridge;ucx")
  foreach(m bpf userfaultfd)
    # The bridge preloaded, UCX's hooks still on.
    add_test(NAME bridge-ucx-hooks@${m} COMMAND bridge-ucx clean)
    set_tests_properties(bridge-ucx-hooks@${m} PROPERTIES
      ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:regcache-ucx>;REGCACHE_MONITOR=${m};UCX_MEM_MMAP_HOOK_MODE=bistro")
    # As a user runs it: the launcher, UCX's hooks off.
    add_test(NAME bridge-ucx-run@${m} COMMAND ${PROJECT_BINARY_DIR}/tools/regcache-run
      $<TARGET_FILE:bridge-ucx> clean)
    set_tests_properties(bridge-ucx-run@${m} PROPERTIES
      ENVIRONMENT "REGCACHE_MONITOR=${m}")
    set_tests_properties(bridge-ucx-hooks@${m} bridge-ucx-run@${m} PROPERTIES
      SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "bridge;ucx;monitor;${m}")
  endforeach()
endif()
