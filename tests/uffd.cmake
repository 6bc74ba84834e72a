# Tests of the userfaultfd monitor (src/monitor/uffd.c). Each exits 77 with
# the reason only when this process cannot create a userfaultfd at all.
# REGCACHE_MONITOR=userfaultfd: a test never silently runs another backend.
if(NOT EXISTS ${PROJECT_SOURCE_DIR}/src/monitor/uffd.c)
  return()
endif()

foreach(t fallback munmap mremap madvise uring_madvise map_fixed sbrk free_malloc
          shmdt memfd_punch in_use two_caches fork fork_child_holds_fd
          vma_count)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/uffd_${t}.c)
    regcache_add_test(NAME uffd_${t} SOURCES uffd_${t}.c LABELS uffd
      ENV REGCACHE_MONITOR=userfaultfd)
  endif()
endforeach()
foreach(t race malloc_stress shutdown)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/uffd_${t}.c)
    regcache_add_test(NAME uffd_${t} SOURCES uffd_${t}.c LIBS Threads::Threads
      LABELS uffd stress ENV REGCACHE_MONITOR=userfaultfd TIMEOUT 300)
  endif()
endforeach()
# Numbers, not a pass/fail property (docs/monitor-userfaultfd.md).
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/uffd_bench.c)
  regcache_add_test(NAME uffd_bench SOURCES uffd_bench.c LIBS Threads::Threads
    LABELS bench ENV REGCACHE_MONITOR=userfaultfd ARGS 1)
  regcache_add_test(NAME uffd_probe_cost SOURCES uffd_probe_cost.c
    LIBS Threads::Threads LABELS bench ARGS 1)
endif()

# valgrind memcheck: userfaultfd and membarrier may be unavailable under it;
# the library must then fall back cleanly: uffd_fallback passes with
# whatever backend it gets; uffd_in_use skips with the reason.
find_program(VALGRIND valgrind)
if(VALGRIND AND NOT REGCACHE_SANITIZE)
  add_test(NAME uffd_valgrind_fallback
    COMMAND ${VALGRIND} --error-exitcode=99 --leak-check=full
            --errors-for-leak-kinds=definite $<TARGET_FILE:uffd_fallback>)
  # Skips (77) after the fallback, leaving its cache behind on purpose:
  # memory errors only.
  add_test(NAME uffd_valgrind_in_use
    COMMAND ${VALGRIND} --error-exitcode=99 --leak-check=no
            $<TARGET_FILE:uffd_in_use>)
  set_tests_properties(uffd_valgrind_fallback uffd_valgrind_in_use PROPERTIES
    ENVIRONMENT "REGCACHE_MONITOR=userfaultfd;REGCACHE_LOG=info"
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "uffd;valgrind")
endif()
