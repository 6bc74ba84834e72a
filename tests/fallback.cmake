# A client whose regcached daemon is gone for good falls back, live, to the
# next monitor (regcached-fallback.c says what each run proves).
regcache_add_test(NAME regcached-fallback SOURCES regcached-fallback.c
  DAEMON ARGS fallback)
regcache_add_test(NAME regcached-fallback-disabled PROGRAM regcached-fallback
  DAEMON ARGS disabled)
regcache_add_test(NAME regcached-fallback-nowhere PROGRAM regcached-fallback
  DAEMON ARGS nowhere)
# The new daemon allows one connection per uid, which a forked child of
# the test takes first: our ring is refused.
regcache_add_test(NAME regcached-fallback-refused PROGRAM regcached-fallback
  DAEMON DAEMON_ARGS --max-per-user 1 ARGS refused)
