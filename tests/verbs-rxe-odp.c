/* SPDX-License-Identifier: MIT */
/*
 * Description: on-demand paging on a real device, as the device reports it
 * (ibv_query_device_ex odp_caps). With implicit ODP for RC, a cache made
 * with REGCACHE_VERBS_FLAG_ODP_IMPLICIT serves from the implicit MR and an
 * RDMA WRITE after munmap + mmap of the target lands in the new pages.
 * Without it (Soft-RoCE on Linux 6.1 reports no ODP at all), the flag and
 * REGCACHE_VERBS_ODP=implicit each give a pinned cache and a log line that
 * names the caps, and the cache still moves data; IBV_ACCESS_ON_DEMAND on a
 * device without any ODP is -EOPNOTSUPP with a log line that says so,
 * before the device is asked (the kernel's own refusal is printed for
 * comparison). Skips (77) without an RDMA device.
 */
#include <sys/mman.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_device.h"

#define LEN 65536

static struct td dev;

/* A cache asked for implicit ODP by @flags (or the environment). */
static struct regcache *create(unsigned flags, char *log, size_t len)
{
	struct regcache_params p = { .flags = flags };
	struct regcache *c;
	int saved = td_log_begin();

	T_REQUIRE(regcache_verbs_create(dev.pd, &p, &c) == 0);
	td_log_end(saved, log, len);
	return c;
}

static void moves_data(struct regcache *c, char *buf)
{
	struct regcache_region *r;

	for (int i = 0; i < 2; i++) {
		T_REQUIRE(regcache_get(c, buf, LEN, IBV_ACCESS_REMOTE_WRITE,
				       &r) == 0);
		T_CHECK(td_write_visible(&dev, buf, regcache_region_rkey(r), LEN,
					 i));
		regcache_put(c, r);
		T_REQUIRE(munmap(buf, LEN) == 0);
		T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0) == buf);
	}
}

int main(void)
{
	struct regcache_region *r;
	struct regcache *c;
	struct ibv_mr *mr;
	uint64_t general;
	uint32_t rc_caps;
	char log[4096], *buf;
	int saved, ret;

	td_open(&dev);
	general = dev.attr.odp_caps.general_caps;
	rc_caps = dev.attr.odp_caps.per_transport_caps.rc_odp_caps;
	printf("%s: general ODP caps %#llx (IBV_ODP_SUPPORT %s, "
	       "IBV_ODP_SUPPORT_IMPLICIT %s), RC ODP caps %#x\n", dev.name,
	       (unsigned long long)general,
	       general & IBV_ODP_SUPPORT ? "yes" : "no",
	       general & IBV_ODP_SUPPORT_IMPLICIT ? "yes" : "no", rc_caps);
	buf = t_map(LEN);

	c = create(REGCACHE_VERBS_FLAG_ODP_IMPLICIT, log, sizeof(log));
	t_monitor_require();
	if (general & IBV_ODP_SUPPORT_IMPLICIT) {
		T_EXPECT_EQ(1, regcache_verbs_odp(c));
		moves_data(c, buf);
		printf("implicit ODP: served, fresh after munmap + mmap\n");
		regcache_destroy(c);
		goto out;
	}
	T_EXPECT_EQ(0, regcache_verbs_odp(c));
	T_CHECK(strstr(log, "registering pinned"));
	moves_data(c, buf);
	regcache_destroy(c);

	T_REQUIRE(setenv("REGCACHE_VERBS_ODP", "implicit", 1) == 0);
	c = create(0, log, sizeof(log));
	T_EXPECT_EQ(0, regcache_verbs_odp(c));
	T_CHECK(strstr(log, "registering pinned"));
	T_REQUIRE(unsetenv("REGCACHE_VERBS_ODP") == 0);

	if (!(general & IBV_ODP_SUPPORT)) {
		saved = td_log_begin();
		ret = regcache_get(c, buf, LEN, IBV_ACCESS_ON_DEMAND |
				   IBV_ACCESS_LOCAL_WRITE, &r);
		td_log_end(saved, log, sizeof(log));
		T_EXPECT_EQ(-EOPNOTSUPP, ret);
		T_CHECK(strstr(log, "no on-demand paging"));
		errno = 0;
		mr = ibv_reg_mr(dev.pd, buf, LEN, IBV_ACCESS_ON_DEMAND |
				IBV_ACCESS_LOCAL_WRITE);
		printf("ibv_reg_mr(IBV_ACCESS_ON_DEMAND) on %s itself: %s\n",
		       dev.name, mr ? "registered" : strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
	}
	moves_data(c, buf);
	regcache_destroy(c);
out:
	munmap(buf, LEN);
	td_close(&dev);
	return t_exit_status();
}
