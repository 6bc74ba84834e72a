# Tests of the RDMA verbs registrar (src/registrar/verbs.c) and of the
# pointer-only io_uring helpers (src/registrar/uring_prep.c).

# The io_uring helpers run against the real io_uring registrar.
regcache_add_test(NAME uring_prep_dma SOURCES uring_prep_dma.c LABELS uring_prep)
regcache_add_test(NAME uring_prep_dma_none SOURCES uring_prep_dma.c
  LABELS uring_prep ENV REGCACHE_MONITOR=none)
regcache_add_test(NAME uring_prep_remap SOURCES uring_prep_remap.c LABELS uring_prep)

if(REGCACHE_WITH_VERBS)
  # Verbs logic through the link-time test double (tests/verbs_fake.c): the
  # executable defines ibv_reg_mr*/ibv_dereg_mr, which then interpose on
  # libibverbs for libregcache.so. ENABLE_EXPORTS makes sure they are in the
  # executable's dynamic symbol table.
  foreach(t verbs_access verbs_errors verbs_odp verbs_sge verbs_threads)
    regcache_add_test(NAME ${t} SOURCES ${t}.c verbs_fake.c LABELS verbs
      LIBS Threads::Threads
      ENV REGCACHE_MONITOR=none)
    set_target_properties(${t} PROPERTIES ENABLE_EXPORTS ON)
  endforeach()
  # Numbers only (no timing assertions): ctest -V -R verbs_bench
  regcache_add_test(NAME verbs_bench SOURCES verbs_bench.c verbs_fake.c
    LABELS verbs bench)
  set_target_properties(verbs_bench PROPERTIES ENABLE_EXPORTS ON)

  # The ODP selection must not depend on the machine's monitor either.
  add_test(NAME verbs_odp_default_monitor COMMAND verbs_odp)
  set_tests_properties(verbs_odp_default_monitor PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS verbs)

  # Real hardware: a loopback RDMA write checked with data; skips (77) with
  # "No RDMA device found" where ibv_get_device_list finds none.
  regcache_add_test(NAME verbs_hw_loopback SOURCES verbs_hw_loopback.c
    LABELS verbs hardware)

  # verbs.h compiles on its own, as C and as C++.
  add_executable(verbs_header_c verbs_header.c)
  target_link_libraries(verbs_header_c PRIVATE regcache)
  add_executable(verbs_header_cxx verbs_header.cpp)
  target_link_libraries(verbs_header_cxx PRIVATE regcache)
endif()
