/* SPDX-License-Identifier: MIT */
/*
 * Description: what the cache saves on a real RDMA device (rxe0 in the
 * guest of tests/vm/run.sh, or a NIC). For each message size, in the same
 * run and alternated rep by rep:
 *   reg       ibv_reg_mr + ibv_dereg_mr of the buffer, the cost a
 *             middleware without a cache pays on every message;
 *   hit       regcache_get + regcache_put of the same, cached, buffer;
 *   msg/reg   one RDMA WRITE into the buffer with its own MR registered and
 *             deregistered around it;
 *   msg/hit   the same WRITE through the cached region.
 * Medians of the reps. Prints numbers and ratios; asserts only that hits
 * hit and that each write lands (no timing assertions). Under emulation
 * (TCG) absolute times are rough; the ratios are measured in one run.
 * With REGCACHE_MONITOR=none the cache passes through (every get
 * registers), which is the control: its "hit" costs what reg costs.
 *
 * Usage: verbs-rxe-bench [scale]   (iteration counts x scale, default 1)
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <regcache/verbs.h>

#include "device.h"
#include "helpers.h"
#include "verbs_device.h"

#define REPS 7
#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ)

static struct td dev;
static struct regcache *cache;
static long scale = 1;

/* ns per ibv_reg_mr + ibv_dereg_mr of [buf, buf+len), over @n calls. */
static double reg_ns(char *buf, size_t len, long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		struct ibv_mr *mr = ibv_reg_mr(dev.pd, buf, len, ACCESS);

		T_REQUIRE(mr);
		T_REQUIRE(ibv_dereg_mr(mr) == 0);
	}
	return (now_ns() - t0) / (double)n;
}

/* ns per regcache_get + regcache_put of a cached buffer, over @n. */
static double hit_ns(char *buf, size_t len, long n)
{
	struct regcache_region *r;
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		T_REQUIRE(regcache_get(cache, buf, len, IBV_ACCESS_REMOTE_WRITE,
				       &r) == 0);
		regcache_put(cache, r);
	}
	return (now_ns() - t0) / (double)n;
}

/* ns per message: RDMA WRITE of @len bytes into @buf, its registration
 * either made and dropped around it (@cached false) or from the cache. */
static double msg_ns(char *buf, size_t len, long n, bool cached)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		struct regcache_region *r = NULL;
		struct ibv_mr *mr = NULL;
		uint32_t rkey;

		if (cached) {
			T_REQUIRE(regcache_get(cache, buf, len,
					       IBV_ACCESS_REMOTE_WRITE, &r) == 0);
			rkey = regcache_region_rkey(r);
		} else {
			mr = ibv_reg_mr(dev.pd, buf, len, ACCESS);
			T_REQUIRE(mr);
			rkey = mr->rkey;
		}
		T_REQUIRE(td_rdma(&dev, IBV_WR_RDMA_WRITE, dev.src,
				  dev.src_mr->lkey, buf, rkey, len) ==
			  IBV_WC_SUCCESS);
		if (cached)
			regcache_put(cache, r);
		else
			T_REQUIRE(ibv_dereg_mr(mr) == 0);
	}
	return (now_ns() - t0) / (double)n;
}

static void size_row(size_t len)
{
	/* Fewer calls for larger sizes: a registration pins every page. */
	long n = scale * (len <= 65536 ? 200 : len <= (1 << 20) ? 40 : 8);
	/* Under pass-through (monitor none) every get registers. */
	bool caching = strcmp(regcache_monitor_name(), "none") != 0;
	long nhit = caching ? scale * 200000 : n;
	size_t wlen = len < TD_MAX_LEN ? len : TD_MAX_LEN;
	double reg[REPS], hit[REPS], mreg[REPS], mhit[REPS];
	char *buf = t_map(len);
	struct regcache_region *r;
	struct regcache_stats st0, st1;

	memset(buf, 1, len);
	T_REQUIRE(regcache_get(cache, buf, len, IBV_ACCESS_REMOTE_WRITE,
			       &r) == 0);	/* the miss: cached from now on */
	regcache_put(cache, r);
	regcache_get_stats(cache, &st0);
	for (int rep = 0; rep < REPS; rep++) {
		reg[rep] = reg_ns(buf, len, n);
		hit[rep] = hit_ns(buf, len, nhit);
		mreg[rep] = msg_ns(buf, wlen, n, false);
		mhit[rep] = msg_ns(buf, wlen, n, true);
	}
	regcache_get_stats(cache, &st1);
	if (caching)
		T_CHECK(st1.misses == st0.misses);	/* every get above hit */
	/* And the cached region is the buffer's: a write through it lands. */
	T_REQUIRE(regcache_get(cache, buf, wlen, IBV_ACCESS_REMOTE_WRITE,
			       &r) == 0);
	T_CHECK(td_write_visible(&dev, buf, regcache_region_rkey(r), wlen,
				 (unsigned)len));
	regcache_put(cache, r);
	printf("%8zu KiB  reg+dereg %10.0f ns  hit %6.1f ns  (%.0fx)   "
	       "WRITE %zu KiB: with reg %9.0f ns, cached %9.0f ns (%.2fx)\n",
	       len >> 10, median(reg, REPS), median(hit, REPS),
	       median(reg, REPS) / median(hit, REPS), wlen >> 10,
	       median(mreg, REPS), median(mhit, REPS),
	       median(mreg, REPS) / median(mhit, REPS));
	fflush(stdout);
	regcache_invalidate(cache, buf, len);
	munmap(buf, len);
}

int main(int argc, char **argv)
{
	struct regcache_params p = { 0 };
	static const size_t sizes[] = { 4096, 65536, 1 << 20, 8 << 20 };

	if (argc > 1)
		scale = atol(argv[1]) > 0 ? atol(argv[1]) : 1;
	td_open(&dev);
	T_REQUIRE(regcache_verbs_create(dev.pd, &p, &cache) == 0);
	printf("verbs-rxe-bench: device %s, monitor %s, medians of %d reps\n",
	       dev.name, regcache_monitor_name(), REPS);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		size_row(sizes[i]);
	regcache_destroy(cache);
	td_close(&dev);
	return t_exit_status();
}
