/* SPDX-License-Identifier: MIT */
/*
 * Description: every change in the catalogue (lib/changes.h) under a
 * cached io_uring fixed buffer is seen, proven with DMA: READ_FIXED
 * through the registration, then the bytes checked where the application
 * looks. Run under each monitor, and as uid 65534 through regcached (with
 * the daemon killed and restarted around the changes); "naive" runs it
 * under a cache that never invalidates, which must be found stale.
 *
 *   changes-uring [naive] [--daemon plain|restart|dead] [CASE ...]
 */
#include "changes.h"

static struct io_uring ring;

static struct regcache *create(unsigned flags)
{
	t_ring_init(&ring);
	return t_uring_cache(&ring, flags, 0, 0);
}

static void destroy(struct regcache *c)
{
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
}

static bool visible(struct regcache_region *r, void *buf, size_t len,
		    unsigned seed)
{
	return t_dma_visible(&ring, r, buf, len, seed);
}

/* Before 6.3 io_uring takes anonymous, shmem and hugetlbfs memory only
 * (EOPNOTSUPP for the rest); RDMA devices register any of it, and
 * changes-rxe proves those cases. */
static const char *refuses(void *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct io_uring probe;
	int ret;

	t_ring_init(&probe);
	ret = io_uring_register_buffers(&probe, &iov, 1);
	if (ret == 0)
		io_uring_unregister_buffers(&probe);
	io_uring_queue_exit(&probe);
	if (ret == -EOPNOTSUPP)
		return "io_uring on this kernel does not register such memory "
		       "(EOPNOTSUPP)";
	T_REQUIRE(ret == 0);
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct t_oracle uring = {
		.name = "io_uring READ_FIXED",
		.create = create,
		.destroy = destroy,
		.visible = visible,
		.refuses = refuses,
	};

	return t_changes_main(&uring, argc, argv);
}
