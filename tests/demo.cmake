# regcache-demo as a test: a short run of every regcache mode this machine
# has must show zero corrupted messages (the demo exits 1 otherwise), and the
# naive cache in the same run must show corruption, proving the DMA oracle
# can see a stale registration (negative control).
if(TARGET regcache-demo)
  add_test(NAME demo_smoke
    COMMAND regcache-demo --iterations 3000 --repeat 1 --modes naive,regcache)
  set_tests_properties(demo_smoke PROPERTIES
    TIMEOUT 120 LABELS "demo"
    PASS_REGULAR_EXPRESSION "naive address-keyed cache +[0-9]+ +[0-9]+ +[0-9.]+% +[1-9][0-9]*\n.*regcache: zero corrupted messages"
    FAIL_REGULAR_EXPRESSION "FAILED")
endif()
