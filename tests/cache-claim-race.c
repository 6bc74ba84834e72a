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

struct handle {
	_Atomic int live;
	struct handle *next;
};

/* Every handle stays reachable from here: they are never freed (holders may
 * still look at one), and LeakSanitizer must not call that a leak. */
static _Atomic(struct handle *) all_handles;

static _Atomic long regs, deregs, bad;

static int null_reg(void *ctx, void *addr, size_t len, unsigned access,
		    void **handle)
{
	struct handle *h = malloc(sizeof(*h));

	(void)ctx, (void)addr, (void)len, (void)access;
	if (!h)
		return -ENOMEM;
	atomic_store(&h->live, 1);
	h->next = atomic_load(&all_handles);
	while (!atomic_compare_exchange_weak(&all_handles, &h->next, h))
		;
	atomic_fetch_add(&regs, 1);
	*handle = h;
	return 0;
}

static void null_dereg(void *ctx, void *handle)
{
	struct handle *h = handle;

	(void)ctx;
	if (!atomic_exchange(&h->live, 0)) {
		fprintf(stderr, "double deregistration\n");
		abort();
	}
	atomic_fetch_add(&deregs, 1);
	/* Leaked on purpose: holders may still look at it. */
}

static const struct regcache_ops ops = { .reg = null_reg, .dereg = null_dereg };
static struct regcache *c;
static char *bufs;
static long iters;

static void check_held(struct regcache_region *r)
{
	struct handle *h = regcache_region_handle(r);

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
	struct regcache_params p = {
		.ops = &ops, .flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
	};
	pthread_t th[3 * NBUF];
	int n = 0;

	iters = argc > 1 ? atol(argv[1]) : T_SCALE(2000000);
	T_REQUIRE(regcache_create(&p, &c) == 0);
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
		atomic_load(&regs), atomic_load(&deregs), atomic_load(&bad));
	T_EXPECT_EQ(0, atomic_load(&bad));
	T_EXPECT_EQ(atomic_load(&regs), atomic_load(&deregs));
	return t_exit_status();
}
