# Unit tests of the core's pure structures, built from their own sources
# (their symbols are hidden in the library) with rc_assert compiled in.
include_guard(GLOBAL)

regcache_add_test(NAME index-unit
  SOURCES index-unit.c ${PROJECT_SOURCE_DIR}/src/index.c ${PROJECT_SOURCE_DIR}/src/base/log.c
    ${PROJECT_SOURCE_DIR}/src/base/env.c
  LABELS core unit)
target_include_directories(index-unit PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(index-unit PRIVATE RC_DEBUG=1)

regcache_add_test(NAME region-slots-unit
  SOURCES region-slots-unit.c ${PROJECT_SOURCE_DIR}/src/region.c ${PROJECT_SOURCE_DIR}/src/base/log.c
    ${PROJECT_SOURCE_DIR}/src/base/env.c ${PROJECT_SOURCE_DIR}/src/base/fork.c
  LIBS Threads::Threads LABELS core unit)
target_include_directories(region-slots-unit PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(region-slots-unit PRIVATE RC_DEBUG=1)

# The core's reference counting: threads that did not create a region, and
# puts that are wrong (the "none" monitor: caching only by promise).
regcache_add_test(NAME cache-refs-threads SOURCES cache-refs-threads.c
  LIBS Threads::Threads LABELS core stress TIMEOUT 300 ENV REGCACHE_MONITOR=none)
regcache_add_test(NAME cache-double-put SOURCES cache-double-put.c
  LIBS Threads::Threads LABELS core ENV REGCACHE_MONITOR=none)
regcache_add_test(NAME cache-budget SOURCES cache-budget.c
  LABELS core ENV REGCACHE_MONITOR=none)
