# regcache-demo: the whole story in one command (see demo.c).
include(${CMAKE_CURRENT_LIST_DIR}/ucx.cmake)
add_executable(regcache-demo ${CMAKE_CURRENT_LIST_DIR}/demo.c
  ${CMAKE_CURRENT_LIST_DIR}/demo_caches.c ${CMAKE_CURRENT_LIST_DIR}/demo_workload.c)
regcache_tool(regcache-demo)
regcache_install_tool(regcache-demo)
