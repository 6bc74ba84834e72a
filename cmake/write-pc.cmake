# Install-time half of regcache.pc (see install.cmake): substitute the prefix
# the installation actually uses. Input: REGCACHE_PC_TEMPLATE, REGCACHE_PC_OUT.
set(REGCACHE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
configure_file("${REGCACHE_PC_TEMPLATE}" "${REGCACHE_PC_OUT}" @ONLY)
