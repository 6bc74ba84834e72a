# RDMA verbs registrar (src/registrar/verbs.c) and the pointer-only io_uring
# helpers (src/registrar/uring_prep.c), included by the top CMakeLists.txt.
# The verbs registrar is built when REGCACHE_WITH_VERBS is on (the default
# when libibverbs is found).

# The io_uring helpers need nothing beyond liburing: always built.
target_sources(regcache PRIVATE ${CMAKE_CURRENT_LIST_DIR}/uring_prep.c)

# Find libibverbs: pkg-config first, then a plain library + header search.
pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
if(IBVERBS_FOUND)
  set(regcache_verbs_target PkgConfig::IBVERBS)
else()
  find_library(IBVERBS_LIBRARY ibverbs)
  find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
  if(IBVERBS_LIBRARY AND IBVERBS_INCLUDE_DIR)
    set(IBVERBS_FOUND TRUE)
    add_library(regcache_ibverbs INTERFACE IMPORTED)
    set_target_properties(regcache_ibverbs PROPERTIES
      INTERFACE_LINK_LIBRARIES ${IBVERBS_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${IBVERBS_INCLUDE_DIR})
    set(regcache_verbs_target regcache_ibverbs)
  endif()
endif()

option(REGCACHE_WITH_VERBS "build the RDMA verbs registrar (needs libibverbs)"
       ${IBVERBS_FOUND})
if(REGCACHE_WITH_VERBS)
  if(NOT IBVERBS_FOUND)
    message(FATAL_ERROR "REGCACHE_WITH_VERBS=ON but libibverbs was not found: "
                        "apt-get install libibverbs-dev, or -DREGCACHE_WITH_VERBS=OFF")
  endif()
  target_sources(regcache PRIVATE ${CMAKE_CURRENT_LIST_DIR}/verbs.c)
  # A private dependency like liburing (see the top CMakeLists.txt): the
  # tests of this tree get it through the build interface, an installed
  # consumer of <regcache/verbs.h> links libibverbs itself.
  target_link_libraries(regcache PRIVATE ${regcache_verbs_target}
    INTERFACE $<BUILD_INTERFACE:${regcache_verbs_target}>)
  list(APPEND REGCACHE_PUBLIC_HEADERS include/regcache/verbs.h)
  if(regcache_verbs_target STREQUAL "PkgConfig::IBVERBS")
    list(APPEND REGCACHE_PC_REQUIRES_PRIVATE libibverbs)
  else()
    list(APPEND REGCACHE_PC_LIBS_PRIVATE -libverbs)
  endif()
  message(STATUS "regcache: RDMA verbs registrar enabled")
else()
  message(STATUS "regcache: RDMA verbs registrar disabled")
endif()
