/* SPDX-License-Identifier: MIT */
/*
 * Description: every change in the catalogue (lib/changes.h) under a
 * cached memory region of a real RDMA device is seen, proven with RDMA:
 * an RDMA WRITE through the region's rkey over a loopback RC queue pair,
 * then the bytes checked where the application looks. Unlike io_uring on
 * 6.1, ibv_reg_mr registers SysV and file-backed shared memory, so those
 * cases are proven here. Run under each monitor and through regcached;
 * "naive" runs it under a cache that never invalidates, which must be
 * found stale. Skips (77) without an RDMA device (Soft-RoCE in the guest,
 * tests/vm/).
 *
 *   changes-rxe [naive] [--daemon plain|restart|dead] [CASE ...]
 */
#include <regcache/verbs.h>

#include "changes.h"
#include "verbs_device.h"

static struct td dev;

static struct regcache *create(unsigned flags)
{
	struct regcache_params p = { .flags = flags };
	struct regcache *c;

	td_open(&dev);
	T_REQUIRE(regcache_verbs_create(dev.pd, &p, &c) == 0);
	return c;
}

static void destroy(struct regcache *c)
{
	regcache_destroy(c);
	td_close(&dev);
}

static bool visible(struct regcache_region *r, void *buf, size_t len,
		    unsigned seed)
{
	return td_write_visible(&dev, buf, regcache_region_rkey(r), len, seed);
}

static const char *refuses(void *buf, size_t len)
{
	(void)buf;
	(void)len;
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct t_oracle rxe = {
		.name = "RDMA WRITE through the rkey",
		.create = create,
		.destroy = destroy,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		.visible = visible,
		.refuses = refuses,
	};

	return t_changes_main(&rxe, argc, argv);
}
