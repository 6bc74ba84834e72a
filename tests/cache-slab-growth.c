/*
 * Description: hits find their own region while the region pool grows.
 * Hints and index entries hold region numbers, which a hit turns into the
 * region through the pool's slab table without a lock. One thread misses
 * on 6000 fresh one-page buffers (more than four slabs of regions), two
 * others hit the buffers filled so far, the newest among them, all along:
 * every get must return a region whose registrar handle, address and
 * length are those of its own buffer, and at the end every buffer hits its
 * region. Bounded, and meant for ThreadSanitizer too (the slab table is
 * read by hits while misses add slabs).
 */
#include <pthread.h>
#include <unistd.h>

#include "helpers.h"

#define NBUF 6000
#define HITTERS 2

static struct regcache *c;
static char *bufs;
static size_t page;
static _Atomic unsigned filled;
static _Atomic int bad;

/* The handle is the address registered: a region found for the wrong
 * buffer shows at once. */
static int addr_reg(void *ctx, void *addr, size_t len, unsigned access,
		    void **handle)
{
	(void)ctx, (void)len, (void)access;
	*handle = addr;
	return 0;
}

static void addr_dereg(void *ctx, void *handle)
{
	(void)ctx, (void)handle;
}

static const struct regcache_ops ops = { .reg = addr_reg,
					 .dereg = addr_dereg };

static char *buf(unsigned i)
{
	return bufs + (size_t)i * 2 * page;	/* a gap: regions never merge */
}

static void get_put(unsigned i)
{
	struct regcache_region *r;

	if (regcache_get(c, buf(i), page, 0, &r)) {
		bad++;
		return;
	}
	if (regcache_region_handle(r) != buf(i) ||
	    regcache_region_addr(r) != buf(i) ||
	    regcache_region_len(r) != page) {
		fprintf(stderr, "buffer %u (%p) got the region of %p+%zu\n", i,
			(void *)buf(i), regcache_region_addr(r),
			regcache_region_len(r));
		bad++;
	}
	regcache_put(c, r);
}

static void *grower(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < NBUF; i++) {
		get_put(i);
		atomic_store_explicit(&filled, i + 1, memory_order_release);
	}
	return NULL;
}

static void *hitter(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg + 1, n;

	while ((n = atomic_load_explicit(&filled, memory_order_acquire)) <
	       NBUF) {
		if (!n)
			continue;
		get_put(n - 1);
		get_put(t_rnd(&seed) % n);
	}
	return NULL;
}

int main(void)
{
	struct regcache_params p = {
		.ops = &ops, .flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
		.max_regions = 2 * NBUF,
	};
	pthread_t th[HITTERS + 1];
	struct regcache_stats st;

	page = sysconf(_SC_PAGESIZE);
	bufs = t_map((size_t)NBUF * 2 * page);
	T_REQUIRE(regcache_create(&p, &c) == 0);
	for (int i = 0; i < HITTERS; i++)
		T_REQUIRE(!pthread_create(&th[i], NULL, hitter,
					  (void *)(uintptr_t)i));
	T_REQUIRE(!pthread_create(&th[HITTERS], NULL, grower, NULL));
	for (int i = 0; i <= HITTERS; i++)
		pthread_join(th[i], NULL);
	for (unsigned i = 0; i < NBUF; i++)
		get_put(i);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, atomic_load(&bad));
	T_EXPECT_EQ(NBUF, st.misses);
	T_EXPECT_EQ(NBUF, st.regions);
	T_CHECK(st.hits >= NBUF);
	regcache_destroy(c);
	return t_exit_status();
}
