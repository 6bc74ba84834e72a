/* SPDX-License-Identifier: MIT */
/*
 * Description: membarrier() denied after threads took references in their
 * own reference slots (a seccomp filter installed while the cache runs)
 * never lets a region be deregistered under its holder. Hitter threads
 * get, check and put a few shared buffers in a loop (references counted
 * in their slots, plain stores and no fence); meanwhile the main thread
 * installs a filter that makes membarrier() fail with EPERM in every
 * thread, then keeps invalidating the buffers, so that every kill races
 * with hits whose counts only a membarrier() could have made visible. The
 * registrar marks a handle dead at deregistration; a hitter that finds its
 * held region's handle dead, right after the get or just before the put,
 * counts a stale hold. First, while the hitters that counted in their
 * slots are paused but running (spinning in user code, where an increment
 * could sit in a store buffer), the killed regions must stay registered:
 * nothing can prove their counts complete (before the fix, the cache
 * fenced only itself and deregistered them at once). Then killed regions
 * must be deregistered again once the threads have moved their counts (the
 * cache does not just stop claiming), and everything is deregistered at
 * the end. Negative control: a region held across regcache_destroy()
 * (which deregisters it anyway) is seen dead by the same check.
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <time.h>

#include "helpers.h"

#define BUFS 4
#define HITTERS 2
#define HANDLES (1u << 22)

static struct {
	_Atomic bool live;
} handles[HANDLES];
static _Atomic unsigned next_handle;
static _Atomic long regs, deregs, stale, hits_done;
static _Atomic bool stop, pause_hits;
static _Atomic int paused;
static struct regcache *c;
static char *pool;
static size_t page;

static int reg(void *ctx, void *addr, size_t len, unsigned access,
	       void **handle)
{
	unsigned h = atomic_fetch_add(&next_handle, 1);

	(void)ctx, (void)addr, (void)len, (void)access;
	if (h >= HANDLES)
		return -ENOSPC;
	atomic_store(&handles[h].live, true);
	atomic_fetch_add(&regs, 1);
	*handle = &handles[h];
	return 0;
}

static void dereg(void *ctx, void *handle)
{
	_Atomic bool *live = handle;

	(void)ctx;
	atomic_store(live, false);
	atomic_fetch_add(&deregs, 1);
}

static const struct regcache_ops ops = { .reg = reg, .dereg = dereg };

static bool held_live(struct regcache_region *r)
{
	_Atomic bool *live = regcache_region_handle(r);

	return live && atomic_load(live);
}

static void *hitter(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned k = rand_r(&seed);
		struct regcache_region *r;

		if (atomic_load_explicit(&pause_hits, memory_order_relaxed)) {
			/* Running, not asleep: no syscall, no fence. */
			atomic_fetch_add(&paused, 1);
			while (atomic_load_explicit(&pause_hits,
						    memory_order_relaxed))
				;
			atomic_fetch_sub(&paused, 1);
		}

		if (regcache_get(c, pool + (k % BUFS) * 2 * page, 64, 0, &r)) {
			atomic_fetch_add(&stale, 1000000);
			break;
		}
		if (!held_live(r))
			atomic_fetch_add(&stale, 1);
		/* Hold it a moment, as a real user would while its I/O runs. */
		for (volatile int i = 0; i < (int)(k % 64); i++)
			;
		if (!held_live(r))
			atomic_fetch_add(&stale, 1);
		regcache_put(c, r);
		atomic_fetch_add_explicit(&hits_done, 1, memory_order_relaxed);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	struct regcache_params p = {
		.ops = &ops,
		.flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
	};
	pthread_t th[HITTERS];
	struct regcache_region *held;
	_Atomic bool *held_handle;
	long deregs_before, kills = 0;
	double t0, seconds = T_SCALE(3.0);
	int ret;

#ifndef __x86_64__
	printf("SKIP: the seccomp filter here matches x86_64 syscall numbers\n");
	return T_EXIT_SKIP;
#endif
	page = (size_t)sysconf(_SC_PAGESIZE);
	pool = t_map(BUFS * 2 * page);
	T_REQUIRE(regcache_create(&p, &c) == 0);
	for (unsigned i = 0; i < HITTERS; i++)
		T_REQUIRE(pthread_create(&th[i], NULL, hitter,
					 (void *)(uintptr_t)(i + 1)) == 0);
	/* The hitters count in their slots before membarrier goes away. */
	while (atomic_load(&hits_done) < 10000)
		sched_yield();
	atomic_store(&pause_hits, true);
	while (atomic_load(&paused) < HITTERS)
		sched_yield();
	ret = t_seccomp_deny(SYS_membarrier, EPERM);
	if (ret) {
		atomic_store(&pause_hits, false);
		atomic_store(&stop, true);
		for (unsigned i = 0; i < HITTERS; i++)
			pthread_join(th[i], NULL);
		printf("SKIP: cannot install a seccomp filter: %s\n",
		       strerror(-ret));
		return T_EXIT_SKIP;
	}
	T_CHECK(syscall(SYS_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0, 0) < 0);

	deregs_before = atomic_load(&deregs);
	for (int i = 0; i < 1000; i++)
		T_CHECK(regcache_invalidate(c, pool, BUFS * 2 * page) >= 0);
	regcache_flush(c);
	printf("while the hitters spin: %ld registrations, %ld "
	       "deregistrations (expected 0)\n", atomic_load(&regs),
	       atomic_load(&deregs) - deregs_before);
	T_EXPECT_EQ(deregs_before, atomic_load(&deregs));
	atomic_store(&pause_hits, false);

	deregs_before = atomic_load(&deregs);
	t0 = now_s();
	/* At least @seconds of churn, and on until claims are seen to go on
	 * (a loaded machine under a sanitizer claims ~60 in 2 s), within
	 * 60 s. */
	while (now_s() - t0 < seconds ||
	       (atomic_load(&deregs) - deregs_before <= 100 &&
		now_s() - t0 < 60)) {
		regcache_invalidate(c, pool, BUFS * 2 * page);
		kills++;
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i < HITTERS; i++)
		pthread_join(th[i], NULL);
	printf("%ld invalidations, %ld hits, %ld deregistrations after the "
	       "filter, %ld stale holds\n", kills, atomic_load(&hits_done),
	       atomic_load(&deregs) - deregs_before, atomic_load(&stale));
	T_EXPECT_EQ(0, atomic_load(&stale));
	/* Claims went on: the cache did not just stop deregistering. */
	T_CHECK(atomic_load(&deregs) - deregs_before > 100);

	/* Everything comes back: no reference was counted twice forever. */
	regcache_flush(c);
	T_EXPECT_EQ(atomic_load(&regs), atomic_load(&deregs));

	/* Negative control: the check sees a deregistered held region (the
	 * handle outlives the region, which destroy frees). */
	T_REQUIRE(regcache_get(c, pool, 64, 0, &held) == 0);
	T_CHECK(held_live(held));
	held_handle = regcache_region_handle(held);
	regcache_destroy(c);
	T_CHECK(!atomic_load(held_handle));
	return t_exit_status();
}
