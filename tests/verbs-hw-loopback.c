/* SPDX-License-Identifier: MIT */
/*
 * Description: on a real RDMA device, data written by the NIC through a
 * cached registration lands where the application sees it. An RC queue
 * pair connected to itself RDMA-writes a pattern from one buffer into
 * another, both registered through regcache_verbs_sge()/regcache_get();
 * the test checks the bytes, reuses the registrations (hits where the
 * monitor can cache), then munmaps and mmaps the target at the same address
 * and checks that the next write still reaches the application (no stale
 * MR). Repeated with implicit ODP where the device has it. Skips (77) with
 * "No RDMA device found" where ibv_get_device_list() finds none, and with
 * "No active RDMA port" where no port is up. Set REGCACHE_TEST_IBDEV to
 * choose the device, REGCACHE_TEST_GID_INDEX the RoCE GID.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_device.h"

#define LEN (64 * 1024)
#define ROUNDS 16

static size_t pg;

/* RDMA-write LEN pattern bytes from @src to @dst, both registered through
 * the cache, and return whether the application sees them at @dst. */
static bool write_visible(struct td *d, struct regcache *c,
			  unsigned char *src, unsigned char *dst, unsigned seed)
{
	struct regcache_region *rs, *rd;
	enum ibv_wc_status st;
	struct ibv_sge sge;

	for (size_t i = 0; i < LEN; i++)
		src[i] = td_byte(seed, i);
	memset(dst, 0, LEN);
	T_REQUIRE(regcache_verbs_sge(c, src, LEN, 0, &sge, &rs) == 0);
	T_REQUIRE(regcache_get(c, dst, LEN, IBV_ACCESS_REMOTE_WRITE, &rd) == 0);
	st = td_rdma(d, IBV_WR_RDMA_WRITE, src, sge.lkey, dst,
		     regcache_region_rkey(rd), LEN);
	if (st != IBV_WC_SUCCESS) {
		fprintf(stderr, "RDMA write failed: %s\n",
			ibv_wc_status_str(st));
		exit(T_EXIT_FAIL);
	}
	regcache_put(c, rs);
	regcache_put(c, rd);
	for (size_t i = 0; i < LEN; i++)
		if (dst[i] != td_byte(seed, i))
			return false;
	return true;
}

static void run(struct td *d, unsigned flags, const char *what)
{
	struct regcache_params p = { .flags = flags };
	struct regcache_stats st;
	struct regcache *c;
	unsigned char *src = t_map(LEN + pg), *dst = t_map(LEN);
	int stale = 0;

	T_REQUIRE(regcache_verbs_create(d->pd, &p, &c) == 0);
	for (unsigned i = 0; i < ROUNDS; i++) {
		if (!write_visible(d, c, src, dst, 2 * i))
			stale++;
		/* Reuse: the same buffers again. */
		if (!write_visible(d, c, src, dst, 2 * i + 1))
			stale++;
		/* Same address, new pages. */
		T_REQUIRE(munmap(dst, LEN) == 0);
		T_REQUIRE(mmap(dst, LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0) == dst);
	}
	T_EXPECT_EQ(0, stale);
	regcache_get_stats(c, &st);
	printf("%s (monitor %s, odp %d): %d writes, %d stale, %llu hits, "
	       "%llu registrations, %llu uncached\n", what,
	       regcache_monitor_name(), regcache_verbs_odp(c), 2 * ROUNDS,
	       stale, (unsigned long long)st.hits,
	       (unsigned long long)st.registrations,
	       (unsigned long long)st.uncached);
	regcache_destroy(c);
	munmap(src, LEN + pg);
	munmap(dst, LEN);
}

int main(void)
{
	struct td d;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	td_open(&d);
	run(&d, REGCACHE_VERBS_FLAG_ODP_OFF, "pinned");
	if (d.attr.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT)
		run(&d, REGCACHE_VERBS_FLAG_ODP_IMPLICIT, "implicit ODP");
	else
		printf("implicit ODP: not supported by %s, not run\n", d.name);
	td_close(&d);
	return t_exit_status();
}
