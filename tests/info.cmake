# regcache-info (tools/info/info.c): the monitor it names and the reasons it
# gives, as root and as a dropped ordinary user; --json agrees with the text.
# Both load BPF programs and create userfaultfds: run under the test lock.
include_guard(GLOBAL)
if(NOT REGCACHE_BUILD_TOOLS)
  return() # they test the tool, which is not built
endif()
regcache_add_test(NAME info-monitor SOURCES info-report.c LABELS info
  ARGS $<TARGET_FILE:regcache-info> text)
regcache_add_test(NAME info-json SOURCES info-report.c LABELS info
  ARGS $<TARGET_FILE:regcache-info> json)
add_dependencies(info-monitor regcache-info)
add_dependencies(info-json regcache-info)
