# The test man-pages (see man.cmake): the man pages generated from the
# headers and the symbols the library exports are the same set of names, and
# groff formats every page without a warning.
# Input: API (regcache-api.cmake of the build: the libraries in
# REGCACHE_MAN_LIBS), GROFF (may be empty).
cmake_minimum_required(VERSION 3.18) # IN_LIST, list(TRANSFORM)
include(${API})

set(exported "")
foreach(lib IN LISTS REGCACHE_MAN_LIBS)
  execute_process(COMMAND nm -D --defined-only ${lib}
    OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm -D failed on ${lib}")
  endif()
  string(REGEX MATCHALL "[TW] regcache_[A-Za-z0-9_]+" calls "${out}")
  list(TRANSFORM calls REPLACE "^[TW] " "")
  list(APPEND exported ${calls})
endforeach()
list(SORT exported)

file(GLOB pages RELATIVE ${REGCACHE_MAN_DIR} ${REGCACHE_MAN_DIR}/*.3)
list(TRANSFORM pages REPLACE "\\.3$" "")
list(REMOVE_ITEM pages regcache)
list(SORT pages)

set(missing ${exported})
list(REMOVE_ITEM missing ${pages})
set(extra ${pages})
list(REMOVE_ITEM extra ${exported})
if(missing OR extra)
  message(FATAL_ERROR "exported without a man page: ${missing}; "
                      "a man page but not exported: ${extra}")
endif()
list(LENGTH pages n)
if(n LESS 10)
  message(FATAL_ERROR "only ${n} man pages in ${REGCACHE_MAN_DIR}")
endif()
if(NOT EXISTS ${REGCACHE_MAN_DIR}/regcache.3)
  message(FATAL_ERROR "no overview page regcache.3")
endif()

if(GROFF)
  foreach(page regcache ${pages})
    execute_process(COMMAND ${GROFF} -man -Tutf8 -ww -z ${REGCACHE_MAN_DIR}/${page}.3
      ERROR_VARIABLE warnings RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR warnings)
      message(FATAL_ERROR "groff on ${page}.3: ${warnings}")
    endif()
  endforeach()
  message(STATUS "${n} man pages, one per exported call, plus regcache(3); groff: no warnings")
else()
  message(STATUS "${n} man pages, one per exported call, plus regcache(3); "
                 "groff not installed: formatting not checked")
endif()
