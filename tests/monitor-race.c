/*
 * Description: cross-thread race: thread A munmaps a cached range X while
 * thread B loops mmap(NULL) until it gets X back and then calls
 * regcache_get on it. B must never be served the old registration: every
 * get after a reuse is a miss, and DMA through it is visible. Runs under
 * each kernel monitor:
 *  - eBPF: the invalidation is published inside A's munmap before the mmap
 *    lock is released, so B's mmap cannot return X before the generation
 *    moved. Needs >= 100000 reuses.
 *  - userfaultfd: the UNMAP event is queued only after A's munmap dropped
 *    the mmap lock, so B often has X back before the monitor read it; the
 *    hit probe must catch every such case. Needs >= 20000 reuses. Then the
 *    same with REGCACHE_FLAG_NO_HIT_PROBE, which should see stale hits: it
 *    shows the window is real here and that the probe is what closes it.
 * Fewer reuses under sanitizers. Negative control: the same loop in a child
 * with no monitor must see stale hits.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "helpers.h"

#define LEN 16384

static struct io_uring ring, ring2;
static struct regcache *cache;

/* Run the race until @want reuses; returns the number of stale gets. */
static long race(long want, bool verbose)
{
	/* go: the unmapper starts at once. */
	struct t_reuse_race k = {
		.ring = &ring, .cache = cache, .len = LEN, .go = 1,
	};
	pthread_t a;

	T_REQUIRE(pthread_create(&a, NULL, t_reuse_unmapper, &k) == 0);
	t_reuse_race_run(&k, want);
	atomic_store(&k.stop, 1);
	pthread_join(a, NULL);
	if (verbose)
		printf("%ld reuses of an address unmapped by another thread, "
		       "%ld misses, %ld checked with DMA, %ld stale\n",
		       k.reuses, k.misses, k.dma_checked, k.stale);
	return k.stale;
}

/* Negative control, in a child so that it gets its own process-wide
 * monitor: with no monitor (and a cache told to trust the caller), the
 * same loop must see stale hits, or the test could not fail. */
static bool control_sees_stale(void)
{
	int status;
	pid_t pid = fork();

	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		setenv("REGCACHE_MONITOR", "none", 1);
		t_ring_init(&ring);
		cache = t_uring_cache(&ring, REGCACHE_FLAG_EXPLICIT_INVALIDATE,
				      0, 0);
		long stale = race(200, false);

		printf("negative control (no monitor): %ld stale gets in 200 "
		       "reuses\n", stale);
		fflush(stdout);
		_exit(stale > 0 ? 0 : 1);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
	struct regcache *probe_cache;
	long stale;
	bool uffd;

	if (!control_sees_stale()) {
		fprintf(stderr, "negative control: without a monitor the race "
			"produced no stale hit\n");
		t_failures++;
	}
	t_ring_init(&ring);
	cache = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	uffd = t_monitor_is("userfaultfd");
	T_EXPECT_EQ(0, race(uffd || t_monitor_is("regcached") ? T_SCALE(20000)
						: T_SCALE(100000), true));
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	if (!uffd)
		return t_exit_status();

	/* Keep the monitor running across the two caches. */
	t_ring_init(&ring2);
	probe_cache = t_uring_cache(&ring2, 0, 0, 0);
	t_ring_init(&ring);

	/* The opt-out for single-threaded programs, in a two-threaded one:
	 * the window should show (not a failure if it happens not to). */
	cache = t_uring_cache(&ring, REGCACHE_FLAG_NO_HIT_PROBE, 0, 0);
	stale = race(T_SCALE(4000), false);
	printf("REGCACHE_FLAG_NO_HIT_PROBE: %ld stale gets in %d reuses "
	       "(expected > 0: the window is real)\n", stale, T_SCALE(4000));
	regcache_destroy(cache);
	regcache_destroy(probe_cache);
	io_uring_queue_exit(&ring);
	io_uring_queue_exit(&ring2);
	return t_exit_status();
}
