/*
 * Description: a region is never deregistered while a get holds it, when
 * kills race with the owner thread's hits (which count their references
 * apart, without atomics on the shared count) and with other threads' last
 * puts and scans of the dead regions. The hazard is a claim of a dead region
 * by a thread whose barrier ran before the region was killed, which could
 * miss an owner's reference still in its store buffer. The registrar is a
 * null one whose handles record whether they are registered; holders check
 * it while they hold the region. Bounded by iteration counts.
 */
#include <sched.h>
#include <errno.h>
#include <string.h>

#include "helpers.h"

#define NBUF 4
#define LEN 4096

static _Atomic long bad;

static struct regcache *c;
static char *bufs;
static long iters;

static void check_held(struct regcache_region *r)
{
	struct t_null_handle *h = regcache_region_handle(r);

	if (!atomic_load(&h->live)) {
		atomic_fetch_add(&bad, 1);
	}
}

/* Owners: hit their own buffer over and over. */
static void *owner(void *arg)
{
	char *b = bufs + (size_t)(uintptr_t)arg * LEN;

	for (long i = 0; i < iters; i++) {
		struct regcache_region *r;

		T_REQUIRE(regcache_get(c, b, LEN, 0, &r) == 0);
		check_held(r);
		check_held(r);
		regcache_put(c, r);
	}
	return NULL;
}

/* Killers: invalidate one buffer each, so their kill_finish scans overlap. */
static void *killer(void *arg)
{
	char *b = bufs + (size_t)(uintptr_t)arg * LEN;

	for (long i = 0; i < iters / 4; i++)
		regcache_invalidate(c, b, LEN);
	return NULL;
}

/* Sharers: get and put the owners' buffers (atomic counts, try_claim). */
static void *sharer(void *arg)
{
	(void)arg;
	for (long i = 0; i < iters; i++) {
		struct regcache_region *r;
		char *b = bufs + (size_t)(i % NBUF) * LEN;

		T_REQUIRE(regcache_get(c, b, LEN, 0, &r) == 0);
		check_held(r);
		regcache_put(c, r);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[3 * NBUF];
	int n = 0;

	iters = argc > 1 ? atol(argv[1]) : T_SCALE(2000000);
	c = t_null_cache(0);
	bufs = t_map(NBUF * LEN);
	for (int i = 0; i < NBUF; i++) {
		T_REQUIRE(!pthread_create(&th[n++], NULL, owner, (void *)(uintptr_t)i));
		T_REQUIRE(!pthread_create(&th[n++], NULL, killer, (void *)(uintptr_t)i));
		T_REQUIRE(!pthread_create(&th[n++], NULL, sharer, NULL));
	}
	while (n)
		pthread_join(th[--n], NULL);
	regcache_destroy(c);
	fprintf(stderr, "regs %ld deregs %ld held-but-deregistered %ld\n",
		atomic_load(&t_null_regs), atomic_load(&t_null_deregs),
		atomic_load(&bad));
	T_EXPECT_EQ(0, atomic_load(&bad));
	T_EXPECT_EQ(atomic_load(&t_null_regs), atomic_load(&t_null_deregs));
	return t_exit_status();
}
