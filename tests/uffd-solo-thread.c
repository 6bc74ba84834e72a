/*
 * Description: userfaultfd monitor: hits skip the probe only while the
 * process has one application thread, and a thread that existed before
 * the monitor started counts. Thread A is created first and idles; then
 * the cache (and the monitor) starts; A munmaps a cached range X while
 * the main thread loops mmap(NULL) until it gets X back and calls
 * regcache_get on it. Every get after a reuse must be a miss, and DMA
 * through it must be visible: the monitor must have seen A in the task
 * list and kept the probe. Then the main thread's own munmap while it is
 * alone: its next get of the address must miss (the shortcut relies on
 * it); and the same with perf_event_open refused by seccomp, where the
 * monitor must start all the same. Last, the application disables its
 * perf events (prctl PR_TASK_PERF_EVENTS_DISABLE) while alone and then
 * makes a thread that unmaps: the event that sees the thread must not be
 * one that prctl reaches. The probe's negative control (stale gets
 * without it) is in monitor-race@userfaultfd.
 */
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "helpers.h"

#define LEN 16384

static struct io_uring ring;
static struct regcache *cache;
/* The unmapping thread A's race; ring and cache are set once they exist. */
static struct t_reuse_race reuse = { .len = LEN };

/* Reuses of addresses that A unmapped; returns the stale gets. */
static long race(const char *who, long want)
{
	reuse.ring = &ring;
	reuse.cache = cache;
	t_reuse_race_run(&reuse, want);
	printf("%s: %ld reuses of an address it unmapped, %ld checked with "
	       "DMA, %ld stale\n", who, reuse.reuses, reuse.dma_checked,
	       reuse.stale);
	return reuse.stale;
}

/* Alone: the main thread unmaps a cached buffer, maps the address again
 * and gets it. Returns whether that get hit (it must not). */
static bool own_unmap_hits(void)
{
	struct regcache_region *r;
	char *x = t_map(LEN);
	bool hit;

	x[0] = 1;
	T_REQUIRE(regcache_get(cache, x, LEN, 0, &r) == 0);
	regcache_put(cache, r);
	/* A hit while nothing changed: the region is cached. */
	T_EXPECT_EQ(1, t_get_hits(cache, x, LEN, &r));
	regcache_put(cache, r);
	t_remap(x, LEN);
	hit = t_get_hits(cache, x, LEN, &r) != 0;
	T_EXPECT_EQ(true, t_dma_visible(&ring, r, x, LEN, 7));
	regcache_put(cache, r);
	regcache_invalidate(cache, x, LEN);
	munmap(x, LEN);
	return hit;
}

/* A thread that unmaps what the main thread caches, @reuses times; the
 * stale gets. */
static long race_with_thread(long reuses)
{
	pthread_t a;
	long stale;

	T_REQUIRE(pthread_create(&a, NULL, t_reuse_unmapper, &reuse) == 0);
	atomic_store(&reuse.go, 1);
	stale = race("thread created after prctl", reuses);
	atomic_store(&reuse.stop, 1);
	pthread_join(a, NULL);
	return stale;
}

struct alone {
	bool deny_perf;	/* perf_event_open refused by seccomp */
	int rounds;
};

/* In a child whose main thread is alone when the monitor starts: its own
 * munmaps must miss. */
static int alone_case(const void *arg)
{
	const struct alone *c = arg;

	if (c->deny_perf)
		T_REQUIRE(t_seccomp_deny(SYS_perf_event_open, EACCES) == 0);
	cache = t_monitor_cache(&ring);
	for (int i = 0; i < c->rounds; i++)
		T_EXPECT_EQ(false, own_unmap_hits());
	regcache_destroy(cache);
	return t_exit_status();
}

/* Alone when the monitor starts, then prctl(PR_TASK_PERF_EVENTS_DISABLE)
 * (it disables every perf event the calling thread owns), then a thread
 * that unmaps: its unmaps must still be seen. */
static int prctl_case(const void *arg)
{
	(void)arg;
	cache = t_monitor_cache(&ring);
	T_REQUIRE(prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0) == 0);
	T_EXPECT_EQ(0, race_with_thread(T_SCALE(5000)));
	regcache_destroy(cache);
	return t_exit_status();
}

int main(void)
{
	struct t_child_cases k = { 0 };
	int cases;

	t_monitor_only("userfaultfd");
	t_child_case(&k, "alone: its own munmaps miss", alone_case,
		     &(struct alone){ .rounds = 100 });
	/* Debian's perf_event_paranoid=3 for an ordinary user, a
	 * container's seccomp profile: the monitor starts all the same, and
	 * every hit probes. */
	t_child_case(&k, "perf_event_open refused", alone_case,
		     &(struct alone){ .deny_perf = true, .rounds = 10 });
	t_child_case(&k, "perf events disabled by the application, then a "
		     "thread", prctl_case, NULL);
	cases = t_child_cases_status(&k);

	/* The unmapping thread exists before the first cache starts the
	 * monitor. */
	{
		pthread_t a;

		T_REQUIRE(pthread_create(&a, NULL, t_reuse_unmapper,
					 &reuse) == 0);
		cache = t_monitor_cache(&ring);
		atomic_store(&reuse.go, 1);
		T_EXPECT_EQ(0, race("thread created before the monitor",
				    T_SCALE(20000)));
		atomic_store(&reuse.stop, 1);
		pthread_join(a, NULL);
	}
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	return cases ? cases : t_exit_status();
}
