# MPI jobs of 2 ranks on this node over a real RDMA device (tests/mpi-rxe.sh,
# tests/mpi-rxe.c; Soft-RoCE in tests/vm), included from bridges.cmake: the
# middleware's own hooks or monitor (the negative control: 60 of 160
# corrupted), its caches off (-nocache: the registration count's negative
# control) and regcache-run (none corrupted, the caches still caching). The
# bridge's own line must be in the output of each rank, so that a run in
# which the bridge stood back cannot pass; rank 1 prints the MPI, UCX and
# libfabric versions and fails if the stack's middleware is not loaded.
#
#   mpi-rxe-ucx*    the default MPI (FindMPI: Open MPI on Debian), pml ucx
#                   on rc_verbs (ud_verbs for the wireup)
#   mpi-rxe-ofi*    the same MPI, pml cm + mtl ofi on verbs;ofi_rxm
#   mpi-rxe-mpich*  MPICH (pkg-config mpich, mpiexec.mpich) through its
#                   netmod; Debian 13's MPICH 4.2.1 is ch4:ucx
include_guard(GLOBAL)
if(NOT regcache_verbs_target)
  return()
endif()

set(mpi_rxe_sh ${CMAKE_CURRENT_LIST_DIR}/mpi-rxe.sh)
set(mpi_run ${PROJECT_BINARY_DIR}/tools/regcache-run)
set(mpi_line_ucx "regcache-ucx: UCX unmap events come from regcache monitor")
set(mpi_line_ofi "regcache-fabric: libfabric's MR cache uses regcache monitor")
set(mpi_line_mpich "${mpi_line_ucx}")

# The tests of one stack: NAME (mpi-rxe-STACK...), the program, the stack.
function(regcache_mpi_rxe_tests stack prog)
  set(cmd ${mpi_rxe_sh} $<TARGET_FILE:${prog}>)
  add_test(NAME mpi-rxe-${stack} COMMAND ${cmd} - stale ${stack})
  add_test(NAME mpi-rxe-${stack}-nocache COMMAND ${cmd} - nocache ${stack})
  set_tests_properties(mpi-rxe-${stack} mpi-rxe-${stack}-nocache PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS "rdma;mpi;bridge")
  foreach(m bpf userfaultfd)
    set(line "${mpi_line_${stack}} \"${m}\"")
    add_test(NAME mpi-rxe-${stack}-run@${m}
      COMMAND ${cmd} ${mpi_run} clean ${stack})
    set_tests_properties(mpi-rxe-${stack}-run@${m} PROPERTIES
      ENVIRONMENT "REGCACHE_MONITOR=${m};REGCACHE_LOG=info"
      PASS_REGULAR_EXPRESSION "${line}.*${line}.*mpi-rxe: PASS"
      FAIL_REGULAR_EXPRESSION "FAIL"
      SKIP_REGULAR_EXPRESSION "No RDMA device found"
      TIMEOUT 900 LABELS "rdma;mpi;bridge;monitor;${m}")
  endforeach()
endfunction()

find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_executable(mpi-rxe mpi-rxe.c lib/bridge_churn.c lib/rxe_mr_count.c)
  target_include_directories(mpi-rxe PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/lib)
  target_link_libraries(mpi-rxe PRIVATE MPI::MPI_C ${regcache_verbs_target}
    PkgConfig::URING ${CMAKE_DL_LIBS})
  regcache_mpi_rxe_tests(ucx mpi-rxe)
  regcache_mpi_rxe_tests(ofi mpi-rxe)
  # The benchmark of two ranks (tools/microbench/mpi-bench.c), next to the
  # other micro-benchmarks' binaries; tests/vm/nodes-bench.sh runs it across
  # two nodes.
  add_executable(mpi-bench ${PROJECT_SOURCE_DIR}/tools/microbench/mpi-bench.c)
  target_link_libraries(mpi-bench PRIVATE MPI::MPI_C ${CMAKE_DL_LIBS})
  target_include_directories(mpi-bench PRIVATE ${PROJECT_SOURCE_DIR}/tools/common)
  set_target_properties(mpi-bench PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tools/microbench)
endif()

# MPICH beside the default MPI: its own headers and library (Debian keeps
# them under <libdir>/mpich), its own launcher.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(TEST_MPICH QUIET mpich)
endif()
find_program(TEST_MPIEXEC_MPICH NAMES mpiexec.mpich)
if(TEST_MPICH_FOUND AND TEST_MPIEXEC_MPICH)
  find_library(TEST_MPICH_LIB mpich HINTS ${TEST_MPICH_LIBRARY_DIRS}
    NO_DEFAULT_PATH)
endif()
if(TEST_MPICH_LIB)
  add_executable(mpi-rxe-mpich mpi-rxe.c lib/bridge_churn.c lib/rxe_mr_count.c)
  target_include_directories(mpi-rxe-mpich PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR}/lib ${TEST_MPICH_INCLUDE_DIRS})
  target_link_libraries(mpi-rxe-mpich PRIVATE ${TEST_MPICH_LIB}
    ${regcache_verbs_target} PkgConfig::URING ${CMAKE_DL_LIBS})
  regcache_mpi_rxe_tests(mpich mpi-rxe-mpich)
  foreach(t mpi-rxe-mpich mpi-rxe-mpich-nocache mpi-rxe-mpich-run@bpf
            mpi-rxe-mpich-run@userfaultfd)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
      "MPIEXEC_MPICH=${TEST_MPIEXEC_MPICH}")
  endforeach()
endif()
