/* SPDX-License-Identifier: MIT */
/*
 * Description: the verbs registrar hands the caller's IBV_ACCESS_* bits to
 * ibv_reg_mr_iova2 with iova == address over whole pages, adds LOCAL_WRITE
 * where the kernel demands it, rejects ZERO_BASED, serves a hit only with a
 * superset of the asked access, and the lkey/rkey helpers return the MR's
 * keys. Runs against the link-time test double (verbs_fake.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_fake.h"

int main(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct regcache_params p = {
		.flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
	};
	struct regcache_region *r1, *r2, *r3, *r4, *r5;
	struct regcache *c;
	struct regcache_stats st;
	struct ibv_mr *mr;
	char *buf = t_map(16 * pg);
	long regs;

	vf_init();
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	T_EXPECT_EQ(0, regcache_verbs_odp(c));
	/* Asked once, for its limits (max_mr, max_mr_size, ODP caps). */
	T_EXPECT_EQ(1, vf.query_calls);
	T_EXPECT_EQ(0, vf.reg_calls);

	/* A miss registers whole pages, iova == address, the asked access. */
	T_REQUIRE(regcache_get(c, buf + 100, 200, IBV_ACCESS_LOCAL_WRITE,
			       &r1) == 0);
	T_EXPECT_EQ(1, vf.reg_calls);
	T_CHECK(vf.last_reg.addr == buf);
	T_EXPECT_EQ(pg, vf.last_reg.len);
	T_EXPECT_EQ((uintptr_t)buf, vf.last_reg.iova);
	T_EXPECT_EQ(IBV_ACCESS_LOCAL_WRITE, vf.last_reg.access);
	mr = regcache_region_handle(r1);
	T_CHECK(mr == vf.last_reg.mr);
	T_EXPECT_EQ(mr->lkey, regcache_region_lkey(r1));
	T_EXPECT_EQ(mr->rkey, regcache_region_rkey(r1));
	T_CHECK(regcache_region_lkey(r1) != regcache_region_rkey(r1));

	/* A subset of the access hits. */
	T_REQUIRE(regcache_get(c, buf + 8, 16, 0, &r2) == 0);
	T_CHECK(r2 == r1);
	T_EXPECT_EQ(1, vf.reg_calls);

	/* More access misses; the new region has the union. */
	T_REQUIRE(regcache_get(c, buf, pg, IBV_ACCESS_REMOTE_READ, &r3) == 0);
	T_CHECK(r3 != r1);
	T_EXPECT_EQ(2, vf.reg_calls);
	T_EXPECT_EQ(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
		    vf.last_reg.access);
	T_EXPECT_EQ(((struct ibv_mr *)regcache_region_handle(r3))->rkey,
		    regcache_region_rkey(r3));

	/* REMOTE_WRITE without LOCAL_WRITE: the kernel would say EINVAL. */
	T_REQUIRE(regcache_get(c, buf + 4 * pg, pg, IBV_ACCESS_REMOTE_WRITE,
			       &r4) == 0);
	T_EXPECT_EQ(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
		    vf.last_reg.access);
	T_CHECK(vf.last_reg.addr == buf + 4 * pg);

	/* Optional bits (relaxed ordering) reach ibv_reg_mr_iova2 unchanged. */
	T_REQUIRE(regcache_get(c, buf + 8 * pg, 3 * pg,
			       IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_RELAXED_ORDERING,
			       &r5) == 0);
	T_EXPECT_EQ(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_RELAXED_ORDERING,
		    vf.last_reg.access);
	T_EXPECT_EQ(3 * pg, vf.last_reg.len);

	/* ZERO_BASED cannot be honoured by merged regions. */
	regs = vf.reg_calls;
	{
		struct regcache_region *bad = (void *)1;

		T_EXPECT_EQ(-EINVAL, regcache_get(c, buf + 12 * pg, pg,
						  IBV_ACCESS_ZERO_BASED, &bad));
		T_EXPECT_EQ(regs, vf.reg_calls);
	}

	regcache_put(c, r1);
	regcache_put(c, r2);
	regcache_put(c, r3);
	regcache_put(c, r4);
	regcache_put(c, r5);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(st.registrations, vf.reg_ok);
	T_EXPECT_EQ(0, st.uncached);

	/* Every MR is deregistered exactly once (the double aborts on a
	 * second time), and nothing is left. */
	regcache_destroy(c);
	T_EXPECT_EQ(vf.reg_ok, vf.dereg_calls);
	T_EXPECT_EQ(0, vf.live);
	T_EXPECT_EQ(0, vf.live_bytes);

	/* Keys of NULL; the ODP query of a non-verbs cache. */
	T_EXPECT_EQ(0, regcache_region_lkey(NULL));
	T_EXPECT_EQ(0, regcache_region_rkey(NULL));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_odp(NULL));
	{
		struct io_uring ring;
		struct regcache *uc;

		t_ring_init(&ring);
		uc = t_uring_cache(&ring, 0, 0, 0);
		T_EXPECT_EQ(-EINVAL, regcache_verbs_odp(uc));
		regcache_destroy(uc);
		io_uring_queue_exit(&ring);
	}
	munmap(buf, 16 * pg);
	return t_exit_status();
}
