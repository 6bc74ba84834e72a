/*
 * Description: regcache_invalidate() is how an allocator says "I am about
 * to reuse this range". Proven with data: after munmap + mmap at the same
 * address, a cached registration DMAs into the old pages (the negative
 * control: the oracle does see staleness), while invalidate + get delivers
 * the bytes to the new pages. Runs with REGCACHE_MONITOR=none, so only the
 * explicit call can invalidate.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 65536

static char *remap_same(char *buf)
{
	char *p;

	T_REQUIRE(munmap(buf, LEN) == 0);
	p = mmap(buf, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	T_REQUIRE(p == buf);
	return p;
}

int main(void)
{
	struct regcache_region *r, *held;
	struct regcache_stats st;
	struct io_uring ring;
	struct regcache *c;
	char *buf = t_map(LEN);

	t_ring_init(&ring);
	c = t_uring_cache(&ring, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);

	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 1));
	regcache_put(c, r);

	/* Negative control: reuse the address without telling the cache. */
	buf = remap_same(buf);
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(!t_dma_visible(&ring, r, buf, LEN, 2));
	regcache_put(c, r);

	/* Tell it: the next get registers the new pages. */
	T_EXPECT_EQ(1, regcache_invalidate(c, buf + 100, 1));
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 3));
	regcache_put(c, r);

	/* Invalidate while held: the holder keeps a working registration,
	 * which is deregistered at its put; the next get misses. */
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &held));
	T_EXPECT_EQ(1, regcache_invalidate(c, buf, LEN));
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.regions);
	T_CHECK(t_dma_visible(&ring, held, buf, LEN, 4));
	regcache_put(c, held);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, st.regions);
	T_EXPECT_EQ(2, st.invalidations);

	/* A range that overlaps nothing invalidates nothing. */
	T_EXPECT_EQ(0, regcache_invalidate(c, buf, LEN));

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
