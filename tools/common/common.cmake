# What more than one program of tools/ compiles in, as functions each
# program's CMakeLists.txt calls on its target:
#   regcache_tool(<target>)      device.c and rcache_ucx.c, the directory of
#                                their headers, and UCX when present
#   regcache_tool_env(<target>)  the program's own copy of the environment
#                                table, for a program that reads a REGCACHE_*
#                                setting itself
# and UCX's ucs_rcache as the peer in regcache-demo and regcache-bench: linked
# when libucx-dev is installed, skipped (with a message) otherwise. The tests'
# UCX programs use the TOOLS_UCX_* cache variables found here.
include_guard(GLOBAL)

option(REGCACHE_TOOLS_UCX
  "compare against UCX's ucs_rcache in regcache-demo and regcache-bench" ON)
set(REGCACHE_TOOLS_HAVE_UCX OFF)
if(REGCACHE_TOOLS_UCX)
  pkg_check_modules(TOOLS_UCX QUIET ucx)
  find_path(TOOLS_UCX_INCLUDE ucs/memory/rcache.h HINTS ${TOOLS_UCX_INCLUDE_DIRS})
  find_library(TOOLS_UCX_UCS ucs HINTS ${TOOLS_UCX_LIBRARY_DIRS})
  find_library(TOOLS_UCX_UCM ucm HINTS ${TOOLS_UCX_LIBRARY_DIRS})
  if(TOOLS_UCX_INCLUDE AND TOOLS_UCX_UCS AND TOOLS_UCX_UCM)
    set(REGCACHE_TOOLS_HAVE_UCX ON)
    if(NOT TOOLS_UCX_VERSION)
      set(TOOLS_UCX_VERSION unknown)
    endif()
    message(STATUS "regcache tools: comparing against UCX ${TOOLS_UCX_VERSION} (${TOOLS_UCX_UCS})")
  else()
    message(STATUS "regcache tools: UCX not found (apt-get install libucx-dev); "
                   "regcache-demo and regcache-bench will run without it")
  endif()
endif()

function(regcache_tool target)
  target_sources(${target} PRIVATE
    ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/device.c
    ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/rcache_ucx.c)
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  target_link_libraries(${target} PRIVATE regcache PkgConfig::URING Threads::Threads)
  if(REGCACHE_TOOLS_HAVE_UCX)
    target_compile_definitions(${target} PRIVATE TOOLS_HAVE_UCX=1
      TOOLS_UCX_VERSION=${TOOLS_UCX_VERSION})
    target_include_directories(${target} PRIVATE ${TOOLS_UCX_INCLUDE})
    target_link_libraries(${target} PRIVATE ${TOOLS_UCX_UCS} ${TOOLS_UCX_UCM})
  endif()
endfunction()

# The library's copy of the table is hidden (src/base/env.h); the program
# includes "base/env.h" from src/.
function(regcache_tool_env target)
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src/base/env.c
    ${PROJECT_SOURCE_DIR}/src/base/log.c)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src)
endfunction()
