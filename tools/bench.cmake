# regcache-bench: regcache against UCX's ucs_rcache in the same run.
include(${CMAKE_CURRENT_LIST_DIR}/ucx.cmake)
add_executable(regcache-bench ${CMAKE_CURRENT_LIST_DIR}/bench.c
  ${CMAKE_CURRENT_LIST_DIR}/bench_groups.c)
regcache_tool(regcache-bench)
target_link_libraries(regcache-bench PRIVATE m)
regcache_install_tool(regcache-bench)
