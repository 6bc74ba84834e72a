/* SPDX-License-Identifier: MIT */
/*
 * Description: regcache_verbs_sge() fills an ibv_sge for any buffer (the
 * caller's address and length, the region's lkey, pinned or implicit ODP),
 * hands back the region to put, hits on reuse, rejects lengths an sge
 * cannot hold and NULL pointers with -EINVAL, passes registration errors
 * through, and leaves the sge untouched on every error. Runs against the
 * link-time test double (verbs_fake.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_fake.h"

static const struct ibv_sge sentinel = {
	.addr = 0xdeadbeef, .length = 0x5a5a, .lkey = 0xa5a5,
};

static bool untouched(const struct ibv_sge *sge)
{
	return !memcmp(sge, &sentinel, sizeof(*sge));
}

static void one_mode(unsigned flags, size_t pg)
{
	struct regcache_params p = {
		.flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE | flags,
	};
	struct regcache_region *r, *r2, *none = NULL;
	struct ibv_sge sge = sentinel, sge2;
	struct regcache_stats st;
	struct regcache *c;
	char *buf = t_map(8 * pg);
	struct ibv_mr *mr;

	vf_init();
	vf_set_odp(true, true);
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	T_EXPECT_EQ(!!(flags & REGCACHE_VERBS_FLAG_ODP_IMPLICIT),
		    regcache_verbs_odp(c));

	T_REQUIRE(regcache_verbs_sge(c, buf + 123, 1000, IBV_ACCESS_LOCAL_WRITE,
				     &sge, &r) == 0);
	mr = regcache_region_handle(r);
	T_REQUIRE(mr && vf_find(mr));
	T_EXPECT_EQ((uintptr_t)(buf + 123), sge.addr);
	T_EXPECT_EQ(1000, sge.length);
	T_EXPECT_EQ(mr->lkey, sge.lkey);
	T_EXPECT_EQ(regcache_region_lkey(r), sge.lkey);
	/* The sge lies inside the registration. */
	T_CHECK((char *)regcache_region_addr(r) <= buf + 123);
	T_CHECK((char *)regcache_region_addr(r) + regcache_region_len(r) >=
		buf + 1123);

	/* Reuse hits and gives the same key. */
	T_REQUIRE(regcache_verbs_sge(c, buf + 2000, 64, 0, &sge2, &r2) == 0);
	T_CHECK(r2 == r);
	T_EXPECT_EQ(sge.lkey, sge2.lkey);
	T_EXPECT_EQ((uintptr_t)(buf + 2000), sge2.addr);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.hits);
	regcache_put(c, r2);
	regcache_put(c, r);

	/* Bad arguments: -EINVAL, nothing touched, nothing registered. */
	sge = sentinel;
	vf.reg_calls = 0;
	T_EXPECT_EQ(-EINVAL, regcache_verbs_sge(c, buf, 0, 0, &sge, &none));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_sge(c, buf, (size_t)UINT32_MAX + 1,
						0, &sge, &none));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_sge(c, NULL, 8, 0, &sge, &none));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_sge(NULL, buf, 8, 0, &sge, &none));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_sge(c, buf, 8, 0, NULL, &none));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_sge(c, buf, 8, 0, &sge, NULL));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_sge(c, (void *)(UINTPTR_MAX - 4),
						8, 0, &sge, &none));
	T_CHECK(untouched(&sge));
	T_CHECK(none == NULL);
	T_EXPECT_EQ(0, vf.reg_calls);

	/* A registration error reaches the caller (pinned mode only: ODP
	 * does not register per buffer). */
	if (!(flags & REGCACHE_VERBS_FLAG_ODP_IMPLICIT)) {
		vf.fail_errno = EFAULT;
		vf.fail_count = 1;
		T_EXPECT_EQ(-EFAULT, regcache_verbs_sge(c, buf + 4 * pg, 8,
							IBV_ACCESS_LOCAL_WRITE,
							&sge, &none));
		T_CHECK(untouched(&sge));
	} else {
		T_EXPECT_EQ(-EOPNOTSUPP,
			    regcache_verbs_sge(c, buf + 4 * pg, 8,
					       IBV_ACCESS_MW_BIND, &sge, &none));
		T_CHECK(untouched(&sge));
	}
	regcache_destroy(c);
	T_EXPECT_EQ(0, vf.live);
	munmap(buf, 8 * pg);
}

int main(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	unsetenv("REGCACHE_VERBS_ODP");
	one_mode(0, pg);
	one_mode(REGCACHE_VERBS_FLAG_ODP_IMPLICIT, pg);
	return t_exit_status();
}
