# Debian packages with CPack, one per install component (install.cmake):
#   cpack -G DEB --config <build>/CPackConfig.cmake
# gives libregcache0 (runtime), libregcache-dev (dev) and regcache-tools
# (tools), installed under /usr; configure with -DCMAKE_INSTALL_PREFIX=/usr
# so that the library goes to the multiarch directory. The dependencies on
# other libraries come from dpkg-shlibdeps, which needs dpkg-dev
# (build-essential has it) and file.
set(CPACK_PACKAGE_NAME regcache)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "registration cache for DMA devices with kernel-driven invalidation")
set(CPACK_PACKAGE_CONTACT "regcache maintainers" CACHE STRING
  "Maintainer field of the Debian packages")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_CURRENT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL runtime dev tools)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# The tools find libregcache.so.0 in the runtime package, not in the system.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_CURRENT_BINARY_DIR})

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libregcache0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# A shlibs file, so that other packages linking the library depend on
# libregcache0 (>= the version they were built with). (CPack adds the
# ldconfig calls to postinst/postrm by itself.) Only this package has one.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "the shared library: caches DMA memory registrations (io_uring fixed
buffers, RDMA verbs) and takes invalidation from the kernel (eBPF or
userfaultfd monitor) instead of from malloc/mmap hooks.")

# -dev: regcache.pc requires the .pc files of the private dependencies, and
# regcache/verbs.h includes <infiniband/verbs.h>.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libregcache-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(regcache_dev_depends "liburing-dev")
if(REGCACHE_WITH_VERBS)
  string(APPEND regcache_dev_depends ", libibverbs-dev")
endif()
if(REGCACHE_HAVE_BPF)
  string(APPEND regcache_dev_depends ", libbpf-dev")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${regcache_dev_depends}")
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "headers, regcache.pc, the CMake package regcache::regcache, one man page
per call and an example.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME regcache-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "regcache-info, regcache-demo, regcache-bench and the other tools built.")

include(CPack)
