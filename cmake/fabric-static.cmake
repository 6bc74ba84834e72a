# regcache_find_static_fabric(<prefix>): the test of the libfabric bridge
# and regcache-demo link Debian's static libfabric.a, which exports the MR
# cache functions that the shared library keeps internal, so they drive
# libfabric's real cache. Sets in the caller:
#   <prefix>_VERSION         libfabric's version (pkg-config)
#   <prefix>_TABLED          libfabric.a is there and its version has a row
#                            in src/bridge/fabric_layout.h (1.17.0, 2.1.0),
#                            the table that tests/bridge-fabric.c and
#                            regcache-demo read at run time
#   <prefix>_STATIC_LIBS     libfabric.a and the libraries it needs
#                            (pkg-config --static libfabric; Debian ships some
#                            of them without the -dev symlink)
#   <prefix>_LINK_LIBRARIES  the shared libfabric, for code that links it
include_guard(GLOBAL)

function(regcache_find_static_fabric prefix)
  find_library(REGCACHE_FABRIC_STATIC NAMES libfabric.a)
  pkg_check_modules(REGCACHE_FABRIC_PC QUIET libfabric)
  set(version "${REGCACHE_FABRIC_PC_VERSION}")
  set(tabled FALSE)
  set(libs "")
  if(REGCACHE_FABRIC_STATIC AND version MATCHES "^(1\\.17|2\\.1)\\.0$")
    set(tabled TRUE)
    set(libs ${REGCACHE_FABRIC_STATIC})
    # Libs.private, each by its -dev name or else its runtime soname.
    foreach(name ${REGCACHE_FABRIC_PC_STATIC_LIBRARIES})
      if(name STREQUAL "fabric" OR name STREQUAL "pthread" OR
         name STREQUAL "dl" OR name STREQUAL "atomic")
        continue()
      endif()
      find_library(REGCACHE_FABRIC_DEP_${name} NAMES ${name})
      set(dep ${REGCACHE_FABRIC_DEP_${name}})
      if(NOT dep)
        file(GLOB dep "${REGCACHE_FABRIC_PC_LIBDIR}/lib${name}.so.[0-9]")
        if(dep)
          list(SORT dep)
          list(GET dep 0 dep)
        endif()
      endif()
      if(NOT dep)
        message(STATUS "regcache: libfabric.a needs lib${name}, not found; "
                       "the tests that drive libfabric's cache are not built")
        set(tabled FALSE)
      endif()
      list(APPEND libs ${dep})
    endforeach()
  endif()
  set(${prefix}_VERSION "${version}" PARENT_SCOPE)
  set(${prefix}_TABLED ${tabled} PARENT_SCOPE)
  set(${prefix}_STATIC_LIBS ${libs} PARENT_SCOPE)
  set(${prefix}_LINK_LIBRARIES ${REGCACHE_FABRIC_PC_LINK_LIBRARIES} PARENT_SCOPE)
endfunction()
