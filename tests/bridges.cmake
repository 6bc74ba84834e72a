# The UCX and libfabric bridges (src/bridge/, docs/bridges.md). UCX's and
# libfabric's real caches, io_uring fixed buffers as the device.
include_guard(GLOBAL)
if(NOT TARGET regcache-ucx)
  return()
endif()

regcache_add_test(NAME bridge-subscriber SOURCES bridge-subscriber.c
  LABELS bridge MONITORS bpf userfaultfd)

# UCX: found by tools/common/common.cmake (cache variables).
if(TOOLS_UCX_INCLUDE AND TOOLS_UCX_UCS AND TOOLS_UCX_UCM)
  regcache_add_test(NAME bridge-ucx
    SOURCES bridge-ucx.c lib/bridge_oracle.c lib/bridge_ucx_rcache.c
    LIBS ${TOOLS_UCX_UCS} ${TOOLS_UCX_UCM} Threads::Threads ${CMAKE_DL_LIBS}
    LABELS bridge ucx ARGS stale)
  target_include_directories(bridge-ucx PRIVATE ${TOOLS_UCX_INCLUDE} ${PROJECT_SOURCE_DIR}/tools/common)
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
  # A UCX whose lookups do not reach the bridge (here: linked after libucs,
  # so the process's scope resolves ucs_rcache_get to libucs), with UCX's
  # hooks off as regcache-run turns them off: the bridge must say so and
  # put UCX's hooks back, never leaving UCX less safe than alone.
  add_executable(bridge-ucx-unreached bridge-ucx.c lib/bridge_oracle.c lib/bridge_ucx_rcache.c)
  target_include_directories(bridge-ucx-unreached PRIVATE ${TOOLS_UCX_INCLUDE}
    ${PROJECT_SOURCE_DIR}/tools/common ${PROJECT_SOURCE_DIR}/tests/lib)
  target_link_libraries(bridge-ucx-unreached PRIVATE regcache_test_helpers regcache
    ${TOOLS_UCX_UCS} ${TOOLS_UCX_UCM} -Wl,--no-as-needed regcache-ucx -Wl,--as-needed
    Threads::Threads ${CMAKE_DL_LIBS})
  add_test(NAME bridge-ucx-unreached COMMAND bridge-ucx-unreached kept)
  set_tests_properties(bridge-ucx-unreached PROPERTIES
    ENVIRONMENT "REGCACHE_MONITOR=bpf;UCX_MEM_MMAP_HOOK_MODE=none"
    PASS_REGULAR_EXPRESSION "ucs_rcache_get resolves to libucs.*UCX keeps its own memory hooks and the bridge adds what they miss"
    FAIL_REGULAR_EXPRESSION "check failed|FAIL"
    SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "bridge;ucx;monitor;bpf")
  # Numbers, not a property (docs/bridges.md): the hit path with and
  # without the bridge in one run; the forwarding thread's window.
  regcache_add_test(NAME bridge-ucx-bench
    SOURCES bridge-ucx-bench.c lib/bridge_ucx_rcache.c
    LIBS ${TOOLS_UCX_UCS} ${TOOLS_UCX_UCM} ${CMAKE_DL_LIBS} LABELS bench ARGS hit)
  target_include_directories(bridge-ucx-bench PRIVATE ${TOOLS_UCX_INCLUDE} ${PROJECT_SOURCE_DIR}/tools/common)
  set_tests_properties(bridge-ucx-bench PROPERTIES
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:regcache-ucx>;UCX_MEM_MMAP_HOOK_MODE=none;REGCACHE_MONITOR=bpf")
  add_test(NAME bridge-ucx-window COMMAND ${PROJECT_BINARY_DIR}/tools/regcache-run
    $<TARGET_FILE:bridge-ucx-bench> window)
  set_tests_properties(bridge-ucx-window PROPERTIES
    ENVIRONMENT "REGCACHE_MONITOR=bpf;REGCACHE_UCX_THREAD=1"
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "bench")
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

# libfabric: Debian's static libfabric.a exports its MR cache functions, so
# the test links the real cache (1.17.0 on Debian 12, 2.1.0 on Debian 13;
# its layout from src/bridge/fabric_layout.h, by fi_version()) and imports
# through the public API.
include(${PROJECT_SOURCE_DIR}/cmake/fabric-static.cmake)
regcache_find_static_fabric(TEST_FABRIC)
if(TARGET regcache-fabric AND NOT TEST_FABRIC_TABLED)
  message(STATUS "bridges: libfabric ${TEST_FABRIC_VERSION} has no row in "
    "src/bridge/fabric_layout.h (or no libfabric.a): the bridge-fabric tests "
    "that drive its cache are not built")
endif()
if(TARGET regcache-fabric AND TEST_FABRIC_TABLED)
  regcache_add_test(NAME bridge-fabric SOURCES bridge-fabric.c lib/bridge_oracle.c
    LIBS regcache-fabric ${TEST_FABRIC_STATIC_LIBS}
         atomic Threads::Threads ${CMAKE_DL_LIBS}
    LABELS bridge fabric ARGS memhooks ENV REGCACHE_FABRIC_IMPORT=0)
  target_include_directories(bridge-fabric PRIVATE ${PROJECT_SOURCE_DIR}/tools/common)
  # fi_open must be visible to the bridge's dlsym(RTLD_DEFAULT).
  set_target_properties(bridge-fabric PROPERTIES ENABLE_EXPORTS ON)
  add_test(NAME bridge-fabric-uffd COMMAND bridge-fabric userfaultfd)
  add_test(NAME bridge-fabric-override COMMAND bridge-fabric override)
  # A libfabric version the bridge was not tested with (here: the list of
  # versions names none of this one): the bridge steps aside, says so, and
  # libfabric's own monitor keeps its blind spots (the memhooks checks).
  add_test(NAME bridge-fabric-unknown COMMAND bridge-fabric unknown)
  set_tests_properties(bridge-fabric-unknown PROPERTIES
    ENVIRONMENT "REGCACHE_MONITOR=bpf;REGCACHE_FABRIC_VERSIONS=0.0"
    PASS_REGULAR_EXPRESSION "libfabric [0-9]+\\.[0-9]+ is not a version the bridge was tested with.*libfabric keeps its own monitor"
    FAIL_REGULAR_EXPRESSION "check failed|FAIL|expected"
    SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "bridge;fabric;monitor;bpf")
  set_tests_properties(bridge-fabric-uffd PROPERTIES ENVIRONMENT "REGCACHE_FABRIC_IMPORT=0")
  add_test(NAME bridge-fabric-bench COMMAND bridge-fabric bench)
  set_tests_properties(bridge-fabric-bench PROPERTIES
    ENVIRONMENT "REGCACHE_FABRIC_IMPORT=0;REGCACHE_MONITOR=bpf"
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "bench")
  set_tests_properties(bridge-fabric-override PROPERTIES
    ENVIRONMENT "FI_MR_CACHE_MONITOR=memhooks"
    PASS_REGULAR_EXPRESSION "FI_MR_CACHE_MONITOR=memhooks is set"
    FAIL_REGULAR_EXPRESSION "check failed|FAIL|expected")
  set_tests_properties(bridge-fabric-uffd bridge-fabric-override PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "bridge;fabric")
  # A change while the provider pins (between add_region and subscribe):
  # seen by bpf whether or not the range was ever watched; userfaultfd
  # cannot see it (the range is watched only at subscribe, after the pin).
  # The negative control turns the bridge's check off.
  add_test(NAME bridge-fabric-gap@bpf COMMAND bridge-fabric gap)
  add_test(NAME bridge-fabric-gap-nocheck COMMAND bridge-fabric gap)
  set_tests_properties(bridge-fabric-gap@bpf PROPERTIES ENVIRONMENT "REGCACHE_MONITOR=bpf")
  set_tests_properties(bridge-fabric-gap-nocheck PROPERTIES
    ENVIRONMENT "REGCACHE_MONITOR=bpf;REGCACHE_FABRIC_PIN_CHECK=0")
  set_tests_properties(bridge-fabric-gap@bpf bridge-fabric-gap-nocheck PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "bridge;fabric;monitor;bpf")
  # Many ranges, none changed, registered again and again: cached from the
  # third time on, under the synchronous monitor and the asynchronous one.
  foreach(m bpf userfaultfd)
    add_test(NAME bridge-fabric-ranges@${m} COMMAND bridge-fabric ranges)
    set_tests_properties(bridge-fabric-ranges@${m} PROPERTIES
      ENVIRONMENT "REGCACHE_MONITOR=${m}"
      FAIL_REGULAR_EXPRESSION "check failed|FAIL|expected"
      SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "bridge;fabric;monitor;${m}")
  endforeach()
  # libfabric loaded late: a component linking libfabric.so.1, dlopened
  # RTLD_LOCAL after start. The bridge comes in through regcache-run, as a
  # user runs a job; the negative control runs without it.
  add_library(bridge-fabric-late-module MODULE lib/bridge_fabric_module.c)
  target_link_libraries(bridge-fabric-late-module PRIVATE ${TEST_FABRIC_LINK_LIBRARIES})
  regcache_add_test(NAME bridge-fabric-late SOURCES bridge-fabric-late.c
    LIBS ${CMAKE_DL_LIBS} LABELS bridge fabric
    ARGS none $<TARGET_FILE:bridge-fabric-late-module>)
  add_dependencies(bridge-fabric-late bridge-fabric-late-module regcache-fabric)
  foreach(m bpf userfaultfd)
    add_test(NAME bridge-fabric-late@${m} COMMAND ${PROJECT_BINARY_DIR}/tools/regcache-run
      $<TARGET_FILE:bridge-fabric-late> bridge $<TARGET_FILE:bridge-fabric-late-module>)
    set_tests_properties(bridge-fabric-late@${m} PROPERTIES
      ENVIRONMENT "REGCACHE_MONITOR=${m}"
      SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "bridge;fabric;monitor;${m}")
  endforeach()
  foreach(m bpf userfaultfd)
    add_test(NAME bridge-fabric@${m} COMMAND bridge-fabric bridge)
    add_test(NAME bridge-fabric-call@${m} COMMAND bridge-fabric bridge-call)
    set_tests_properties(bridge-fabric@${m} PROPERTIES ENVIRONMENT "REGCACHE_MONITOR=${m}")
    set_tests_properties(bridge-fabric-call@${m} PROPERTIES
      ENVIRONMENT "REGCACHE_MONITOR=${m};REGCACHE_FABRIC_IMPORT=0")
    set_tests_properties(bridge-fabric@${m} bridge-fabric-call@${m} PROPERTIES
      SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "bridge;fabric;monitor;${m}")
  endforeach()
endif()

# regcache-demo's bridge rows: zero corrupted messages on both bridge rows,
# and the libfabric cache on its own monitor, in the same run, shows
# corruption (negative control: the DMA oracle can see it).
if(TARGET regcache-demo)
  add_test(NAME bridge-demo COMMAND regcache-demo --iterations 3000 --repeat 1
    --modes ucx-bridge,fabric,fabric-bridge)
  set_tests_properties(bridge-demo PROPERTIES
    ENVIRONMENT "REGCACHE_MONITOR=bpf"
    TIMEOUT 300 LABELS "bridge;demo"
    PASS_REGULAR_EXPRESSION "bridge, no hooks +[0-9]+ +[0-9]+ +[0-9.]+% +0\nlibfabric MR cache, own monitor +[0-9]+ +[0-9]+ +[0-9.]+% +[1-9][0-9]*\nlibfabric MR cache \\+ bridge +[0-9]+ +[0-9]+ +[0-9.]+% +0\n.*regcache: zero corrupted messages"
    FAIL_REGULAR_EXPRESSION "FAILED")
endif()

# Under TSan, libc patched by a cache's own hooks (UCX's bistro mode,
# libfabric's memhooks) crashes every exiting thread: glibc's thread exit
# calls madvise() on the thread's stack after TSan retired the thread, and
# the patched madvise enters the hook's lock through TSan's interceptor. So
# under TSan the UCX configurations with hooks use UCX's reloc mode (the
# GOT, not libc's code; the same blind spots), and the configurations on
# libfabric's memhooks are disabled ("Not Run (Disabled)"), with this line.
if(REGCACHE_SANITIZE MATCHES thread)
  message(STATUS "bridges: under TSan UCX's hooks run in reloc mode and the "
    "tests on libfabric's memhooks (bridge-fabric, bridge-fabric-override, "
    "bridge-fabric-unknown, bridge-fabric-bench) and bridge-ucx-unreached are "
    "disabled: patched libc "
    "crashes thread exit under TSan")
  foreach(t bridge-ucx bridge-ucx-nomonitor bridge-ucx-hooks@bpf bridge-ucx-hooks@userfaultfd)
    if(TEST ${t})
      get_test_property(${t} ENVIRONMENT env)
      string(REPLACE "UCX_MEM_MMAP_HOOK_MODE=bistro" "UCX_MEM_MMAP_HOOK_MODE=reloc" env "${env}")
      set_tests_properties(${t} PROPERTIES ENVIRONMENT "${env}")
    endif()
  endforeach()
  # bridge-ucx-unreached: the bridge puts back UCX's default, bistro.
  foreach(t bridge-fabric bridge-fabric-override bridge-fabric-unknown
      bridge-fabric-bench bridge-ucx-unreached)
    if(TEST ${t})
      set_tests_properties(${t} PROPERTIES DISABLED TRUE)
    endif()
  endforeach()
endif()

# Real middleware over a real RDMA device (Soft-RoCE in tests/vm/run.sh):
# UCP, Open MPI's pml ucx and libfabric's verbs provider send through
# buffers changed between messages (bridge_churn.c), every byte checked.
# Each skips (77) without an RDMA device; the hooks configurations are the
# negative controls (raw syscalls corrupt messages), the bridge ones must
# show none. Labelled rdma; the guest runs them with ctest -L rdma.
set(RXE_UCX_ENV "UCX_TLS=rc_verbs,self;UCX_NET_DEVICES=rxe0:1;UCX_RNDV_THRESH=8192")
if(TOOLS_UCX_INCLUDE AND TOOLS_UCX_UCS AND TOOLS_UCX_UCM)
  find_library(TEST_UCX_UCP ucp HINTS ${TOOLS_UCX_LIBRARY_DIRS})
endif()
if(TEST_UCX_UCP AND regcache_verbs_target)
  add_executable(ucp-rxe ucp-rxe.c lib/bridge_churn.c lib/rxe_mr_count.c)
  target_include_directories(ucp-rxe PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/lib)
  target_include_directories(ucp-rxe PRIVATE ${TOOLS_UCX_INCLUDE} ${PROJECT_SOURCE_DIR}/tools/common)
  target_link_libraries(ucp-rxe PRIVATE ${TEST_UCX_UCP} ${TOOLS_UCX_UCS}
    ${regcache_verbs_target} PkgConfig::URING)
  # Zero-copy rendezvous both ways, as UCX picks on a NIC: UCX >= 1.14
  # copies by default on rxe, which would hide the cache. The sender's
  # buffer changes and is sent again at once, from the same thread.
  # get_zcopy keeps the tests' first names; put_zcopy adds "-put".
  foreach(scheme get_zcopy put_zcopy)
    set(t ucp-rxe)
    if(scheme STREQUAL "put_zcopy")
      set(t ucp-rxe-put)
    endif()
    set(env "${RXE_UCX_ENV};UCX_RNDV_SCHEME=${scheme}")
    add_test(NAME ${t} COMMAND ucp-rxe stale)
    # The registration count's negative control: UCX's caches off.
    add_test(NAME ${t}-nocache COMMAND ucp-rxe nocache)
    set_tests_properties(${t} ${t}-nocache PROPERTIES
      ENVIRONMENT "${env};UCX_MEM_MMAP_HOOK_MODE=bistro"
      SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "rdma;ucx;bridge")
    foreach(m bpf userfaultfd)
      add_test(NAME ${t}-run@${m} COMMAND ${PROJECT_BINARY_DIR}/tools/regcache-run
        $<TARGET_FILE:ucp-rxe> clean)
      set_tests_properties(${t}-run@${m} PROPERTIES
        ENVIRONMENT "${env};REGCACHE_MONITOR=${m};REGCACHE_LOG=info"
        PASS_REGULAR_EXPRESSION "UCX unmap events come from regcache monitor \"${m}\".*ucp-rxe: PASS"
        FAIL_REGULAR_EXPRESSION "FAIL"
        SKIP_REGULAR_EXPRESSION "No RDMA device found"
        TIMEOUT 600 LABELS "rdma;ucx;bridge;monitor;${m}")
    endforeach()
    # The window a forwarding thread alone leaves (REGCACHE_UCX_THREAD=1,
    # the bridge's design before it reached UCP's inline lookups): the
    # negative control of the design, messages must be corrupted.
    add_test(NAME ${t}-thread-only COMMAND ${PROJECT_BINARY_DIR}/tools/regcache-run
      $<TARGET_FILE:ucp-rxe> clean)
    set_tests_properties(${t}-thread-only PROPERTIES
      ENVIRONMENT "${env};REGCACHE_MONITOR=bpf;REGCACHE_UCX_THREAD=1"
      # Only the corruption is the point: the stale hits also spoil the
      # run's registration-count control, so the status is not read.
      PASS_REGULAR_EXPRESSION "corrupted: [1-9][0-9]* of [0-9]+ messages"
      SKIP_REGULAR_EXPRESSION "No RDMA device found"
      TIMEOUT 600 LABELS "rdma;ucx;bridge;monitor;bpf")
    # The bridge's cost (issue 25's measure): messages per second through
    # unchanged buffers, regcache-run against UCX's own hooks in the same
    # run, medians of 7 rounds; must be >= 0.97x. Timing, so left out of
    # the guest's CI subset (label bench only): run it by name.
    if(scheme STREQUAL "get_zcopy")
      add_test(NAME ucp-rxe-bench COMMAND ucp-rxe bench
        ${PROJECT_BINARY_DIR}/tools/regcache-run)
      set_tests_properties(ucp-rxe-bench PROPERTIES
        ENVIRONMENT "${env};REGCACHE_MONITOR=bpf;REGCACHE_LOG=info"
        PASS_REGULAR_EXPRESSION "UCX unmap events come from regcache monitor \"bpf\" [^\n]*before every lookup, UCX's libc hooks off.*ucp-rxe bench: PASS"
        FAIL_REGULAR_EXPRESSION "FAIL"
        SKIP_REGULAR_EXPRESSION "No RDMA device found"
        TIMEOUT 1800 LABELS "bench")
    endif()
    # An unprivileged rank: uid 65534, no capabilities, memlock unlimited
    # (UCX's own pools need more than Debian's 8 MiB), the node's regcached.
    if(TARGET regcached)
      add_test(NAME ${t}-run@regcached COMMAND $<TARGET_FILE:regcached-launch>
        --memlock-unlimited -- ${PROJECT_BINARY_DIR}/tools/regcache-run
        $<TARGET_FILE:ucp-rxe> clean)
      set_tests_properties(${t}-run@regcached PROPERTIES
        ENVIRONMENT "${env};REGCACHE_LOG=info"
        PASS_REGULAR_EXPRESSION "UCX unmap events come from regcache monitor \"regcached\".*ucp-rxe: PASS"
        FAIL_REGULAR_EXPRESSION "FAIL"
        SKIP_REGULAR_EXPRESSION "No RDMA device found"
        TIMEOUT 600 LABELS "rdma;ucx;bridge;regcached;monitor")
    endif()
  endforeach()
endif()

# libfabric's verbs provider under ofi_rxm, the same loop: libfabric's own
# monitor (memhooks) as the negative control, the bridge under regcache-run.
if(TEST_FABRIC_LINK_LIBRARIES AND regcache_verbs_target)
  add_executable(fabric-rxe fabric-rxe.c lib/bridge_churn.c lib/rxe_mr_count.c)
  target_include_directories(fabric-rxe PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/lib)
  target_include_directories(fabric-rxe PRIVATE ${REGCACHE_FABRIC_PC_INCLUDE_DIRS})
  target_link_libraries(fabric-rxe PRIVATE ${TEST_FABRIC_LINK_LIBRARIES}
    ${regcache_verbs_target} PkgConfig::URING)
  add_test(NAME fabric-rxe COMMAND fabric-rxe stale)
  # The registration count's negative control: libfabric's MR cache off.
  add_test(NAME fabric-rxe-nocache COMMAND fabric-rxe nocache)
  set_tests_properties(fabric-rxe fabric-rxe-nocache PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "rdma;fabric;bridge")
  foreach(m bpf userfaultfd)
    add_test(NAME fabric-rxe-run@${m} COMMAND ${PROJECT_BINARY_DIR}/tools/regcache-run
      $<TARGET_FILE:fabric-rxe> clean)
    set_tests_properties(fabric-rxe-run@${m} PROPERTIES
      ENVIRONMENT "REGCACHE_MONITOR=${m};REGCACHE_LOG=info"
      PASS_REGULAR_EXPRESSION "libfabric's MR cache uses regcache monitor \"${m}\".*fabric-rxe: PASS"
      FAIL_REGULAR_EXPRESSION "FAIL"
      SKIP_REGULAR_EXPRESSION "No RDMA device found"
      TIMEOUT 600 LABELS "rdma;fabric;bridge;monitor;${m}")
  endforeach()
  # An unprivileged rank: uid 65534, no capabilities, the node's regcached.
  if(TARGET regcached)
    add_test(NAME fabric-rxe-run@regcached COMMAND $<TARGET_FILE:regcached-launch>
      --memlock-unlimited -- ${PROJECT_BINARY_DIR}/tools/regcache-run
      $<TARGET_FILE:fabric-rxe> clean)
    set_tests_properties(fabric-rxe-run@regcached PROPERTIES
      ENVIRONMENT "REGCACHE_LOG=info"
      PASS_REGULAR_EXPRESSION "libfabric's MR cache uses regcache monitor \"regcached\".*fabric-rxe: PASS"
      FAIL_REGULAR_EXPRESSION "FAIL"
      SKIP_REGULAR_EXPRESSION "No RDMA device found"
      TIMEOUT 600 LABELS "rdma;fabric;bridge;regcached;monitor")
  endif()
endif()

# MPI jobs of 2 ranks over rxe (Open MPI, MPICH): tests/mpi.cmake.
include(${CMAKE_CURRENT_LIST_DIR}/mpi.cmake)

# The bridges are preloaded (LD_PRELOAD) ahead of ASan's runtime, which ASan
# refuses by default; the order does not matter to what these tests check.
# Last in this file, so that it reaches every test that preloads them.
if(REGCACHE_SANITIZE MATCHES address)
  get_property(bridge_tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  foreach(t ${bridge_tests})
    if(t MATCHES "^(bridge-|ucp-rxe|fabric-rxe|mpi-rxe)")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
        "ASAN_OPTIONS=verify_asan_link_order=0")
    endif()
  endforeach()
endif()
