# Regression tests from the cache-core review (tests/review_*.c). Each one
# failed before commit 0f3a900 ("Fix fork and pending-registration bugs
# found in review") and passes after it.
regcache_add_test(NAME review_claim_race SOURCES review_claim_race.c
  LIBS Threads::Threads LABELS core stress ENV REGCACHE_MONITOR=none TIMEOUT 300)
foreach(t fork_two_caches invalidate_pending fork_pending fork_passthrough_put
          many_owners fork_held fork_child_destroy fork_child_slots)
  regcache_add_test(NAME review_${t} SOURCES review_${t}.c
    LIBS Threads::Threads LABELS core ENV REGCACHE_MONITOR=none)
endforeach()

# Tests of bugs still open (they FAIL until fixed; see the review report).
# Off by default so nobody's ctest goes red: -DREGCACHE_REVIEW_FAILING=ON.
# Move a name up (and commit its source) once its bug is fixed.
option(REGCACHE_REVIEW_FAILING "build the review tests of open bugs" OFF)
if(REGCACHE_REVIEW_FAILING)
  foreach(t fork_put_dead flush_pending fork_recover_window)
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/review_${t}.c)
      regcache_add_test(NAME review_${t} SOURCES review_${t}.c
        LIBS Threads::Threads LABELS core review ENV REGCACHE_MONITOR=none)
    endif()
  endforeach()
endif()
