# One man page per public call, and regcache(3), generated at build time
# from the kernel-doc comments of the installed headers (the reference), by
# cmake/kerneldoc-man.awk. The generator fails when a declared call has no
# comment; the test man-pages checks that every exported symbol has a page.
find_program(REGCACHE_AWK NAMES mawk gawk awk REQUIRED)

set(REGCACHE_MAN_DIR ${CMAKE_CURRENT_BINARY_DIR}/man)
set(regcache_lib_headers "")
foreach(header IN LISTS REGCACHE_PUBLIC_HEADERS)
  list(APPEND regcache_lib_headers ${CMAKE_CURRENT_SOURCE_DIR}/${header})
endforeach()
set(regcache_man_headers ${regcache_lib_headers})
foreach(header IN LISTS REGCACHE_BRIDGE_HEADERS)
  list(APPEND regcache_man_headers ${CMAKE_CURRENT_SOURCE_DIR}/${header})
endforeach()
add_custom_command(OUTPUT ${REGCACHE_MAN_DIR}/regcache.3
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${REGCACHE_MAN_DIR}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REGCACHE_MAN_DIR}
  COMMAND ${REGCACHE_AWK} -v outdir=${REGCACHE_MAN_DIR}
          -v version=${PROJECT_VERSION}
          -f ${CMAKE_CURRENT_SOURCE_DIR}/cmake/kerneldoc-man.awk
          ${regcache_man_headers}
  DEPENDS ${regcache_man_headers} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/kerneldoc-man.awk
  COMMENT "man pages from the kernel-doc of the installed headers"
  VERBATIM)
add_custom_target(regcache-man ALL DEPENDS ${REGCACHE_MAN_DIR}/regcache.3)
install(DIRECTORY ${REGCACHE_MAN_DIR}/
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man3 COMPONENT dev
  FILES_MATCHING PATTERN "*.3")

# What the tests need to know about the public interface of this build.
# The libraries whose exported regcache_* calls the pages document:
# libregcache, and the bridges that have a public header (bridge.cmake).
set(regcache_man_lib_files "$<TARGET_FILE:regcache>")
foreach(lib IN LISTS REGCACHE_MAN_LIBS)
  string(APPEND regcache_man_lib_files ";$<TARGET_FILE:${lib}>")
endforeach()
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/regcache-api.cmake CONTENT
"set(REGCACHE_LIB \"$<TARGET_FILE:regcache>\")
set(REGCACHE_MAN_LIBS \"${regcache_man_lib_files}\")
set(REGCACHE_MAP \"${CMAKE_CURRENT_SOURCE_DIR}/src/libregcache.map\")
set(REGCACHE_HEADERS \"${regcache_lib_headers}\")
set(REGCACHE_ALL_HEADERS_DIR \"${CMAKE_CURRENT_SOURCE_DIR}/include\")
set(REGCACHE_MAN_DIR \"${REGCACHE_MAN_DIR}\")
")

# man-pages: every exported symbol has a page, every page an exported
# symbol, and groff formats each page without a warning.
function(regcache_add_man_test)
  find_program(REGCACHE_GROFF groff)
  add_test(NAME man-pages COMMAND ${CMAKE_COMMAND}
    -DAPI=${CMAKE_CURRENT_BINARY_DIR}/regcache-api.cmake
    -DGROFF=${REGCACHE_GROFF}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/check-man.cmake)
  set_tests_properties(man-pages PROPERTIES LABELS install TIMEOUT 60)
endfunction()
