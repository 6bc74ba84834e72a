# Real allocators (docs/reliability.md): Debian's jemalloc, mimalloc and
# tcmalloc, each loaded with LD_PRELOAD under
#  - every scenario test (label "monitor", named n@monitor), as n@monitor+a;
#  - the chaos test, short (5 s under bpf and userfaultfd), as
#    chaos@monitor+a;
#  - regcache-demo, as demo+a;
# must give 0 stale and no deadlock, like glibc malloc. These allocators purge
# with madvise(DONTNEED/FREE) and munmap on their own schedule, which is what
# the monitors must see. Plain builds only: a sanitizer brings its own
# allocator. Plus valgrind memcheck over a short demo run.
if(REGCACHE_SANITIZE)
  return()
endif()

set(regcache_allocators "")
# name=library[,another soname]: mimalloc is libmimalloc.so.2 in Debian 12
# and libmimalloc.so.3 in Debian 13 (.ci/packages.sh picks the package).
foreach(spec jemalloc=libjemalloc.so.2
             mimalloc=libmimalloc.so.2,libmimalloc.so.3
             tcmalloc=libtcmalloc_minimal.so.4)
  string(REPLACE "=" ";" spec "${spec}")
  list(GET spec 0 name)
  list(GET spec 1 file)
  string(REPLACE "," ";" names "${file}")
  find_library(REGCACHE_ALLOC_${name} NAMES ${names})
  if(REGCACHE_ALLOC_${name})
    list(APPEND regcache_allocators "${name}")
  else()
    # A missing package is a loud skip, never a silent pass.
    add_test(NAME alloc_${name}_missing COMMAND sh -c
      "echo 'SKIP: ${file} not found: apt-get install the package listed by .ci/packages.sh'; exit 77")
    set_tests_properties(alloc_${name}_missing PROPERTIES SKIP_RETURN_CODE 77
      LABELS allocator)
  endif()
endforeach()

# Runs at the end of tests/CMakeLists.txt, when every fragment has
# registered its scenarios.
function(regcache_add_allocator_tests)
  get_property(tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  # A scenario runs under several monitors; a test registered for one
  # monitor only is about that backend, not about the application's memory.
  set(scenarios "")
  set(seen "")
  foreach(t ${tests})
    if(t MATCHES "^([^@+]+)@[^@+]+$")
      if(CMAKE_MATCH_1 IN_LIST seen)
        list(APPEND scenarios ${CMAKE_MATCH_1})
      endif()
      list(APPEND seen ${CMAKE_MATCH_1})
    endif()
  endforeach()
  foreach(t ${tests})
    get_test_property(${t} LABELS labels)
    if(NOT t MATCHES "^([^@+]+)@([^@+]+)$" OR NOT "monitor" IN_LIST labels
       OR "bench" IN_LIST labels OR "limits" IN_LIST labels
       OR "regcached" IN_LIST labels OR "bridge" IN_LIST labels)
      continue()
    endif()
    set(exe ${CMAKE_MATCH_1})
    # (The catalogue's free() case says "not possible here" under an
    # allocator whose free() keeps the chunk mapped.)
    # Long stress scenarios other than chaos are left out for CI time.
    if(NOT TARGET ${exe} OR NOT exe IN_LIST scenarios
       OR ("stress" IN_LIST labels AND NOT exe STREQUAL "chaos"))
      continue()
    endif()
    set(args "")
    set(timeout 120)
    if(exe STREQUAL "chaos")
      # Short, and only under the kernel monitors ("none" caches nothing).
      if(t STREQUAL "chaos@none")
        continue()
      endif()
      set(args --seconds 5)
      set(timeout 90)
    endif()
    get_test_property(${t} ENVIRONMENT env)
    if(NOT env)
      set(env "")
    endif()
    foreach(a ${regcache_allocators})
      add_test(NAME ${t}+${a} COMMAND ${exe} ${args})
      set_tests_properties(${t}+${a} PROPERTIES SKIP_RETURN_CODE 77
        TIMEOUT ${timeout} LABELS "${labels};allocator;${a}"
        ENVIRONMENT "${env};LD_PRELOAD=${REGCACHE_ALLOC_${a}}")
    endforeach()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
  CALL regcache_add_allocator_tests)

if(TARGET regcache-demo)
  foreach(a ${regcache_allocators})
    add_test(NAME demo+${a}
      COMMAND regcache-demo --iterations 3000 --repeat 1 --modes naive,regcache)
    set_tests_properties(demo+${a} PROPERTIES TIMEOUT 120
      LABELS "demo;allocator;${a}"
      ENVIRONMENT "LD_PRELOAD=${REGCACHE_ALLOC_${a}}"
      PASS_REGULAR_EXPRESSION "naive address-keyed cache +[0-9]+ +[0-9]+ +[0-9.]+% +[1-9][0-9]*\n.*regcache: zero corrupted messages"
      FAIL_REGULAR_EXPRESSION "FAILED")
  endforeach()

  # Memcheck over a short demo run: no invalid access, no definite leak.
  find_program(VALGRIND valgrind)
  if(VALGRIND)
    add_test(NAME demo-valgrind
      COMMAND ${VALGRIND} --error-exitcode=99 --leak-check=full
              --errors-for-leak-kinds=definite --track-fds=no
              --suppressions=${CMAKE_CURRENT_SOURCE_DIR}/lib/reliability-valgrind.supp
              $<TARGET_FILE:regcache-demo> --iterations 300 --repeat 1
              --modes naive,bpf,userfaultfd,none)
    # (The regcached row re-executes the demo outside memcheck as another
    # user, with a daemon of its own: nothing memcheck could follow.)
    set_tests_properties(demo-valgrind PROPERTIES TIMEOUT 300
      LABELS "demo;valgrind"
      PASS_REGULAR_EXPRESSION "regcache: zero corrupted messages"
      FAIL_REGULAR_EXPRESSION "FAILED;ERROR SUMMARY: [1-9]")
  endif()
endif()
