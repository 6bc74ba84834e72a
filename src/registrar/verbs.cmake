# RDMA verbs registrar (src/registrar/verbs.c) and the pointer-only io_uring
# helpers (src/registrar/uring_prep.c). Included OPTIONALly by the top
# CMakeLists.txt.

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
  # PUBLIC: tools and tests that link regcache may use the verbs calls.
  target_link_libraries(regcache PUBLIC ${regcache_verbs_target})
  target_compile_definitions(regcache PUBLIC RC_HAVE_VERBS=1)
  message(STATUS "regcache: RDMA verbs registrar enabled")
else()
  message(STATUS "regcache: RDMA verbs registrar disabled")
endif()
