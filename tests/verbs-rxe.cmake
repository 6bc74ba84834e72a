# The verbs registrar on a real RDMA device (Soft-RoCE rxe0 in the guest
# of tests/vm/run.sh, or a NIC): real ibv_reg_mr, RDMA WRITE and READ over a
# loopback RC queue pair. Labelled rdma and verbs; without a device each
# skips (77) with "No RDMA device found". docs/verbs.md, "On a real device".
if(NOT REGCACHE_WITH_VERBS)
  return()
endif()
set(rxe_helper ${CMAKE_CURRENT_SOURCE_DIR}/lib/verbs_device.c)

function(verbs_rxe_test NAME)
  regcache_add_test(NAME ${NAME} SOURCES ${NAME}.c ${rxe_helper}
    LABELS rdma verbs ${ARGN})
endfunction()

# Access flags, the budget against the device, ODP or its refusal, RDMA
# WRITE and READ through cached regions.
verbs_rxe_test(verbs-rxe-access)
verbs_rxe_test(verbs-rxe-limits ENV REGCACHE_MONITOR=none)
verbs_rxe_test(verbs-rxe-odp)
verbs_rxe_test(verbs-rxe-rdma)
