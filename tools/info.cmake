# regcache-info: which monitor a process gets here and why not the others
# (see info.c). Included by tools/CMakeLists.txt.
include_guard(GLOBAL)
add_executable(regcache-info ${CMAKE_CURRENT_LIST_DIR}/info.c
  ${CMAKE_CURRENT_LIST_DIR}/info_facts.c ${CMAKE_CURRENT_LIST_DIR}/info_print.c)
target_link_libraries(regcache-info PRIVATE regcache)
target_compile_definitions(regcache-info PRIVATE
  INFO_BUILD_VERSION="${PROJECT_VERSION}")
regcache_install_tool(regcache-info)
