/* SPDX-License-Identifier: MIT */
/*
 * Description: RDMA WRITE and READ into and out of cached regions on a real
 * device, over an RC queue pair connected to itself. A source registered
 * through regcache_verbs_sge() (access 0) is RDMA-written into a target
 * got with REMOTE_WRITE; the target is then RDMA-read (asked again with
 * REMOTE_READ: a new region with the union of both) into a third buffer
 * got with LOCAL_WRITE; each transfer is checked byte for byte. The second
 * round of the same buffers hits every get and registers nothing; a
 * transfer into an unaligned sub-range of a cached region uses that
 * region's rkey at the buffer's own address (iova == address). Sizes 1
 * byte, 5000 bytes at an odd offset, 256 KiB. Skips (77) without an RDMA
 * device.
 */
#include <sys/mman.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_device.h"

#define LEN TD_MAX_LEN

static struct td dev;
static struct regcache *cache;

static void fill(unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = td_byte(seed, i);
}

static bool same(const unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != td_byte(seed, i))
			return false;
	return true;
}

/* a -> b by RDMA WRITE, b -> c by RDMA READ, all through the cache. */
static void round_trip(unsigned char *a, unsigned char *b, unsigned char *c,
		       size_t len, unsigned seed)
{
	struct regcache_region *ra, *rb, *rb2, *rc;
	struct ibv_sge sa, sc;

	fill(a, len, seed);
	memset(b, 0, len);
	memset(c, 0, len);
	T_REQUIRE(regcache_verbs_sge(cache, a, len, 0, &sa, &ra) == 0);
	T_REQUIRE(regcache_get(cache, b, len, IBV_ACCESS_REMOTE_WRITE, &rb) == 0);
	T_EXPECT_EQ(IBV_WC_SUCCESS,
		    td_rdma(&dev, IBV_WR_RDMA_WRITE, a, sa.lkey, b,
			    regcache_region_rkey(rb), len));
	T_CHECK(same(b, len, seed));

	T_REQUIRE(regcache_get(cache, b, len, IBV_ACCESS_REMOTE_READ, &rb2) == 0);
	T_REQUIRE(regcache_verbs_sge(cache, c, len, IBV_ACCESS_LOCAL_WRITE, &sc,
				     &rc) == 0);
	T_EXPECT_EQ(IBV_WC_SUCCESS,
		    td_rdma(&dev, IBV_WR_RDMA_READ, c, sc.lkey, b,
			    regcache_region_rkey(rb2), len));
	T_CHECK(same(c, len, seed));
	regcache_put(cache, ra);
	regcache_put(cache, rb);
	regcache_put(cache, rb2);
	regcache_put(cache, rc);
}

int main(void)
{
	const size_t sizes[][2] = { { 0, 1 }, { 777, 5000 }, { 0, LEN } };
	struct regcache_params p = { 0 };
	struct regcache_stats st0, st1;
	struct regcache_region *whole, *sub;
	unsigned char *a, *b, *c;

	td_open(&dev);
	T_REQUIRE(regcache_verbs_create(dev.pd, &p, &cache) == 0);
	t_monitor_require();
	a = t_map(LEN);
	b = t_map(LEN);
	c = t_map(LEN);

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t off = sizes[i][0], len = sizes[i][1];

		round_trip(a + off, b + off, c + off, len, 10 + i);
		regcache_get_stats(cache, &st0);
		round_trip(a + off, b + off, c + off, len, 20 + i);
		regcache_get_stats(cache, &st1);
		printf("%zu bytes at offset %zu: write and read checked, "
		       "again: %llu hits, %llu registrations\n", len, off,
		       (unsigned long long)(st1.hits - st0.hits),
		       (unsigned long long)(st1.registrations -
					    st0.registrations));
		if (!t_monitor_is("none")) {
			T_EXPECT_EQ(st0.registrations, st1.registrations);
			T_EXPECT_EQ(st0.hits + 4, st1.hits);
		}
	}

	/* A sub-range of a cached region: the region's rkey at the
	 * buffer's own address. */
	T_REQUIRE(regcache_get(cache, b, LEN, IBV_ACCESS_REMOTE_WRITE, &whole) == 0);
	T_REQUIRE(regcache_get(cache, b + 4096 + 100, 1000,
			       IBV_ACCESS_REMOTE_WRITE, &sub) == 0);
	if (!t_monitor_is("none"))
		T_CHECK(sub == whole);
	T_CHECK(td_write_visible(&dev, b + 4096 + 100,
				 regcache_region_rkey(sub), 1000, 30));
	regcache_put(cache, sub);
	regcache_put(cache, whole);

	regcache_get_stats(cache, &st1);
	printf("monitor %s: %llu hits, %llu misses, %llu registrations, "
	       "%llu uncached\n", regcache_monitor_name(),
	       (unsigned long long)st1.hits, (unsigned long long)st1.misses,
	       (unsigned long long)st1.registrations,
	       (unsigned long long)st1.uncached);
	regcache_destroy(cache);
	munmap(a, LEN);
	munmap(b, LEN);
	munmap(c, LEN);
	td_close(&dev);
	return t_exit_status();
}
