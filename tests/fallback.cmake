# A client whose regcached daemon is gone for good falls back, live, to the
# next monitor (regcached-fallback.c says what each run proves). Needs the
# launcher of tests/regcached.cmake, included after this file: the tests
# are registered once it is there.
function(fallback_add_tests)
  if(NOT COMMAND regcached_add_test OR NOT TARGET regcached-launch)
    return()
  endif()
  regcached_add_test(NAME regcached-fallback SOURCES regcached-fallback.c
    RUNS "-:fallback" "disabled:disabled" "nowhere:nowhere")
  # The new daemon allows one connection per uid, which a forked child of
  # the test takes first: our ring is refused.
  regcached_add_test(NAME regcached-fallback-refused PROGRAM regcached-fallback
    DAEMON_ARGS --max-per-user 1 RUNS "-:refused")
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} CALL fallback_add_tests)
