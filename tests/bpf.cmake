# Tests of the eBPF monitor (src/monitor/bpf.cmake sets REGCACHE_HAVE_BPF).
# Each needs root or CAP_BPF+CAP_PERFMON; without them it exits 77 with the
# reason. REGCACHE_MONITOR=bpf: a test never silently runs another backend.
if(NOT REGCACHE_HAVE_BPF)
  return()
endif()

foreach(t munmap mremap madvise uring_madvise map_fixed sbrk free_malloc
          shmdt guard file_punch private_file_truncate overflow in_use clone_vm
          int80 x32)
  regcache_add_test(NAME bpf_${t} SOURCES bpf_${t}.c LABELS bpf
    ENV REGCACHE_MONITOR=bpf)
endforeach()
# The same overflow with the drop counter ignored: the "everything" records
# the programs write into the ring's headroom must cover the lost ones alone.
add_test(NAME bpf_overflow_headroom COMMAND bpf_overflow)
set_tests_properties(bpf_overflow_headroom PROPERTIES LABELS bpf
  SKIP_RETURN_CODE 77
  ENVIRONMENT "REGCACHE_MONITOR=bpf;REGCACHE_BPF_IGNORE_DROPS=1")
regcache_add_test(NAME bpf_race SOURCES bpf_race.c LIBS Threads::Threads
  LABELS bpf stress ENV REGCACHE_MONITOR=bpf TIMEOUT 300)
regcache_add_test(NAME bpf_detach SOURCES bpf_detach.c LIBS PkgConfig::LIBBPF
  LABELS bpf ENV REGCACHE_MONITOR=bpf)
# Numbers, not a pass/fail property (docs/monitor-bpf.md has the results).
regcache_add_test(NAME bpf_bench SOURCES bpf_bench.c LABELS bench
  ENV REGCACHE_MONITOR=bpf ARGS 1)
