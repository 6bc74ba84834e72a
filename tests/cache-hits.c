/*
 * Description: the cache's core rules with real io_uring fixed buffers:
 * a miss registers and a repeat get hits the same region; registration is
 * page-granular so small buffers in one page share it; gets nest (refcount);
 * a wider access request re-registers with the union of access bits;
 * overlapping requests merge into one region; a hit the hint misses, found
 * under the lock, counts as a hit; a hit really DMAs into the buffer. The cache runs with REGCACHE_FLAG_EXPLICIT_INVALIDATE so the rules
 * are tested whatever monitor the machine has.
 */
#include <string.h>
#include <unistd.h>

#include "helpers.h"

int main(void)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct regcache_region *r1, *r2, *r3;
	struct regcache_stats st;
	struct t_registrar t;
	uint64_t hits;
	struct regcache *c;
	char *buf = t_map(16 * page);

	t_registrar_init(&t, 64);
	c = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);

	/* miss, then hit on the same region */
	T_EXPECT_EQ(0, regcache_get(c, buf + 100, 200, 1, &r1));
	T_CHECK(t_registrar_covers(&t, r1, buf + 100, 200));
	T_CHECK(regcache_region_addr(r1) == buf);
	T_EXPECT_EQ(page, regcache_region_len(r1));
	regcache_put(c, r1);
	T_EXPECT_EQ(0, regcache_get(c, buf + 100, 200, 1, &r2));
	T_CHECK(r2 == r1);
	/* another small buffer in the same page hits too */
	T_EXPECT_EQ(0, regcache_get(c, buf + 2000, 64, 1, &r3));
	T_CHECK(r3 == r1);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.misses);
	T_EXPECT_EQ(2, st.hits);
	T_EXPECT_EQ(1, st.registrations);
	T_EXPECT_EQ(1, st.regions);
	T_EXPECT_EQ(page, st.bytes);

	/* held twice: an invalidation defers deregistration to the last put */
	T_EXPECT_EQ(1, regcache_invalidate(c, buf, 1));
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, st.deregistrations);
	T_CHECK(t_registrar_covers(&t, r2, buf + 100, 200));
	regcache_put(c, r2);
	T_CHECK(t_registrar_covers(&t, r3, buf + 2000, 64));
	regcache_put(c, r3);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.deregistrations);
	T_EXPECT_EQ(0, st.regions);
	T_EXPECT_EQ(0, atomic_load(&t.live));

	/* access: a superset hits, a wider request re-registers the union */
	T_EXPECT_EQ(0, regcache_get(c, buf, page, 0x3, &r1));
	regcache_put(c, r1);
	T_EXPECT_EQ(0, regcache_get(c, buf, page, 0x1, &r2));
	T_CHECK(r2 == r1);
	regcache_put(c, r2);
	T_EXPECT_EQ(0, regcache_get(c, buf, page, 0x4, &r2));
	T_CHECK(r2 != r1);
	regcache_put(c, r2);
	T_EXPECT_EQ(0, regcache_get(c, buf, page, 0x7, &r3));
	T_CHECK(r3 == r2);
	regcache_put(c, r3);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.merges);
	T_EXPECT_EQ(1, st.regions);

	/* overlapping requests merge into one region covering both */
	regcache_flush(c);
	T_EXPECT_EQ(0, regcache_get(c, buf + 4 * page, 2 * page, 0, &r1));
	T_EXPECT_EQ(0, regcache_get(c, buf + 5 * page, 3 * page, 0, &r2));
	T_CHECK(regcache_region_addr(r2) == buf + 4 * page);
	T_EXPECT_EQ(4 * page, regcache_region_len(r2));
	/* r1 was absorbed but is still registered while held */
	T_CHECK(t_registrar_covers(&t, r1, buf + 4 * page, 2 * page));
	regcache_put(c, r1);
	regcache_get_stats(c, &st);
	hits = st.hits;
	/* The hint for this page names r1, which is dead: a hit found under
	 * the lock, which counts as a hit too. */
	T_EXPECT_EQ(0, regcache_get(c, buf + 4 * page, page, 0, &r3));
	T_CHECK(r3 == r2);
	regcache_put(c, r3);
	regcache_put(c, r2);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(hits + 1, st.hits);
	T_EXPECT_EQ(1, st.regions);
	regcache_destroy(c);
	T_EXPECT_EQ(0, atomic_load(&t.live));
	t_registrar_fini(&t);

	/* A hit DMAs into the buffer: the built-in io_uring registrar. */
	{
		struct io_uring ring;
		char *b = t_map(65536);

		t_ring_init(&ring);
		c = t_uring_cache(&ring, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
		for (unsigned i = 0; i < 4; i++) {
			T_EXPECT_EQ(0, regcache_get(c, b, 65536, 0, &r1));
			T_CHECK(t_dma_visible(&ring, r1, b, 65536, i));
			regcache_put(c, r1);
		}
		regcache_get_stats(c, &st);
		T_EXPECT_EQ(1, st.misses);
		T_EXPECT_EQ(3, st.hits);
		regcache_destroy(c);
		io_uring_queue_exit(&ring);
	}
	return t_exit_status();
}
