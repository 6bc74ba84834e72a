/* SPDX-License-Identifier: MIT */
/*
 * Description: references taken and dropped by threads that did not
 * create the region stay exact. The main thread registers the buffers;
 * short-lived hitter threads get them, put half themselves and hand the
 * other half to a consumer thread that puts them later (often after the
 * hitter has exited, still counting them); an invalidator kills regions
 * all along. A lost reference shows as a region deregistered under its
 * holder (the tracking registrar checks before every put), an extra one as
 * a region still registered after the last put and a flush. Bounded, and
 * meant for ThreadSanitizer too.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "helpers.h"

#define BUFS 64
#define HITTERS 3
#define QUEUE 256

static struct t_registrar t;
static struct regcache *c;
static char *pool;
static size_t page;
static long rounds, per_round;
static _Atomic int bad;
static _Atomic bool stop;

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned head, tail;
	bool done;
	struct item {
		struct regcache_region *r;
		const void *p;
	} items[QUEUE];
} q = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void check(struct regcache_region *r, const void *p, const char *when)
{
	if (!t_registrar_covers(&t, r, p, 64)) {
		fprintf(stderr, "region %p does not cover %p %s\n", (void *)r,
			p, when);
		atomic_fetch_add(&bad, 1);
	}
}

/* false when the queue is full (the caller puts the region itself). */
static bool hand_off(struct regcache_region *r, const void *p)
{
	bool ok;

	pthread_mutex_lock(&q.lock);
	ok = q.tail - q.head < QUEUE;
	if (ok) {
		q.items[q.tail++ % QUEUE] = (struct item){ r, p };
		pthread_cond_signal(&q.cond);
	}
	pthread_mutex_unlock(&q.lock);
	return ok;
}

static void *consumer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&q.lock);
	for (;;) {
		struct item it;

		while (q.head == q.tail && !q.done)
			pthread_cond_wait(&q.cond, &q.lock);
		if (q.head == q.tail)
			break;
		it = q.items[q.head++ % QUEUE];
		pthread_mutex_unlock(&q.lock);
		check(it.r, it.p, "in the thread it was handed to");
		regcache_put(c, it.r);
		pthread_mutex_lock(&q.lock);
	}
	pthread_mutex_unlock(&q.lock);
	return NULL;
}

static void *hitter(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (long i = 0; i < per_round; i++) {
		unsigned k = rand_r(&seed);
		char *p = pool + (k % BUFS) * 2 * page + 64 * ((k >> 8) % 8);
		struct regcache_region *r;
		int ret = regcache_get(c, p, 64, 0, &r);

		if (ret) {
			fprintf(stderr, "get %p: %d\n", (void *)p, ret);
			atomic_fetch_add(&bad, 1);
			continue;
		}
		check(r, p, "after get");
		if ((k >> 16) & 1 && hand_off(r, p))
			continue;
		check(r, p, "before put");
		regcache_put(c, r);
	}
	return NULL;
}

static void *invalidator(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	while (!atomic_load(&stop)) {
		unsigned k = rand_r(&seed);

		regcache_invalidate(c, pool + (k % BUFS) * 2 * page, page);
		if (k % 64 == 0)
			regcache_flush(c);
		sched_yield();
	}
	return NULL;
}

int main(void)
{
	pthread_t cons, inv, hit[HITTERS];
	struct regcache_stats st;
	struct regcache_region *r;

	rounds = T_SCALE(150 * T_STRESS_FACTOR);
	per_round = T_SCALE(20000);

	page = (size_t)sysconf(_SC_PAGESIZE);
	t_registrar_init(&t, 1024);
	c = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	pool = t_map(BUFS * 2 * page);
	for (int i = 0; i < BUFS; i++) {
		pool[i * 2 * page] = 1;
		T_REQUIRE(regcache_get(c, pool + i * 2 * page, page, 0, &r) == 0);
		regcache_put(c, r);
	}

	pthread_create(&cons, NULL, consumer, NULL);
	pthread_create(&inv, NULL, invalidator, (void *)7);
	for (long round = 0; round < rounds && !atomic_load(&bad); round++) {
		/* New threads each round: their first gets find fresh
		 * reference slots, and they exit holding hand-offs. */
		for (int i = 0; i < HITTERS; i++)
			pthread_create(&hit[i], NULL, hitter,
				       (void *)(uintptr_t)(round * HITTERS + i + 1));
		for (int i = 0; i < HITTERS; i++)
			pthread_join(hit[i], NULL);
	}
	pthread_mutex_lock(&q.lock);
	q.done = true;
	pthread_cond_signal(&q.cond);
	pthread_mutex_unlock(&q.lock);
	pthread_join(cons, NULL);
	atomic_store(&stop, true);
	pthread_join(inv, NULL);

	T_EXPECT_EQ(0, atomic_load(&bad));
	regcache_get_stats(c, &st);
	printf("%llu hits, %llu misses, %llu invalidations\n",
	       (unsigned long long)st.hits, (unsigned long long)st.misses,
	       (unsigned long long)st.invalidations);
	/* Nothing is held: a flush must deregister every region. */
	regcache_flush(c);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, st.regions);
	T_EXPECT_EQ(0, atomic_load(&t.live));
	T_CHECK(st.hits > 0 && st.invalidations > 0);
	regcache_destroy(c);
	T_EXPECT_EQ(atomic_load(&t.regs), atomic_load(&t.deregs));
	t_registrar_fini(&t);
	return t_exit_status();
}
