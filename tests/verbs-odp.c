/* SPDX-License-Identifier: MIT */
/*
 * Description: implicit on-demand paging in the verbs registrar. The mode
 * follows $REGCACHE_VERBS_ODP (implicit, off, auto = pinned) over the
 * REGCACHE_VERBS_FLAG_ODP_* flags, and implicit mode is taken only when
 * ibv_query_device_ex reports implicit ODP for RC send/recv/write/read and
 * the implicit MR registers. In implicit mode one MR (addr NULL, length
 * SIZE_MAX, ON_DEMAND) per access mask serves every get, a miss only
 * prefetches with ibv_advise_mr (1 GiB sges), regions are cached without a
 * kernel monitor and without pinning, unsupported access is -EOPNOTSUPP,
 * a provider without advise_mr is asked once, and destroy deregisters each
 * implicit MR once. Runs against the link-time test double (verbs_fake.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_fake.h"

static size_t pg;

/* Create a cache with @env ("" for unset) and @flags; return its mode. */
static int mode_of(const char *env, unsigned flags)
{
	struct regcache_params p = { .flags = flags };
	struct regcache *c;
	int odp;

	if (*env)
		setenv("REGCACHE_VERBS_ODP", env, 1);
	else
		unsetenv("REGCACHE_VERBS_ODP");
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	odp = regcache_verbs_odp(c);
	regcache_destroy(c);
	T_EXPECT_EQ(0, vf.live);
	unsetenv("REGCACHE_VERBS_ODP");
	return odp;
}

static void selection(void)
{
	const unsigned IMPL = REGCACHE_VERBS_FLAG_ODP_IMPLICIT;
	const unsigned OFF = REGCACHE_VERBS_FLAG_ODP_OFF;

	/* A capable device. */
	vf_init();
	vf_set_odp(true, true);
	T_EXPECT_EQ(1, mode_of("implicit", 0));
	T_EXPECT_EQ(1, vf.query_calls);
	/* The local implicit MR was registered at create, and freed. */
	T_EXPECT_EQ(1, vf.reg_calls);
	T_CHECK(vf.last_reg.addr == NULL);
	T_CHECK(vf.last_reg.len == SIZE_MAX);
	T_EXPECT_EQ(0, vf.last_reg.iova);
	T_EXPECT_EQ(IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE,
		    vf.last_reg.access);
	T_EXPECT_EQ(1, vf.dereg_calls);

	T_EXPECT_EQ(1, mode_of("", IMPL));
	T_EXPECT_EQ(0, mode_of("", 0));		/* auto is pinned */
	T_EXPECT_EQ(0, mode_of("auto", IMPL));	/* the environment wins */
	T_EXPECT_EQ(0, mode_of("off", IMPL));
	T_EXPECT_EQ(1, mode_of("implicit", OFF));
	T_EXPECT_EQ(0, mode_of("", OFF));
	T_EXPECT_EQ(1, mode_of("bogus", IMPL));	/* ignored, with a warning */
	T_EXPECT_EQ(0, mode_of("bogus", 0));

	/* Devices that cannot. */
	vf_init();
	T_EXPECT_EQ(0, mode_of("implicit", 0));	/* no ODP at all */
	vf_init();
	vf_set_odp(false, true);
	T_EXPECT_EQ(0, mode_of("implicit", 0));	/* explicit ODP only */
	T_EXPECT_EQ(0, vf.reg_calls);
	vf_init();
	vf_set_odp(true, true);
	vf.attr.odp_caps.per_transport_caps.rc_odp_caps &= ~IBV_ODP_SUPPORT_READ;
	T_EXPECT_EQ(0, mode_of("implicit", 0));	/* no RDMA read on ODP */
	vf_init();
	vf_set_odp(true, true);
	vf.query_ret = EIO;
	T_EXPECT_EQ(0, mode_of("implicit", 0));	/* query fails */
	vf_init();
	vf_set_odp(true, true);
	vf.fail_errno = EINVAL;
	vf.fail_count = 1;
	T_EXPECT_EQ(0, mode_of("implicit", 0));	/* claims, but refuses */
	T_EXPECT_EQ(1, vf.reg_calls);
}

