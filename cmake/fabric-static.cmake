# regcache_find_static_fabric(<prefix>): the test of the libfabric bridge
# and regcache-demo link Debian's static libfabric.a, which exports the MR
# cache functions that the shared library keeps internal, so they drive
# libfabric 1.17's real cache. Sets in the caller:
#   <prefix>_FOUND           libfabric.a is there and pkg-config reports
#                            libfabric 1.17.0 (the cache layout they know)
#   <prefix>_STATIC_LIBS     libfabric.a and the libraries it needs
#                            (pkg-config --static libfabric; Debian ships some
#                            of them without the -dev symlink)
#   <prefix>_LINK_LIBRARIES  the shared libfabric, for code that links it
include_guard(GLOBAL)

function(regcache_find_static_fabric prefix)
  find_library(REGCACHE_FABRIC_STATIC NAMES libfabric.a)
  pkg_check_modules(REGCACHE_FABRIC_PC QUIET libfabric)
  set(found FALSE)
  set(libs "")
  if(REGCACHE_FABRIC_STATIC AND REGCACHE_FABRIC_PC_VERSION VERSION_EQUAL 1.17.0)
    set(found TRUE)
    set(libs ${REGCACHE_FABRIC_STATIC})
    foreach(dep psm_infinipath:1 psm2:2 rdmacm:1 ibverbs:1 efa:1)
      string(REPLACE ":" ";" dep ${dep})
      list(GET dep 0 name)
      list(GET dep 1 so)
      find_library(REGCACHE_FABRIC_DEP_${name} NAMES ${name} lib${name}.so.${so})
      list(APPEND libs ${REGCACHE_FABRIC_DEP_${name}})
    endforeach()
  endif()
  set(${prefix}_FOUND ${found} PARENT_SCOPE)
  set(${prefix}_STATIC_LIBS ${libs} PARENT_SCOPE)
  set(${prefix}_LINK_LIBRARIES ${REGCACHE_FABRIC_PC_LINK_LIBRARIES} PARENT_SCOPE)
endfunction()
