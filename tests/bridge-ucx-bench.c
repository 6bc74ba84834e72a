/* SPDX-License-Identifier: MIT */
/*
 * Description: what the UCX bridge costs, measured, not a pass/fail property
 * (docs/bridges.md). Argument:
 *   hit     get+put of a cached region in UCX 1.13's real ucs_rcache, through
 *           the bridge's interposed ucs_rcache_get and, in the same run and
 *           on the same cache, through libucs's own (UCX alone): medians of
 *           rounds, and their ratio
 *   window  the forwarding thread (REGCACHE_UCX_THREAD=1, as UCX >= 1.14
 *           gets): time from a raw munmap's return until the bridge has
 *           forwarded it to UCX, i.e. how long a lookup in another thread
 *           could still hit the old registration; and what the thread
 *           costs while nothing changes (CPU time of the idle process)
 * Run with the bridge preloaded (CTest does, through regcache-run).
 */
#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bridge_ucx_rcache.h"

static struct t_registrar treg;
static ucs_rcache_t *rcache;

typedef rc_ucx_rcache_get_fn get_fn;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[(int)(p * (n - 1))];
}

/* ns per get+put of a cached region through @get. */
static double hits(get_fn *get, char *buf, size_t len, long n)
{
	double t0 = now();

	for (long i = 0; i < n; i++) {
		ucs_rcache_region_t *r;

		if (RC_UCX_CALL_GET(get, rcache, buf, len, 4096, PROT_READ | PROT_WRITE,
				    NULL, &r) != UCS_OK)
			exit(T_EXIT_FAIL);
		ucs_rcache_region_put(rcache, r);
	}
	return (now() - t0) / n;
}

#define ROUNDS 11

static int bench_hit(void)
{
	void *libucs = dlopen("libucs.so.0", RTLD_NOLOAD | RTLD_LAZY);
	get_fn *alone = libucs ? (get_fn *)dlsym(libucs, "ucs_rcache_get") : NULL;
	double with[ROUNDS], without[ROUNDS], ratio[ROUNDS];
	long n = T_SCALE(200000);
	char *buf = t_map(1 << 20);

	T_REQUIRE(alone && alone != ucs_rcache_get);
	memset(buf, 1, 1 << 20);
	hits(ucs_rcache_get, buf, 1 << 20, 1000);	/* cache it, warm up */
	for (int r = 0; r < ROUNDS; r++) {
		with[r] = hits(ucs_rcache_get, buf, 1 << 20, n);
		without[r] = hits(alone, buf, 1 << 20, n);
		ratio[r] = with[r] / without[r];
	}
	printf("UCX %s ucs_rcache hit (get+put, 1 MiB region, 1 thread), "
	       "median of %d rounds of %ld:\n"
	       "  UCX alone          %6.1f ns\n"
	       "  through the bridge %6.1f ns (monitor %s)\n"
	       "  ratio %.2f (median of per-round ratios)\n",
	       "1.13", ROUNDS, n, pct(without, ROUNDS, 0.5),
	       pct(with, ROUNDS, 0.5), regcache_monitor_name(),
	       pct(ratio, ROUNDS, 0.5));
	return T_EXIT_PASS;
}

/* CPU the process uses in 2 s of doing nothing: the forwarding thread. */
static void idle_cost(void)
{
	struct timespec c0, c1, ts = { 2, 0 };
	double cpu;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	nanosleep(&ts, NULL);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	cpu = (c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) / 1e6;
	printf("idle: %.1f ms of CPU in 2 s (%.2f%% of one core)\n", cpu,
	       cpu / 20);
}

static int bench_window(void)
{
	long (*forwarded)(void) =
		(long (*)(void))dlsym(RTLD_DEFAULT, "regcache_ucx_bridge_forwarded");
	int n = T_SCALE(2000), got = 0;
	double *w = calloc((size_t)n, sizeof(*w));
	size_t len = 16 * 4096;

	T_REQUIRE(w && forwarded && forwarded() >= 0);
	for (int i = 0; i < n; i++) {
		/* 200 us: the thread forwards the map's own records first. */
		long before = b_ucx_raw_unmap(rcache, len, forwarded, 200);
		double t0 = now(), t1;

		while (forwarded() == before && now() - t0 < 1e8)
			;
		t1 = now();
		if (forwarded() != before)
			w[got++] = (t1 - t0) / 1000;
	}
	T_REQUIRE(got > n / 2);
	idle_cost();
	printf("forwarding thread window (raw munmap returned -> forwarded to "
	       "UCX), %d of %d munmaps, %s%s us, monitor %s:\n"
	       "  median %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n",
	       got, n, getenv("REGCACHE_UCX_POLL_US") ? "polling every " :
			"sleeping, polling after a change for ",
	       getenv("REGCACHE_UCX_POLL_US") ? getenv("REGCACHE_UCX_POLL_US") :
	       getenv("REGCACHE_UCX_LINGER_US") ? getenv("REGCACHE_UCX_LINGER_US") :
			"2000",
	       regcache_monitor_name(), pct(w, got, 0.5), pct(w, got, 0.9),
	       pct(w, got, 0.99), pct(w, got, 1.0));
	free(w);
	return T_EXIT_PASS;
}

int main(int argc, char **argv)
{
	struct regcache *c;
	int ret;

	t_registrar_init(&treg, 4096);
	c = t_registrar_cache(&treg, 0, 0, 0);
	t_monitor_require();
	rcache = b_ucx_rcache_create(&treg, "bridge-bench");
	T_REQUIRE(rcache);
	ret = argc > 1 && !strcmp(argv[1], "window") ? bench_window() : bench_hit();
	ucs_rcache_destroy(rcache);
	regcache_destroy(c);
	t_registrar_fini(&treg);
	return ret;
}