static void serving(void)
{
	/* No EXPLICIT_INVALIDATE flag from the caller, and the test runs
	 * with REGCACHE_MONITOR=none too: ODP must cache anyway. */
	struct regcache_params p = { .flags = REGCACHE_VERBS_FLAG_ODP_IMPLICIT };
	struct regcache_region *r1, *r2, *r3, *r4, *r5, *bad = NULL;
	struct regcache_stats st;
	struct ibv_mr *local, *remote;
	struct regcache *c;
	char *buf = t_map(16 * pg);
	size_t big = ((size_t)9 << 30) + 5 * pg;
	char *huge;

	vf_init();
	vf_set_odp(true, false);
	unsetenv("REGCACHE_VERBS_ODP");
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	T_REQUIRE(regcache_verbs_odp(c) == 1);
	T_REQUIRE(vf.reg_calls == 1);
	local = vf.last_reg.mr;

	/* A miss: no registration, one asynchronous prefetch for writing. */
	T_REQUIRE(regcache_get(c, buf + 10, 3 * pg, IBV_ACCESS_LOCAL_WRITE,
			       &r1) == 0);
	T_EXPECT_EQ(1, vf.reg_calls);
	T_CHECK(regcache_region_handle(r1) == local);
	T_EXPECT_EQ(local->lkey, regcache_region_lkey(r1));
	T_EXPECT_EQ(1, vf.advise_calls);
	T_EXPECT_EQ(IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, vf.last_advise.advice);
	T_EXPECT_EQ(0, vf.last_advise.flags);
	T_EXPECT_EQ(1, vf.last_advise.nsge);
	T_EXPECT_EQ((uintptr_t)buf, vf.last_advise.sge[0].addr);
	T_EXPECT_EQ(4 * pg, vf.last_advise.sge[0].length);
	T_EXPECT_EQ(local->lkey, vf.last_advise.sge[0].lkey);

	/* A hit: no prefetch, cached although no monitor watches. */
	T_REQUIRE(regcache_get(c, buf + 100, 10, 0, &r2) == 0);
	T_CHECK(r2 == r1);
	T_EXPECT_EQ(1, vf.advise_calls);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.hits);
	T_EXPECT_EQ(0, st.uncached);

	/* Read-only intent prefetches for reading, from the local MR. */
	T_REQUIRE(regcache_get(c, buf + 8 * pg, pg, 0, &r3) == 0);
	T_EXPECT_EQ(IBV_ADVISE_MR_ADVICE_PREFETCH, vf.last_advise.advice);
	T_CHECK(regcache_region_handle(r3) == local);
	T_EXPECT_EQ(1, vf.reg_calls);

	/* Remote access: a second implicit MR, made on first use. */
	T_REQUIRE(regcache_get(c, buf + 12 * pg, pg,
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
			       &r4) == 0);
	T_EXPECT_EQ(2, vf.reg_calls);
	T_EXPECT_EQ(IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
		    vf.last_reg.access);
	T_CHECK(vf.last_reg.addr == NULL && vf.last_reg.len == SIZE_MAX);
	remote = vf.last_reg.mr;
	T_EXPECT_EQ(remote->rkey, regcache_region_rkey(r4));
	T_EXPECT_EQ(remote->lkey, regcache_region_lkey(r4));

	/* The same mask again reuses it. */
	T_REQUIRE(regcache_get(c, buf + 14 * pg, pg,
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
			       &r5) == 0);
	T_EXPECT_EQ(2, vf.reg_calls);
	T_CHECK(regcache_region_handle(r5) == remote);

	/* Atomics: this device does not do them on ODP MRs. */
	T_EXPECT_EQ(-EOPNOTSUPP,
		    regcache_get(c, buf + 6 * pg, pg, IBV_ACCESS_REMOTE_ATOMIC,
				 &bad));
	T_EXPECT_EQ(-EOPNOTSUPP,
		    regcache_get(c, buf + 6 * pg, pg, IBV_ACCESS_MW_BIND, &bad));
	T_EXPECT_EQ(2, vf.reg_calls);

	/* A range beyond an sge's 4 GiB: 1 GiB pieces, 8 per advise call.
	 * PROT_NONE reserves address space without memory. */
	huge = mmap(NULL, big, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	T_REQUIRE(huge != MAP_FAILED);
	{
		struct regcache_region *rh;
		long before = vf.advise_calls;

		vf.advised_bytes = 0;
		T_REQUIRE(regcache_get(c, huge, big, IBV_ACCESS_LOCAL_WRITE,
				       &rh) == 0);
		T_EXPECT_EQ(before + 2, vf.advise_calls);
		T_EXPECT_EQ(big, vf.advised_bytes);
		T_EXPECT_EQ(2, vf.last_advise.nsge); /* 10 pieces: 8 + 2 */
		T_EXPECT_EQ(5 * pg, vf.last_advise.sge[1].length);
		regcache_put(c, rh);
	}

	/* Nothing is pinned: the byte limit does not evict (regions stay
	 * cached). Invalidation is harmless and frees no MR. */
	regcache_put(c, r1);
	regcache_put(c, r2);
	regcache_put(c, r3);
	regcache_put(c, r4);
	regcache_put(c, r5);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, st.evictions);
	T_CHECK(regcache_invalidate(c, buf, 16 * pg) >= 1);
	T_EXPECT_EQ(0, vf.dereg_calls);
	T_REQUIRE(regcache_get(c, buf, pg, IBV_ACCESS_LOCAL_WRITE, &r1) == 0);
	T_CHECK(regcache_region_handle(r1) == local);
	regcache_put(c, r1);

	regcache_destroy(c);
	T_EXPECT_EQ(2, vf.dereg_calls);
	T_EXPECT_EQ(0, vf.live);
	munmap(huge, big);
	munmap(buf, 16 * pg);
}

