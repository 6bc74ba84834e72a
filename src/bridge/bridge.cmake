# The bridges: libregcache-ucx.so and libregcache-fabric.so, each built on
# regcache's public monitor API (include/regcache/monitor.h) only. Neither
# links UCX or libfabric: they find the copy the process has loaded.
option(REGCACHE_BRIDGES "build the UCX and libfabric bridges" ON)
if(NOT REGCACHE_BRIDGES OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  return()
endif()

# Each bridge has its own hidden copy of the environment table (env.c) and
# the log it warns through (log.c): the library keeps its copies hidden.
set(regcache_bridge_env ${PROJECT_SOURCE_DIR}/src/base/env.c
  ${PROJECT_SOURCE_DIR}/src/base/log.c)
add_library(regcache-ucx SHARED ${CMAKE_CURRENT_LIST_DIR}/ucx.c
  ${CMAKE_CURRENT_LIST_DIR}/find.c ${regcache_bridge_env})
target_link_libraries(regcache-ucx PRIVATE regcache Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(regcache-ucx PROPERTIES C_VISIBILITY_PRESET hidden
  VERSION ${PROJECT_VERSION} SOVERSION 0)

find_path(REGCACHE_FABRIC_INCLUDE rdma/fi_ext.h)
if(REGCACHE_FABRIC_INCLUDE)
  add_library(regcache-fabric SHARED ${CMAKE_CURRENT_LIST_DIR}/fabric.c
    ${CMAKE_CURRENT_LIST_DIR}/find.c ${regcache_bridge_env})
  # Versions for the interposed libfabric entry points (fabric.map).
  target_link_options(regcache-fabric PRIVATE
    -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/fabric.map)
  set_target_properties(regcache-fabric PROPERTIES
    LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fabric.map)
  target_include_directories(regcache-fabric PRIVATE ${REGCACHE_FABRIC_INCLUDE})
  target_link_libraries(regcache-fabric PRIVATE regcache Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(regcache-fabric PROPERTIES C_VISIBILITY_PRESET hidden
    VERSION ${PROJECT_VERSION} SOVERSION 0)
  # An application that imports the monitor itself (regcache_fabric_import)
  # includes this header and links -lregcache-fabric; its calls get man
  # pages like libregcache's.
  list(APPEND REGCACHE_BRIDGE_HEADERS include/regcache/fabric.h)
  list(APPEND REGCACHE_MAN_LIBS regcache-fabric)
else()
  message(STATUS "regcache: rdma/fi_ext.h not found (apt-get install libfabric-dev); "
                 "the libfabric bridge is not built")
endif()

# Installed with the tools: regcache-run preloads them from the library
# directory.
foreach(bridge regcache-ucx regcache-fabric)
  if(TARGET ${bridge})
    install(TARGETS ${bridge} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
      COMPONENT tools)
  endif()
endforeach()
