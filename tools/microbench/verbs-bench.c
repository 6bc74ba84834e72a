/* SPDX-License-Identifier: MIT */
/*
 * Description: what the verbs registrar adds to the cache, measured with
 * the link-time test double (whose "registration" is free, so only the
 * library is timed): get+put per hit through regcache_get() and through
 * regcache_verbs_sge(), pinned and implicit ODP, and the cost of an ODP miss
 * (index insert + monitor watch + prefetch call). Prints numbers; asserts
 * only that hits hit and misses miss (no timing assertions).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "device.h"
#include "helpers.h"
#include "verbs_fake.h"

static void hits(const char *name, unsigned flags, bool sge_helper)
{
	struct regcache_params p = { .flags = flags };
	const long n = T_SCALE(2000000);
	struct regcache_region *r;
	struct regcache_stats st;
	struct regcache *c;
	struct ibv_sge sge;
	char *buf = t_map(64 * 4096);
	double best = 1e30;

	vf_init();
	vf_set_odp(true, true);
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now_ns(), d;

		for (long i = 0; i < n; i++) {
			const char *a = buf + ((i & 63) << 12) + 8;
			int ret = sge_helper
				? regcache_verbs_sge(c, a, 1024,
						     IBV_ACCESS_LOCAL_WRITE,
						     &sge, &r)
				: regcache_get(c, a, 1024,
					       IBV_ACCESS_LOCAL_WRITE, &r);

			T_REQUIRE(ret == 0);
			regcache_put(c, r);
		}
		d = (now_ns() - t0) / n;
		if (d < best)
			best = d;
	}
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(64, st.misses);
	printf("hit  %-34s %6.1f ns per get+put (best of 5 x %ld)\n", name,
	       best, n);
	regcache_destroy(c);
	munmap(buf, 64 * 4096);
}

static void odp_misses(void)
{
	struct regcache_params p = { .flags = REGCACHE_VERBS_FLAG_ODP_IMPLICIT };
	const long n = T_SCALE(16000);
	size_t len = (size_t)n * 2 * 4096;
	struct regcache_region *r;
	struct regcache_stats st;
	struct regcache *c;
	char *buf;
	double t0;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	T_REQUIRE(buf != MAP_FAILED);
	vf_init();
	vf_set_odp(true, true);
	T_REQUIRE(regcache_verbs_create(&vf.pd, &p, &c) == 0);
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		T_REQUIRE(regcache_get(c, buf + i * 2 * 4096, 64,
				       IBV_ACCESS_LOCAL_WRITE, &r) == 0);
		regcache_put(c, r);
	}
	printf("miss implicit ODP, monitor %-11s %6.0f ns per get+put (%ld "
	       "distinct pages)\n", regcache_monitor_name(),
	       (now_ns() - t0) / n, n);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(n, st.misses);
	T_EXPECT_EQ(n, vf.advise_calls);
	regcache_destroy(c);
	munmap(buf, len);
}

int main(void)
{
	unsetenv("REGCACHE_VERBS_ODP");
	hits("pinned, regcache_get", REGCACHE_FLAG_EXPLICIT_INVALIDATE, false);
	hits("pinned, regcache_verbs_sge", REGCACHE_FLAG_EXPLICIT_INVALIDATE,
	     true);
	hits("implicit ODP, regcache_get", REGCACHE_VERBS_FLAG_ODP_IMPLICIT,
	     false);
	hits("implicit ODP, regcache_verbs_sge",
	     REGCACHE_VERBS_FLAG_ODP_IMPLICIT, true);
	odp_misses();
	return t_exit_status();
}
