# Adversarial tests (docs/reliability.md): chaos under every monitor with its
# negative control, kill -9 cycles, signal storms, seccomp filters and
# resource limits, and (in
# allocators.cmake) the same under jemalloc, mimalloc and tcmalloc.
# The chaos test runs 12 s per monitor, kill-cycle and signal-storm 6 s;
# a third of that in sanitizer builds, times REGCACHE_TEST_STRESS for a
# soak run (T_SECONDS).
regcache_add_test(NAME chaos SOURCES chaos.c LIBS Threads::Threads
  LABELS stress chaos MONITORS bpf userfaultfd none TIMEOUT 150)
# Negative control: nothing invalidates, the checker must see stale bytes.
add_test(NAME chaos-blind COMMAND chaos --blind --seconds 5)
# The same workload with regcache_invalidate() before every change.
add_test(NAME chaos-explicit COMMAND chaos --explicit --seconds 6)
set_tests_properties(chaos-blind chaos-explicit PROPERTIES SKIP_RETURN_CODE 77
  TIMEOUT 120 LABELS "stress;chaos" ENVIRONMENT REGCACHE_MONITOR=none)
# kill -9 cycles (6 s per monitor) and signal storms (6 s per monitor);
# these and chaos also run under the daemon, as uid 65534 through
# regcached-launch (whose --max-per-user 3 makes a leaked client slot
# visible to kill-cycle).
regcache_add_test(NAME kill-cycle SOURCES kill-cycle.c
  LABELS stress chaos MONITORS bpf userfaultfd none TIMEOUT 150)
regcache_add_test(NAME signal-storm SOURCES signal-storm.c
  LIBS Threads::Threads LABELS stress chaos MONITORS bpf userfaultfd none
  TIMEOUT 120)
regcache_add_test(NAME kill-cycle PROGRAM kill-cycle MONITORS regcached
  DAEMON_ARGS --max-per-user 3 LABELS stress chaos TIMEOUT 150)
regcache_add_test(NAME signal-storm PROGRAM signal-storm MONITORS regcached
  LABELS stress chaos)
regcache_add_test(NAME chaos PROGRAM chaos MONITORS regcached
  LABELS stress chaos TIMEOUT 150)
# The client's pull applies a burst of "everything" records once, as
# the in-process one does.
regcache_add_test(NAME bpf-everything-once PROGRAM bpf-everything-once
  MONITORS regcached REQUIRES REGCACHE_HAVE_BPF)
# Under TSan kill-cycle is reported "Not Run (Disabled)", not passed: TSan
# turns vfork() into fork(), so its negative control (a parent in
# uninterruptible sleep must be reported) cannot be built, and its fresh
# processes, forked from a process that has threads, start threads of their
# own, which TSan does not support. It runs in the plain and ASan builds.
if(REGCACHE_SANITIZE MATCHES thread)
  message(STATUS "kill-cycle is disabled under TSan (vfork, threads after fork)")
  foreach(t kill-cycle@bpf kill-cycle@userfaultfd kill-cycle@none kill-cycle@regcached)
    if(TEST ${t})
      set_tests_properties(${t} PROPERTIES DISABLED TRUE)
    endif()
  endforeach()
endif()
# seccomp filters and resource limits: fall back or fail clearly, 0 stale,
# no hang (each case runs in a child killed after 20 s, 60 s under
# sanitizers).
regcache_add_test(NAME seccomp-deny SOURCES seccomp-deny.c
  LABELS limits MONITORS bpf userfaultfd none TIMEOUT 600)
regcache_add_test(NAME limits-rlimit SOURCES limits-rlimit.c
  LABELS limits MONITORS bpf userfaultfd none TIMEOUT 600)
# A kernel that gives released fixed buffers back to RLIMIT_MEMLOCK late
# (6.1): registrations wait for it rather than fail.
regcache_add_test(NAME uring-release-lag SOURCES uring-release-lag.c
  LABELS limits TIMEOUT 300)

# libFuzzer targets (tests/fuzz-*.c). They need clang, and the main build
# uses gcc, so a clang sub-build (build-dir/fuzz) compiles the library with
# ASan and coverage and links the targets; only the plain build makes it,
# and each target runs for 6 s per monitor (times REGCACHE_TEST_STRESS)
# from its committed corpus (tests/fuzz/corpus-*), writing what it finds
# to the build directory.
# REGCACHE_FUZZ=OFF leaves it out; without clang it is left out with a
# message.
option(REGCACHE_FUZZ "build and run the libFuzzer targets in a clang sub-build" ON)
if(REGCACHE_FUZZ_TARGETS)
  # Inside the sub-build: instrument the library, build the targets.
  target_compile_options(regcache PRIVATE -fsanitize=fuzzer-no-link)
  add_executable(fuzz-cache fuzz-cache.c)
  target_link_libraries(fuzz-cache PRIVATE regcache)
  add_executable(fuzz-index fuzz-index.c ${PROJECT_SOURCE_DIR}/src/index.c
    ${PROJECT_SOURCE_DIR}/src/base/log.c ${PROJECT_SOURCE_DIR}/src/base/env.c)
  target_include_directories(fuzz-index PRIVATE ${PROJECT_SOURCE_DIR}/src
    ${PROJECT_SOURCE_DIR}/include)
  target_compile_definitions(fuzz-index PRIVATE RC_DEBUG=1)
  target_link_libraries(fuzz-index PRIVATE Threads::Threads)
  foreach(t fuzz-cache fuzz-index)
    target_compile_options(${t} PRIVATE -fsanitize=fuzzer)
    target_link_options(${t} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${t} PRIVATE m)  # libFuzzer's own need
  endforeach()
