# Regression tests from the cache-core review (tests/review_*.c). Each one
# failed before the fix it names and passes after it:
#  - 0f3a900 "Fix fork and pending-registration bugs found in review":
#    fork_two_caches, invalidate_pending, fork_pending, fork_passthrough_put,
#    many_owners, fork_held, fork_child_destroy, fork_child_slots;
#  - the commit that added fork_put_dead, flush_pending, fork_recover_window.
regcache_add_test(NAME review_claim_race SOURCES review_claim_race.c
  LIBS Threads::Threads LABELS core stress ENV REGCACHE_MONITOR=none TIMEOUT 300)
foreach(t fork_two_caches invalidate_pending fork_pending fork_passthrough_put
          many_owners fork_held fork_child_destroy fork_child_slots
          fork_put_dead flush_pending fork_recover_window)
  regcache_add_test(NAME review_${t} SOURCES review_${t}.c
    LIBS Threads::Threads LABELS core ENV REGCACHE_MONITOR=none)
endforeach()
