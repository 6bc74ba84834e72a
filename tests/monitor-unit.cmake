# Unit tests of the monitor backends' pure structures (src/monitor/).
# They compile the structure's source into the test, since its symbols are
# hidden in the library.
include_guard(GLOBAL)

regcache_add_test(NAME ranges-unit
  SOURCES ranges-unit.c ${PROJECT_SOURCE_DIR}/src/monitor/ranges.c
  LABELS core unit)
target_include_directories(ranges-unit PRIVATE ${PROJECT_SOURCE_DIR}/src)

# Regression tests of the monitor backends (src/monitor/uffd.c, bpf.c).
regcache_add_test(NAME uffd-destroy-seccomp SOURCES uffd-destroy-seccomp.c
  MONITORS userfaultfd LABELS uffd TIMEOUT 60)
regcache_add_test(NAME uffd-mremap-multi-vma SOURCES uffd-mremap-multi-vma.c
  MONITORS userfaultfd LABELS uffd)
regcache_add_test(NAME uffd-get-page-zero SOURCES uffd-get-page-zero.c
  MONITORS userfaultfd LABELS uffd)
if(REGCACHE_HAVE_BPF)
  regcache_add_test(NAME bpf-everything-once SOURCES bpf-everything-once.c
    MONITORS bpf LABELS bpf)
  regcache_add_test(NAME bpf-rlimit-as SOURCES bpf-rlimit-as.c
    MONITORS bpf LABELS bpf)
endif()
# What the monitor's start says about where its choice came from.
regcache_add_test(NAME monitor-auto-log SOURCES monitor-auto-log.c
  LABELS monitor)
