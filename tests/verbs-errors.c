/* SPDX-License-Identifier: MIT */
/*
 * Description: error paths of the verbs registrar. ENOMEM from ibv_reg_mr
 * (RLIMIT_MEMLOCK) becomes -ENOMEM, so the cache evicts idle regions and
 * retries; with every region held the caller gets -ENOMEM. EFAULT passes
 * through once, without eviction. A NULL without errno is -EIO. A failing
 * ibv_dereg_mr is survived. Bad arguments are -EINVAL. A forked child never
 * calls the device with the parent's pd. Runs against the link-time test
 * double (verbs_fake.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_fake.h"

static size_t pg;

static struct regcache *cache(void)
{
	struct regcache_params p = {
		.flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
	};
	struct regcache *c;

	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	return c;
}

/* Idle regions fill the budget; the next miss evicts and retries. */
static void enomem_evicts(char *buf)
{
	struct regcache_region *r[5];
	struct regcache_stats st;
	struct regcache *c;
	int ret;

	vf_init();
	vf.budget = 4 * pg;
	c = cache();
	for (int i = 0; i < 4; i++) {
		/* Every other page, so that the regions do not merge. */
		T_REQUIRE(regcache_get(c, buf + 2 * i * pg, pg,
				       IBV_ACCESS_LOCAL_WRITE, &r[i]) == 0);
		regcache_put(c, r[i]);
	}
	T_EXPECT_EQ(4 * pg, vf.live_bytes);
	ret = regcache_get(c, buf + 8 * pg, pg, IBV_ACCESS_LOCAL_WRITE, &r[4]);
	T_EXPECT_EQ(0, ret);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.reg_failures);
	T_CHECK(st.evictions >= 1);
	T_CHECK(vf.dereg_calls >= 1);
	T_CHECK(vf.live_bytes <= vf.budget);
	T_EXPECT_EQ(6, vf.reg_calls); /* 4, the failure, the retry */
	if (!ret)
		regcache_put(c, r[4]);
	regcache_destroy(c);
	T_EXPECT_EQ(0, vf.live);
}

/* Nothing idle to evict: -ENOMEM reaches the caller. */
static void enomem_all_held(char *buf)
{
	struct regcache_region *r[4], *extra = NULL;
	struct regcache *c;

	vf_init();
	vf.budget = 4 * pg;
	c = cache();
	for (int i = 0; i < 4; i++)
		T_REQUIRE(regcache_get(c, buf + 2 * i * pg, pg,
				       IBV_ACCESS_LOCAL_WRITE, &r[i]) == 0);
	T_EXPECT_EQ(-ENOMEM, regcache_get(c, buf + 8 * pg, pg,
					  IBV_ACCESS_LOCAL_WRITE, &extra));
	T_CHECK(extra == NULL);
	T_EXPECT_EQ(0, vf.dereg_calls); /* nobody's region was taken */
	for (int i = 0; i < 4; i++)
		regcache_put(c, r[i]);
	regcache_destroy(c);
	T_EXPECT_EQ(0, vf.live);
}

/* EFAULT is not a resource problem: one attempt, no eviction. */
static void efault_passes(char *buf)
{
	struct regcache_region *r;
	struct regcache_stats st;
	struct regcache *c;

	vf_init();
	c = cache();
	T_REQUIRE(regcache_get(c, buf, pg, 0, &r) == 0);
	regcache_put(c, r);
	vf.fail_errno = EFAULT;
	vf.fail_count = 1;
	T_EXPECT_EQ(-EFAULT, regcache_get(c, buf + 4 * pg, pg,
					  IBV_ACCESS_LOCAL_WRITE, &r));
	T_EXPECT_EQ(2, vf.reg_calls);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, st.evictions);
	T_EXPECT_EQ(1, st.reg_failures);
	T_EXPECT_EQ(1, vf.live);	/* the idle region survived */

	/* A library that returns NULL without errno: -EIO, not 0. */
	vf.fail_errno = 0;
	vf.fail_count = 1;
	T_EXPECT_EQ(-EIO, regcache_get(c, buf + 6 * pg, pg, 0, &r));

	/* EAGAIN is a resource error too: evict and retry. */
	vf.fail_errno = EAGAIN;
	vf.fail_count = 1;
	T_EXPECT_EQ(0, regcache_get(c, buf + 6 * pg, pg, 0, &r));
	regcache_put(c, r);
	regcache_get_stats(c, &st);
	T_CHECK(st.evictions >= 1);
	regcache_destroy(c);
	T_EXPECT_EQ(0, vf.live);
}

/* ibv_dereg_mr failing is logged and survived, never retried on a dead MR. */
static void dereg_fails(char *buf)
{
	struct regcache_region *r;
	struct regcache *c;

	vf_init();
	c = cache();
	T_REQUIRE(regcache_get(c, buf, pg, 0, &r) == 0);
	regcache_put(c, r);
	vf.dereg_ret = EBUSY;
	T_EXPECT_EQ(1, regcache_invalidate(c, buf, pg));
	T_EXPECT_EQ(1, vf.dereg_calls);
	vf.dereg_ret = 0;
	regcache_destroy(c);
	T_EXPECT_EQ(1, vf.dereg_calls);
	T_EXPECT_EQ(1, vf.live); /* the double kept it: it failed */
}

static void bad_args(void)
{
	struct regcache_params both = {
		.flags = REGCACHE_VERBS_FLAG_ODP_IMPLICIT |
			 REGCACHE_VERBS_FLAG_ODP_OFF,
	};
	struct regcache_params unknown = { .flags = 1u << 30 };
	struct regcache *c = (void *)1;

	vf_init();
	T_EXPECT_EQ(-EINVAL, regcache_verbs_create(NULL, NULL, &c));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_create(&vf.pd, NULL, NULL));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_create(&vf.pd, &both, &c));
	T_EXPECT_EQ(-EINVAL, regcache_verbs_create(&vf.pd, &unknown, &c));
	T_CHECK(c == (void *)1);
	T_EXPECT_EQ(0, vf.reg_calls);
	/* params NULL is allowed. */
	T_REQUIRE(regcache_verbs_create(&vf.pd, NULL, &c) == 0);
	regcache_destroy(c);
}

/* A child shares the parent's uverbs file: it must neither register in
 * nor deregister from the parent's pd. */
static void fork_child(char *buf)
{
	struct regcache_region *r, *held;
	struct regcache *c;
	pid_t pid;
	int status;

	vf_init();
	c = cache();
	T_REQUIRE(regcache_get(c, buf, pg, 0, &held) == 0);
	T_REQUIRE(regcache_get(c, buf + 2 * pg, pg, 0, &r) == 0);
	regcache_put(c, r);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		int ret = regcache_get(c, buf + 4 * pg, pg, 0, &r);

		T_EXPECT_EQ(-ECHILD, ret);
		regcache_put(c, held);
		regcache_destroy(c);
		T_EXPECT_EQ(0, vf.dereg_calls);
		T_EXPECT_EQ(2, vf.reg_calls); /* the parent's two */
		_exit(t_failures ? 1 : 0);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	regcache_put(c, held);
	regcache_destroy(c);
	T_EXPECT_EQ(0, vf.live);
}

int main(void)
{
	char *buf;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	buf = t_map(16 * pg);
	enomem_evicts(buf);
	enomem_all_held(buf);
	efault_passes(buf);
	dereg_fails(buf);
	bad_args();
	fork_child(buf);
	munmap(buf, 16 * pg);
	return t_exit_status();
}