elseif(REGCACHE_FUZZ AND NOT REGCACHE_SANITIZE)
  find_program(REGCACHE_CLANG clang)
  find_program(REGCACHE_CLANGXX clang++)
  # The library is shared and linked with --no-undefined: with clang
  # both it and the targets take the ASan runtime as a shared library.
  # clang lists libFuzzer's libstdc++ before it, so the runs preload it
  # (ASan insists on coming first). clang prints the bare name when its
  # runtime is not installed.
  if(REGCACHE_CLANG)
    execute_process(COMMAND ${REGCACHE_CLANG}
      -print-file-name=libclang_rt.asan-x86_64.so
      OUTPUT_VARIABLE asan_rt OUTPUT_STRIP_TRAILING_WHITESPACE)
    get_filename_component(asan_rt_dir "${asan_rt}" DIRECTORY)
  endif()
  if(NOT REGCACHE_CLANG OR NOT REGCACHE_CLANGXX)
    message(STATUS "libFuzzer targets: no clang, left out (REGCACHE_FUZZ)")
  elseif(NOT asan_rt_dir)
    message(WARNING "libFuzzer targets left out: clang has no ASan runtime "
      "(${asan_rt}); install clang's compiler runtime, libclang-rt-NN-dev "
      "(.ci/packages.sh lists it)")
  else()
    include(ExternalProject)
    # $(MAKE) shares make's job slots with the sub-build.
    if(CMAKE_GENERATOR MATCHES "Make")
      set(fuzz_build $(MAKE) fuzz-cache fuzz-index)
    else()
      set(fuzz_build ${CMAKE_COMMAND} --build <BINARY_DIR> --target fuzz-cache fuzz-index)
    endif()
    set(fuzz_dir ${CMAKE_BINARY_DIR}/fuzz)
    ExternalProject_Add(regcache-fuzz
      SOURCE_DIR ${PROJECT_SOURCE_DIR}
      BINARY_DIR ${fuzz_dir}
      CMAKE_ARGS -DCMAKE_C_COMPILER=${REGCACHE_CLANG}
                 -DCMAKE_CXX_COMPILER=${REGCACHE_CLANGXX}
                 -DCMAKE_BUILD_TYPE=RelWithDebInfo
                 -DREGCACHE_SANITIZE=address -DREGCACHE_FUZZ_TARGETS=ON
                 -DCMAKE_SHARED_LINKER_FLAGS=-shared-libasan
                 "-DCMAKE_EXE_LINKER_FLAGS=-shared-libasan -Wl,-rpath,${asan_rt_dir}"
      BUILD_COMMAND ${fuzz_build}
      INSTALL_COMMAND ""
      BUILD_ALWAYS ON)
    math(EXPR fuzz_seconds "6 * ${REGCACHE_TEST_STRESS}")
    math(EXPR fuzz_timeout "${fuzz_seconds} + 120")
    set(fuzz_runs cache@bpf cache@userfaultfd cache@none index)
    foreach(run ${fuzz_runs})
      string(REGEX REPLACE "@.*" "" target ${run})
      set(out ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-${run})
      add_test(NAME fuzz-${run} COMMAND sh -c
        "mkdir -p '${out}' && exec '${fuzz_dir}/tests/fuzz-${target}' -max_total_time=${fuzz_seconds} -timeout=10 -print_final_stats=1 -artifact_prefix='${out}-crash-' '${out}' '${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus-${target}'")
      set_tests_properties(fuzz-${run} PROPERTIES TIMEOUT ${fuzz_timeout} LABELS fuzz
        ENVIRONMENT LD_PRELOAD=${asan_rt})
      if(run MATCHES "@(.*)$")
        set_tests_properties(fuzz-${run} PROPERTIES
          ENVIRONMENT "LD_PRELOAD=${asan_rt};REGCACHE_MONITOR=${CMAKE_MATCH_1}"
          LABELS "fuzz;monitor;${CMAKE_MATCH_1}")
      endif()
    endforeach()
    # Negative control: with the promise of explicit invalidation broken,
    # the model must catch a stale registration.
    add_test(NAME fuzz-cache-blind COMMAND sh -c
      "exec '${fuzz_dir}/tests/fuzz-cache' -max_total_time=60 -timeout=10 -artifact_prefix='${CMAKE_CURRENT_BINARY_DIR}/fuzz-cache-blind-' '${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus-cache'")
    set_tests_properties(fuzz-cache-blind PROPERTIES TIMEOUT 120
      LABELS fuzz PASS_REGULAR_EXPRESSION "fuzz-cache: STALE"
      ENVIRONMENT "LD_PRELOAD=${asan_rt};REGCACHE_MONITOR=none;REGCACHE_FUZZ_BLIND=1")
  endif()
endif()
