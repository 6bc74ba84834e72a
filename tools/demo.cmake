# regcache-demo: the whole story in one command (see demo.c).
include(${CMAKE_CURRENT_LIST_DIR}/ucx.cmake)
add_executable(regcache-demo ${CMAKE_CURRENT_LIST_DIR}/demo.c
  ${CMAKE_CURRENT_LIST_DIR}/demo_caches.c ${CMAKE_CURRENT_LIST_DIR}/demo_workload.c
  ${CMAKE_CURRENT_LIST_DIR}/demo_regcached.c)
regcache_tool(regcache-demo)
regcache_install_tool(regcache-demo)
# The bridge rows (tools/demo_bridges.c, docs/bridges.md).
target_sources(regcache-demo PRIVATE ${CMAKE_CURRENT_LIST_DIR}/demo_bridges.c)
if(TARGET regcache-ucx)
  target_compile_definitions(regcache-demo PRIVATE
    DEMO_BRIDGE_DIR="$<TARGET_FILE_DIR:regcache-ucx>")
endif()
find_library(REGCACHE_FABRIC_STATIC NAMES libfabric.a)
pkg_check_modules(TOOLS_FABRIC QUIET libfabric)
if(REGCACHE_FABRIC_STATIC AND TOOLS_FABRIC_VERSION VERSION_EQUAL 1.17.0)
  set(tools_fabric_deps "")
  foreach(dep psm_infinipath:1 psm2:2 rdmacm:1 ibverbs:1 efa:1)
    string(REPLACE ":" ";" dep ${dep})
    list(GET dep 0 name)
    list(GET dep 1 so)
    find_library(REGCACHE_FABRIC_DEP_${name} NAMES ${name} lib${name}.so.${so})
    list(APPEND tools_fabric_deps ${REGCACHE_FABRIC_DEP_${name}})
  endforeach()
  target_compile_definitions(regcache-demo PRIVATE TOOLS_HAVE_FABRIC=1)
  target_link_libraries(regcache-demo PRIVATE ${REGCACHE_FABRIC_STATIC}
    ${tools_fabric_deps} atomic ${CMAKE_DL_LIBS})
  # The bridge finds the static libfabric's fi_open with dlsym.
  set_target_properties(regcache-demo PROPERTIES ENABLE_EXPORTS ON)
endif()
