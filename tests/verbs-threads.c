/* SPDX-License-Identifier: MIT */
/*
 * Description: the verbs registrar under concurrent gets. Threads that
 * race to first use of the same access mask in implicit ODP mode create
 * exactly one implicit MR for it (and every region they get carries that
 * MR's keys); in pinned mode, concurrent misses and hits on shared and
 * private buffers leave every MR deregistered exactly once at destroy
 * (the test double aborts on a double deregistration). Runs against the
 * link-time test double (verbs_fake.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_fake.h"

#define THREADS 4
#define ITERS 20000

static struct regcache *cache;
static char *buf;
static size_t pg;
static pthread_barrier_t start;
static _Atomic long wrong_key;

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	const unsigned access = IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_WRITE;

	pthread_barrier_wait(&start);
	for (unsigned i = 0; i < (unsigned)T_SCALE(ITERS); i++) {
		/* Shared pages 0..7 and a private page per thread. */
		size_t page = (i & 1) ? (i >> 1) % 8 : 16 + id;
		struct regcache_region *r;
		struct ibv_sge sge;
		int ret;

		ret = regcache_verbs_sge(cache, buf + page * pg + 8, 64,
					 (i % 3) ? access : 0, &sge, &r);
		if (ret) {
			fprintf(stderr, "thread %u: %s\n", id, strerror(-ret));
			exit(T_EXIT_FAIL);
		}
		if (sge.lkey != regcache_region_lkey(r))
			wrong_key++;
		regcache_put(cache, r);
	}
	return NULL;
}

static void run(unsigned flags)
{
	struct regcache_params p = {
		.flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE | flags,
		.max_regions = 6,	/* keep evicting while others hit */
	};
	pthread_t th[THREADS];

	vf_init();
	vf_set_odp(true, true);
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &cache) == 0);
	if (flags & REGCACHE_VERBS_FLAG_ODP_IMPLICIT)
		T_REQUIRE(regcache_verbs_odp(cache) == 1);
	pthread_barrier_init(&start, NULL, THREADS);
	for (uintptr_t i = 0; i < THREADS; i++)
		T_REQUIRE(pthread_create(&th[i], NULL, worker, (void *)i) == 0);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
	if (flags & REGCACHE_VERBS_FLAG_ODP_IMPLICIT)
		/* local at create + one for the remote mask, however many
		 * threads raced to it */
		T_EXPECT_EQ(2, vf.reg_calls);
	regcache_destroy(cache);
	T_EXPECT_EQ(0, vf.live);
	T_EXPECT_EQ(vf.reg_ok, vf.dereg_calls);
	T_EXPECT_EQ(0, wrong_key);
}

int main(void)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	buf = t_map(32 * pg);
	unsetenv("REGCACHE_VERBS_ODP");
	run(0);
	run(REGCACHE_VERBS_FLAG_ODP_IMPLICIT);
	munmap(buf, 32 * pg);
	return t_exit_status();
}
