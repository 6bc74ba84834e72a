/* SPDX-License-Identifier: MIT */
/*
 * Description: the verbs registrar honours the limits ibv_query_device
 * reports. A device whose max_mr is below the default keeps at most max_mr
 * regions (the least recently used idle one is evicted), and an explicit
 * max_regions above max_mr is lowered to it; a get larger than max_mr_size
 * is -E2BIG without calling the device; IBV_ACCESS_ON_DEMAND on a device
 * without ODP is -EOPNOTSUPP without calling the device, and is passed on
 * where the device has ODP. A device whose query fails is used without
 * limits. Runs against the link-time test double (verbs_fake.c); the same
 * limits on a real device: verbs-rxe-limits, verbs-rxe-odp.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_fake.h"

#define MAX_MR 8

static size_t pg;

static struct regcache *cache(size_t max_regions)
{
	struct regcache_params p = {
		.flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
		.max_regions = max_regions,
	};
	struct regcache *c;

	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	return c;
}

/* MAX_MR + 4 idle one-page regions: never more than MAX_MR live. */
static void max_mr_bounds(char *buf, size_t max_regions)
{
	struct regcache_region *r;
	struct regcache *c;

	vf_init();
	vf.attr.orig_attr.max_mr = MAX_MR;
	c = cache(max_regions);
	for (unsigned i = 0; i < MAX_MR + 4; i++) {
		T_REQUIRE(regcache_get(c, buf + 2 * i * pg, pg, 0, &r) == 0);
		regcache_put(c, r);
		T_CHECK(vf.live <= MAX_MR);
	}
	T_EXPECT_EQ(MAX_MR, vf.live);
	T_EXPECT_EQ(MAX_MR + 4, vf.reg_calls);
	regcache_destroy(c);
	T_EXPECT_EQ(0, vf.live);
}

static void max_mr_size(char *buf)
{
	struct regcache_region *r;
	struct regcache *c;

	vf_init();
	vf.attr.orig_attr.max_mr_size = 4 * pg;
	c = cache(0);
	T_EXPECT_EQ(-E2BIG, regcache_get(c, buf, 5 * pg, 0, &r));
	T_EXPECT_EQ(0, vf.reg_calls);
	T_REQUIRE(regcache_get(c, buf, 4 * pg, 0, &r) == 0);
	T_EXPECT_EQ(1, vf.reg_calls);
	regcache_put(c, r);
	regcache_destroy(c);
}

static void on_demand(char *buf)
{
	struct regcache_region *r;
	struct regcache *c;

	vf_init();
	c = cache(0);
	T_EXPECT_EQ(-EOPNOTSUPP, regcache_get(c, buf, pg, IBV_ACCESS_ON_DEMAND |
					      IBV_ACCESS_LOCAL_WRITE, &r));
	T_EXPECT_EQ(0, vf.reg_calls);
	regcache_destroy(c);

	/* A device with (explicit) ODP: an ODP region per get, pinned mode. */
	vf_init();
	vf_set_odp(false, false);
	c = cache(0);
	T_REQUIRE(regcache_get(c, buf, pg, IBV_ACCESS_ON_DEMAND, &r) == 0);
	T_EXPECT_EQ(1, vf.reg_calls);
	T_EXPECT_EQ(IBV_ACCESS_ON_DEMAND, vf.last_reg.access);
	regcache_put(c, r);
	regcache_destroy(c);
}

static void query_fails(char *buf)
{
	struct regcache_region *r;
	struct regcache *c;

	vf_init();
	vf.query_ret = EIO;
	c = cache(0);
	T_REQUIRE(regcache_get(c, buf, 16 * pg, 0, &r) == 0);
	T_EXPECT_EQ(1, vf.reg_calls);
	regcache_put(c, r);
	regcache_destroy(c);
}

int main(void)
{
	char *buf;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	buf = t_map(64 * pg);
	max_mr_bounds(buf, 0);
	max_mr_bounds(buf, 1000);	/* asked for more than the device has */
	max_mr_size(buf);
	on_demand(buf);
	query_fails(buf);
	munmap(buf, 64 * pg);
	return t_exit_status();
}
