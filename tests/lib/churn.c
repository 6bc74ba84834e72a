/* SPDX-License-Identifier: MIT */
/*
 * A buffer whose pages keep changing under the cache, every get checked
 * by DMA: the workload the fault-injection tests (limits, seccomp) run
 * while the library is starved or denied, where the question is only
 * "still no stale byte, whatever the monitor fell back to?". And the
 * race of an address unmapped by one thread and mapped again by another
 * (monitor-race, uffd-solo-thread).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helpers.h"

bool t_get_dma_checked(struct io_uring *ring, struct regcache *c, char *buf,
		       size_t len, unsigned seed)
{
	struct regcache_region *r;
	bool ok;
	int ret = regcache_get(c, buf, len, 0, &r);

	if (ret) {
		fprintf(stderr, "regcache_get(%p, %zu): %s\n", buf, len,
			strerror(-ret));
		t_failures++;
		return false;
	}
	ok = t_dma_visible(ring, r, buf, len, seed);
	regcache_put(c, r);
	if (!ok) {
		fprintf(stderr, "stale: DMA through the region of %p+%zu did "
			"not reach the application's pages\n", buf, len);
		t_failures++;
	}
	return ok;
}

void t_churn_scenario(struct io_uring *ring, struct regcache *c, char *buf,
		      size_t len)
{
	for (unsigned i = 0; i < 12; i++) {
		char *to;

		t_get_dma_checked(ring, c, buf, len, i);
		/* A sub-range: a hit where the monitor allows caching. */
		t_get_dma_checked(ring, c, buf + 100, 3000, i + 100);
		switch (i % 4) {
		case 0:	/* raw munmap, then new pages at the same place */
			T_REQUIRE(syscall(SYS_munmap, buf, len) == 0);
			T_REQUIRE(mmap(buf, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS |
				       MAP_FIXED_NOREPLACE, -1, 0) == buf);
			break;
		case 1:
			T_REQUIRE(mmap(buf, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				       -1, 0) == buf);
			break;
		case 2:	/* the pages move away; new ones take their place */
			to = t_map(len);
			T_REQUIRE(mremap(buf, len, len,
					 MREMAP_MAYMOVE | MREMAP_FIXED, to) == to);
			T_REQUIRE(mmap(buf, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS |
				       MAP_FIXED_NOREPLACE, -1, 0) == buf);
			munmap(to, len);
			break;
		default:
			T_REQUIRE(madvise(buf, len, MADV_DONTNEED) == 0);
			break;
		}
		memset(buf, 0x5a, len);
	}
}

void *t_reuse_unmapper(void *arg)
{
	struct t_reuse_race *k = arg;

	while (!atomic_load(&k->go))
		sched_yield();
	while (!atomic_load(&k->stop)) {
		char *x = atomic_exchange(&k->victim, NULL);

		if (x)
			T_REQUIRE(munmap(x, k->len) == 0);
		else
			sched_yield();
	}
	return NULL;
}

long t_reuse_race_run(struct t_reuse_race *k, long want)
{
	struct regcache_region *r;
	long lost = 0, hits;

	k->reuses = k->misses = k->dma_checked = k->stale = 0;
	while (k->reuses < want) {
		char *x = t_map(k->len), *y;

		x[0] = 1;
		T_REQUIRE(regcache_get(k->cache, x, k->len, 0, &r) == 0);
		regcache_put(k->cache, r);
		/* X is cached and idle; let the unmapper have it while we
		 * race. */
		atomic_store(&k->victim, x);
		/* Map until X comes back, as fast as possible. */
		y = t_map_until(x, k->len);
		if (!y) {
			/* Taken by another thread: no reuse to check. */
			if (atomic_exchange(&k->victim, NULL) == x)
				T_REQUIRE(munmap(x, k->len) == 0);
			T_REQUIRE(++lost <= want);
			continue;
		}
		k->reuses++;
		hits = t_get_hits(k->cache, y, k->len, &r);
		if (hits)
			k->stale++;
		else
			k->misses++;
		if (k->reuses % 16 == 0 || hits) {
			k->dma_checked++;
			if (!t_dma_visible(k->ring, r, y, k->len,
					   (unsigned)k->reuses))
				k->stale++;
		}
		regcache_put(k->cache, r);
		/* Drop it now: with no monitor the region would stay. */
		regcache_invalidate(k->cache, y, k->len);
		T_REQUIRE(munmap(y, k->len) == 0);
	}
	return k->stale;
}
