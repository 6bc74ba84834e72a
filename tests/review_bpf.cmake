# Review tests of the eBPF monitor (tests/review_bpf_*.c).
#  - regression tests of fixed bugs, run by default: restart_leak,
#    fork_files_lock (child deadlocked on bpf.c files_lock), fork_cloexec
#    (dup2 dropped FD_CLOEXEC), pidns (maps were keyed by the namespace pid),
#    overlay_punch (overlayfs mappings were watched under the overlay inode;
#    now served pass-through).
if(NOT REGCACHE_HAVE_BPF)
  return()
endif()
regcache_add_test(NAME review_bpf_restart_leak SOURCES review_bpf_restart_leak.c
  LABELS bpf review ENV REGCACHE_MONITOR=bpf)
foreach(t fork_files_lock fork_cloexec pidns overlay_punch)
  regcache_add_test(NAME review_bpf_${t} SOURCES review_bpf_${t}.c
    LIBS Threads::Threads LABELS bpf review ENV REGCACHE_MONITOR=bpf
    TIMEOUT 300)
endforeach()
# Open-bug tests go in a list here, each added only if its source exists and
# only with -DREGCACHE_REVIEW_FAILING=ON (none at the moment).
set(review_bpf_failing "")
if(REGCACHE_REVIEW_FAILING)
  foreach(t IN LISTS review_bpf_failing)
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/review_bpf_${t}.c)
      regcache_add_test(NAME review_bpf_${t} SOURCES review_bpf_${t}.c
        LIBS Threads::Threads LABELS bpf review ENV REGCACHE_MONITOR=bpf
        TIMEOUT 300)
    endif()
  endforeach()
endif()
