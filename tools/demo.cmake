# regcache-demo: the whole story in one command (see demo.c).
include(${CMAKE_CURRENT_LIST_DIR}/ucx.cmake)
add_executable(regcache-demo ${CMAKE_CURRENT_LIST_DIR}/demo.c
  ${CMAKE_CURRENT_LIST_DIR}/demo_caches.c ${CMAKE_CURRENT_LIST_DIR}/demo_workload.c
  ${CMAKE_CURRENT_LIST_DIR}/demo_regcached.c)
regcache_tool(regcache-demo)
regcache_install_tool(regcache-demo)
# --verbs: an RDMA device as the NIC (tools/demo_verbs.c, docs/verbs.md).
target_sources(regcache-demo PRIVATE ${CMAKE_CURRENT_LIST_DIR}/demo_verbs.c)
if(REGCACHE_WITH_VERBS)
  target_compile_definitions(regcache-demo PRIVATE DEMO_HAVE_VERBS=1)
endif()
# The bridge rows (tools/demo_bridges.c, docs/bridges.md).
target_sources(regcache-demo PRIVATE ${CMAKE_CURRENT_LIST_DIR}/demo_bridges.c)
if(TARGET regcache-ucx)
  target_compile_definitions(regcache-demo PRIVATE
    DEMO_BRIDGE_DIR="$<TARGET_FILE_DIR:regcache-ucx>")
endif()
include(${PROJECT_SOURCE_DIR}/cmake/fabric-static.cmake)
regcache_find_static_fabric(TOOLS_FABRIC)
if(TOOLS_FABRIC_TABLED)
  target_compile_definitions(regcache-demo PRIVATE TOOLS_HAVE_FABRIC=1)
  target_link_libraries(regcache-demo PRIVATE ${TOOLS_FABRIC_STATIC_LIBS}
    atomic ${CMAKE_DL_LIBS})
  # The bridge finds the static libfabric's fi_open with dlsym.
  set_target_properties(regcache-demo PROPERTIES ENABLE_EXPORTS ON)
endif()
