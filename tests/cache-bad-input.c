/*
 * Description: bad input gets a clear -errno and never a crash, a leak or a
 * cached region: NULL pointers, zero length, wrapping ranges, unknown flags,
 * unmapped memory and read-only memory; the cache works normally afterwards.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"

int main(void)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct regcache_params p = { 0 };
	struct regcache_region *r = NULL;
	struct regcache_stats st;
	struct io_uring ring, ring2;
	struct regcache *c, *bad;
	char *buf = t_map(4 * page), *hole, *ro;
	int ret;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);

	T_EXPECT_EQ(-EINVAL, regcache_get(NULL, buf, 1, 0, &r));
	T_EXPECT_EQ(-EINVAL, regcache_get(c, NULL, 1, 0, &r));
	T_EXPECT_EQ(-EINVAL, regcache_get(c, buf, 1, 0, NULL));
	T_EXPECT_EQ(-EINVAL, regcache_get(c, buf, 0, 0, &r));
	T_EXPECT_EQ(-EINVAL, regcache_get(c, (void *)(UINTPTR_MAX - 10), 100, 0, &r));
	T_EXPECT_EQ(-EINVAL, regcache_get(c, (void *)(UINTPTR_MAX - page), 100, 0, &r));
	T_EXPECT_EQ(-EINVAL, regcache_invalidate(c, buf, 0));
	T_EXPECT_EQ(-EINVAL, regcache_invalidate(NULL, buf, 1));
	T_EXPECT_EQ(-EINVAL, regcache_invalidate(c, (void *)UINTPTR_MAX, 2));
	regcache_put(c, NULL);
	regcache_put(NULL, NULL);
	regcache_flush(NULL);
	regcache_destroy(NULL);
	regcache_get_stats(NULL, &st);
	T_EXPECT_EQ(0, st.hits);

	T_EXPECT_EQ(-EINVAL, regcache_create(NULL, &bad));
	T_EXPECT_EQ(-EINVAL, regcache_create(&p, &bad));
	T_EXPECT_EQ(-EINVAL, regcache_uring_create(NULL, NULL, &bad));
	T_EXPECT_EQ(-EINVAL, regcache_uring_create(&ring, NULL, NULL));
	T_EXPECT_EQ(-EINVAL, regcache_uring_create_slots(&ring, 0, 0, NULL, &bad));
	T_EXPECT_EQ(-EINVAL, regcache_uring_create_slots(&ring, 16000, 1000, NULL, &bad));
	{
		struct regcache_params q = { .flags = 1u << 30 };
		T_EXPECT_EQ(-EINVAL, regcache_uring_create_slots(&ring, 0, 1, &q, &bad));
	}
	/* The ring already has our table: a second cache is refused. */
	T_EXPECT_EQ(-EBUSY, regcache_uring_create(&ring, NULL, &bad));
	T_EXPECT_EQ(-EINVAL, regcache_region_buf_index(NULL));
	T_CHECK(regcache_region_handle(NULL) == NULL);
	T_EXPECT_EQ(0, regcache_region_len(NULL));

	/* Unmapped memory: the registrar's -EFAULT, nothing cached. */
	hole = t_map(page);
	T_REQUIRE(munmap(hole, page) == 0);
	ret = regcache_get(c, hole, page, 0, &r);
	T_EXPECT_EQ(-EFAULT, ret);
	/* Read-only memory cannot be pinned for device writes. */
	ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_REQUIRE(ro != MAP_FAILED);
	ret = regcache_get(c, ro, page, 0, &r);
	T_EXPECT_EQ(-EFAULT, ret);
	/* Partly unmapped: also refused, and the mapped half not leaked. */
	T_REQUIRE(munmap(buf + 3 * page, page) == 0);
	ret = regcache_get(c, buf + 2 * page, 2 * page, 0, &r);
	T_EXPECT_EQ(-EFAULT, ret);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, st.regions);
	T_EXPECT_EQ(0, st.bytes);

	/* Everything still works. */
	T_EXPECT_EQ(0, regcache_get(c, buf, page, 0, &r));
	T_CHECK(t_dma_visible(&ring, r, buf, page, 7));
	regcache_put(c, r);
	regcache_destroy(c);

	/* A cache on a second ring with an existing table needs slots. */
	t_ring_init(&ring2);
	T_REQUIRE(io_uring_register_buffers_sparse(&ring2, 8) == 0);
	T_EXPECT_EQ(-EBUSY, regcache_uring_create(&ring2, NULL, &bad));
	T_EXPECT_EQ(0, regcache_uring_create_slots(&ring2, 4, 4, NULL, &bad));
	T_EXPECT_EQ(0, regcache_get(bad, buf, page, 0, &r));
	T_CHECK(regcache_region_buf_index(r) >= 4);
	T_CHECK(t_dma_visible(&ring2, r, buf, page, 8));
	regcache_put(bad, r);
	regcache_destroy(bad);
	io_uring_queue_exit(&ring2);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
