# regcache_read_version(<var> <header>): set <var> to "MAJOR.MINOR.PATCH"
# from the REGCACHE_VERSION_* macros of <header>, so that the header, the
# library's regcache_version(), regcache.pc, the CMake package and the
# Debian packages all carry the one version. Runs before project().
function(regcache_read_version var header)
  file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/${header} lines
       REGEX "^#define REGCACHE_VERSION_(MAJOR|MINOR|PATCH)[ \t]+[0-9]+$")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "(MAJOR|MINOR|PATCH)[ \t]+([0-9]+)" unused "${line}")
    set(${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
  endforeach()
  if(NOT DEFINED MAJOR OR NOT DEFINED MINOR OR NOT DEFINED PATCH)
    message(FATAL_ERROR "${header}: REGCACHE_VERSION_MAJOR, _MINOR and _PATCH "
                        "must each be #defined to a number")
  endif()
  set(${var} "${MAJOR}.${MINOR}.${PATCH}" PARENT_SCOPE)
endfunction()
