# Tests of the eBPF monitor (src/monitor/bpf.cmake sets REGCACHE_HAVE_BPF).
# Each needs root or CAP_BPF+CAP_PERFMON; without them it exits 77.
if(NOT REGCACHE_HAVE_BPF)
  return()
endif()

foreach(t munmap mremap madvise uring_madvise map_fixed sbrk free_malloc shmdt guard file_punch)
  regcache_add_test(NAME bpf_${t} SOURCES bpf_${t}.c LIBS Threads::Threads
    LABELS bpf ENV REGCACHE_MONITOR=bpf)
endforeach()
