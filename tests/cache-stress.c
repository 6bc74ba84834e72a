/*
 * Description: threads hammer one cache with gets and puts of shared and
 * private buffers, nested holds, invalidations, flushes and tiny limits
 * that force eviction, for a bounded number of iterations. After every get
 * the region must be registered (per the tracking registrar) and cover the
 * buffer; it must still be registered just before the put. At the end
 * nothing may be registered. Meant for ThreadSanitizer and ASan builds.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "helpers.h"

#define THREADS 4
#define BUFS 64

static struct t_registrar t;
static struct regcache *c;
static char *pool;
static size_t page;
static long iterations;
static _Atomic int bad;

static void check(struct regcache_region *r, const void *p, size_t len,
		  const char *when)
{
	if (!t_registrar_covers(&t, r, p, len)) {
		fprintf(stderr, "region %p does not cover %p+%zu %s\n",
			(void *)r, p, len, when);
		atomic_fetch_add(&bad, 1);
	}
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct regcache_region *held[4] = { 0 };
	const void *held_p[4];
	size_t held_len[4];

	for (long i = 0; i < iterations; i++) {
		unsigned k = rand_r(&seed);
		/* Half the buffers are shared by all threads, half private. */
		unsigned b = (k & 1) ? (k >> 1) % (BUFS / 2)
				     : BUFS / 2 + (unsigned)(uintptr_t)arg % (BUFS / 2);
		char *p = pool + b * 2 * page + (k >> 8) % page;
		size_t len = 1 + (k >> 4) % (2 * page - (k >> 8) % page);
		unsigned slot = (k >> 20) % 4;
		struct regcache_region *r;
		int ret;

		if (held[slot]) {
			check(held[slot], held_p[slot], held_len[slot], "before put");
			regcache_put(c, held[slot]);
			held[slot] = NULL;
		}
		ret = regcache_get(c, p, len, k & 3, &r);
		if (ret) {
			/* Only running out of slots is acceptable here. */
			if (ret != -ENOSPC) {
				fprintf(stderr, "get: %d\n", ret);
				atomic_fetch_add(&bad, 1);
			}
			continue;
		}
		check(r, p, len, "after get");
		held[slot] = r, held_p[slot] = p, held_len[slot] = len;
		if (k % 997 == 0)
			regcache_invalidate(c, p, len);
		if (k % 4999 == 0)
			regcache_flush(c);
	}
	for (int s = 0; s < 4; s++)
		if (held[s])
			regcache_put(c, held[s]);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	struct regcache_stats st;

	iterations = argc > 1 ? atol(argv[1]) : T_SCALE(200000);
	page = sysconf(_SC_PAGESIZE);
	pool = t_map(BUFS * 2 * page + page);
	t_registrar_init(&t, 256);
	/* A small count limit keeps eviction busy. */
	c = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 16, 0);
	for (long i = 0; i < THREADS; i++)
		T_REQUIRE(pthread_create(&th[i], NULL, worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	regcache_get_stats(c, &st);
	fprintf(stderr, "hits %llu misses %llu evictions %llu invalidations "
		"%llu merges %llu regions %llu\n",
		(unsigned long long)st.hits, (unsigned long long)st.misses,
		(unsigned long long)st.evictions,
		(unsigned long long)st.invalidations,
		(unsigned long long)st.merges, (unsigned long long)st.regions);
	T_CHECK(st.hits > 0 && st.misses > 0 && st.evictions > 0);
	T_EXPECT_EQ(st.registrations, st.deregistrations + st.regions);
	regcache_flush(c);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, st.regions);
	T_EXPECT_EQ(0, atomic_load(&t.live));
	regcache_destroy(c);
	T_EXPECT_EQ(0, atomic_load(&t.live));
	T_EXPECT_EQ(0, atomic_load(&bad));
	t_registrar_fini(&t);
	return t_exit_status();
}
