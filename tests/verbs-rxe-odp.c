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
 * comparison). On a device with explicit ODP for RC WRITE (Soft-RoCE of
 * trixie-backports' 7.3.4; Debian 12's 6.1 has none), a get with IBV_ACCESS_ON_DEMAND is served by an ODP MR:
 * held across munmap + mmap of its buffer, an RDMA WRITE through it lands
 * in the new pages, where one through a pinned region held the same way
 * does not (the negative control). Skips (77) without an RDMA device.
 */
#include <sys/mman.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_device.h"

#define LEN 65536

static struct td dev;
static size_t odp_packet;	/* one packet: the port's active MTU */

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

/*
 * What the device itself does with a raw ODP MR, printed: a WRITE of one
 * packet (the path MTU) into it lands; on Soft-RoCE of Linux 7.3 one of
 * several packets does not (each packet's payload goes to the start of
 * its page), so explicit_odp_follows() writes one packet.
 */
static void odp_multi_packet(char *buf)
{
	struct ibv_mr *mr = ibv_reg_mr(dev.pd, buf, LEN, IBV_ACCESS_ON_DEMAND |
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	bool one, several;

	T_REQUIRE(mr != NULL);
	one = td_write_visible(&dev, buf, mr->rkey, odp_packet, 5);
	several = td_write_visible(&dev, buf, mr->rkey, LEN, 6);
	printf("%s, a raw ODP MR: a WRITE of %zu B (one packet) %s; of %d B "
	       "(%d packets) %s\n", dev.name, odp_packet,
	       one ? "lands" : "is LOST", LEN, (int)(LEN / odp_packet),
	       several ? "lands" : "is LOST (the device's own ODP bug; not "
	       "regcache's)");
	ibv_dereg_mr(mr);
}

/*
 * Hold a region of @buf got with @odp access, replace the buffer's pages
 * (munmap + mmap at the same address), RDMA-WRITE through the held rkey:
 * does the application see it? An ODP MR resolves the address at each
 * access, a pinned one writes into the pages it pinned.
 */
static bool explicit_odp_follows(struct regcache *c, char *buf, unsigned odp)
{
	struct regcache_region *r;
	bool seen;

	T_REQUIRE(regcache_get(c, buf, LEN, odp | IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_REMOTE_WRITE, &r) == 0);
	T_CHECK(td_write_visible(&dev, buf, regcache_region_rkey(r), odp_packet,
				 7));
	T_REQUIRE(munmap(buf, LEN) == 0);
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0) == buf);
	seen = td_write_visible(&dev, buf, regcache_region_rkey(r), odp_packet,
				8);
	regcache_put(c, r);
	return seen;
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
	odp_packet = (size_t)128 << dev.pattr.active_mtu;	/* IBV_MTU_256 = 1 */

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
	if ((general & IBV_ODP_SUPPORT) && (rc_caps & IBV_ODP_SUPPORT_WRITE)) {
		odp_multi_packet(buf);
		T_CHECK(explicit_odp_follows(c, buf, IBV_ACCESS_ON_DEMAND));
		T_CHECK(!explicit_odp_follows(c, buf, 0));
		printf("explicit ODP: a held ODP region follows munmap + mmap, "
		       "a held pinned one does not\n");
	} else {
		printf("explicit ODP: not tested (%s has no explicit ODP for "
		       "RC WRITE)\n", dev.name);
	}
	moves_data(c, buf);
	regcache_destroy(c);
out:
	munmap(buf, LEN);
	td_close(&dev);
	return t_exit_status();
}
