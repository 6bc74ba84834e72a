# Unit tests of the core's pure structures, built from their own sources
# (their symbols are hidden in the library) with rc_assert compiled in.
include_guard(GLOBAL)

regcache_add_test(NAME index-unit
  SOURCES index-unit.c ${PROJECT_SOURCE_DIR}/src/index.c ${PROJECT_SOURCE_DIR}/src/log.c
  LABELS core unit)
target_include_directories(index-unit PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(index-unit PRIVATE RC_DEBUG=1)