/* A device with atomics on ODP gives REMOTE_ATOMIC its own MR. */
static void atomics(void)
{
	struct regcache_params p = { .flags = REGCACHE_VERBS_FLAG_ODP_IMPLICIT };
	struct regcache_region *r;
	struct regcache *c;
	char *buf = t_map(pg);

	vf_init();
	vf_set_odp(true, true);
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	T_REQUIRE(regcache_get(c, buf, 8, IBV_ACCESS_REMOTE_ATOMIC, &r) == 0);
	T_EXPECT_EQ(IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_ATOMIC,
		    vf.last_reg.access);
	regcache_put(c, r);
	regcache_destroy(c);
	T_EXPECT_EQ(0, vf.live);
	munmap(buf, pg);
}

/* A provider without advise_mr: asked once, then never again; gets work. */
static void no_prefetch(void)
{
	struct regcache_params p = { .flags = REGCACHE_VERBS_FLAG_ODP_IMPLICIT };
	struct regcache_region *r;
	struct regcache *c;
	char *buf = t_map(8 * pg);

	vf_init();
	vf_set_odp(true, false);
	vf.advise_ret = EOPNOTSUPP;
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	for (int i = 0; i < 4; i++) {
		T_REQUIRE(regcache_get(c, buf + 2 * i * pg, pg, 0, &r) == 0);
		regcache_put(c, r);
	}
	T_EXPECT_EQ(1, vf.advise_calls);
	/* Other failures are advice too: the get still succeeds. */
	regcache_destroy(c);
	vf_init();
	vf_set_odp(true, false);
	vf.advise_ret = EFAULT;
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	for (int i = 0; i < 2; i++) {
		T_REQUIRE(regcache_get(c, buf + 2 * i * pg, pg, 0, &r) == 0);
		regcache_put(c, r);
	}
	T_EXPECT_EQ(2, vf.advise_calls);
	regcache_destroy(c);
	T_EXPECT_EQ(0, vf.live);
	munmap(buf, 8 * pg);
}

int main(void)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	selection();
	serving();
	atomics();
	no_prefetch();
	return t_exit_status();
}
