/*
 * Description: a region invalidated while the caller still holds it
 * (munmap + fresh mapping under a held region) stays registered until its
 * last put and is deregistered exactly then; a get meanwhile is a fresh miss
 * that sees the new pages, even while the old one is held. Runs under each
 * kernel monitor.
 */
#include "helpers.h"

#define LEN 65536

int main(void)
{
	struct regcache_region *held, *r;
	struct regcache_stats st, st2, st3;
	struct io_uring ring;
	struct regcache *c;
	char *buf;

	c = t_monitor_cache(&ring);
	buf = t_map(LEN);

	T_REQUIRE(regcache_get(c, buf, LEN, 0, &held) == 0);
	T_CHECK(t_dma_visible(&ring, held, buf, LEN, 1));
	regcache_get_stats(c, &st);
	t_remap(buf, LEN);

	/* While the old region is held: a new get is a miss on new pages. */
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	T_CHECK(r != held);
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 2));
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits, st2.hits);
	T_EXPECT_EQ(st.deregistrations, st2.deregistrations);
	T_CHECK(st2.invalidations > st.invalidations);
	/* The held registration still pins the old pages: DMA through it
	 * must not reach the new mapping (and must not fault). */
	T_CHECK(!t_dma_visible(&ring, held, buf, LEN, 3));
	regcache_put(c, held);
	regcache_get_stats(c, &st3);
	T_EXPECT_EQ(st2.deregistrations + 1, st3.deregistrations);
	regcache_put(c, r);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
