/*
 * Description: when the device runs out of resources (all io_uring fixed
 * buffer slots used), the cache evicts idle regions and retries; when every
 * slot is held, get returns the registrar's -ENOSPC, leaks nothing, and
 * works again once regions are put.
 */
#include <errno.h>
#include <unistd.h>

#include "helpers.h"

int main(void)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct regcache_region *r[5];
	struct regcache_stats st;
	struct io_uring ring;
	struct regcache *c;
	char *buf = t_map(32 * page);
	int ret;

	/* A table of 4 slots, handed to the cache, with a count limit far
	 * above it: only the device can say "full". */
	t_ring_init(&ring);
	T_REQUIRE(io_uring_register_buffers_sparse(&ring, 4) == 0);
	{
		struct regcache_params p = {
			.flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
			.max_regions = 1000,
		};
		T_REQUIRE(regcache_uring_create_slots(&ring, 0, 4, &p, &c) == 0);
	}

	for (int i = 0; i < 4; i++) {
		T_EXPECT_EQ(0, regcache_get(c, buf + 2 * i * page, page, 0, &r[i]));
		regcache_put(c, r[i]);
	}
	/* Fifth buffer: the table is full of idle regions -> evict, retry. */
	T_EXPECT_EQ(0, regcache_get(c, buf + 8 * page, page, 0, &r[4]));
	T_CHECK(t_dma_visible(&ring, r[4], buf + 8 * page, page, 5));
	regcache_put(c, r[4]);
	regcache_get_stats(c, &st);
	T_CHECK(st.evictions >= 1);
	T_CHECK(st.reg_failures >= 1);
	T_EXPECT_EQ(4, st.regions);

	/* All four held: a fifth cannot be registered. */
	for (int i = 0; i < 4; i++)
		T_EXPECT_EQ(0, regcache_get(c, buf + (10 + 2 * i) * page, page,
					    0, &r[i]));
	ret = regcache_get(c, buf + 20 * page, page, 0, &r[4]);
	T_EXPECT_EQ(-ENOSPC, ret);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(4, st.regions);
	/* The held ones still work. */
	for (int i = 0; i < 4; i++)
		T_CHECK(t_dma_visible(&ring, r[i], buf + (10 + 2 * i) * page,
				      page, i));
	regcache_put(c, r[0]);
	T_EXPECT_EQ(0, regcache_get(c, buf + 20 * page, page, 0, &r[4]));
	T_CHECK(t_dma_visible(&ring, r[4], buf + 20 * page, page, 9));
	regcache_put(c, r[4]);
	for (int i = 1; i < 4; i++)
		regcache_put(c, r[i]);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
