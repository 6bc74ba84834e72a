# Adversarial tests (docs/reliability.md): chaos under every monitor with its
# negative control, seccomp filters and resource limits, and (in
# allocators.cmake) the same under jemalloc, mimalloc and tcmalloc.
# Sanitizer builds run the chaos test for 10 s instead of 40 s.
regcache_add_test(NAME chaos SOURCES chaos.c LIBS Threads::Threads
  LABELS stress chaos MONITORS bpf userfaultfd none TIMEOUT 150)
# Negative control: nothing invalidates, the checker must see stale bytes.
add_test(NAME chaos_blind COMMAND chaos --blind --seconds 5)
# The same workload with regcache_invalidate() before every change.
add_test(NAME chaos_explicit COMMAND chaos --explicit --seconds 10)
set_tests_properties(chaos_blind chaos_explicit PROPERTIES SKIP_RETURN_CODE 77
  TIMEOUT 120 LABELS "stress;chaos" ENVIRONMENT REGCACHE_MONITOR=none)
# seccomp filters and resource limits: fall back or fail clearly, 0 stale,
# no hang (each case runs in a child killed after 20 s, 60 s under
# sanitizers).
regcache_add_test(NAME seccomp-deny SOURCES seccomp-deny.c
  LABELS limits MONITORS bpf userfaultfd none TIMEOUT 600)
regcache_add_test(NAME limits-rlimit SOURCES limits-rlimit.c
  LABELS limits MONITORS bpf userfaultfd none TIMEOUT 600)
