/*
 * Description: userfaultfd monitor, numbers (not a pass/fail property):
 * added latency of munmap and madvise(MADV_DONTNEED) of one page on
 * monitored memory (its VMA registered) against unmonitored memory, and the
 * cost of a hit (get + put) with the hit probe against
 * REGCACHE_FLAG_NO_HIT_PROBE and against getppid() (the syscall floor) in
 * the same run, as medians; monitor start and stop time.
 * Argument: a scale (1 = quick; 10 for the numbers in
 * docs/monitor-userfaultfd.md).
 */
#include <time.h>

#include "device.h"
#include "helpers.h"

#define PAGE 4096

/* munmap of the second page of a 2-page mapping, whose VMA the cache
 * registered (monitored) or not. */
static double munmap_ns(struct regcache *c, bool monitored, int reps)
{
	double *t = calloc(reps, sizeof(*t)), m;

	for (int i = 0; i < reps; i++) {
		char *p = t_map(2 * PAGE);
		struct regcache_region *r;
		double t0;

		memset(p, 1, 2 * PAGE);
		if (monitored) {
			T_REQUIRE(regcache_get(c, p, PAGE, 0, &r) == 0);
			regcache_put(c, r);
		}
		t0 = now_ns();
		munmap(p + PAGE, PAGE);
		t[i] = now_ns() - t0;
		munmap(p, PAGE);
	}
	m = median(t, reps);
	free(t);
	return m;
}

static double madvise_ns(struct regcache *c, bool monitored, int reps)
{
	double *t = calloc(reps, sizeof(*t)), m;
	char *p = t_map((size_t)(reps + 1) * PAGE);
	struct regcache_region *r;

	if (monitored) {
		T_REQUIRE(regcache_get(c, p, PAGE, 0, &r) == 0);
		regcache_put(c, r);
	}
	for (int i = 1; i <= reps; i++) {
		double t0;

		p[(size_t)i * PAGE] = 1;
		t0 = now_ns();
		madvise(p + (size_t)i * PAGE, PAGE, MADV_DONTNEED);
		t[i - 1] = now_ns() - t0;
	}
	munmap(p, (size_t)(reps + 1) * PAGE);
	m = median(t, reps);
	free(t);
	return m;
}

/* A hit's get + put; with no cache, one getppid() instead. */
static double hit_ns(struct regcache *c, char *buf, int batches, int per)
{
	double *t = calloc(batches, sizeof(*t)), m;
	struct regcache_region *r;

	if (c) {
		T_REQUIRE(regcache_get(c, buf, 65536, 0, &r) == 0);
		regcache_put(c, r);
	}
	for (int b = 0; b < batches; b++) {
		double t0 = now_ns();

		for (int i = 0; i < per; i++) {
			if (!c) {
				syscall(SYS_getppid);
				continue;
			}
			T_REQUIRE(regcache_get(c, buf, 65536, 0, &r) == 0);
			regcache_put(c, r);
		}
		t[b] = (now_ns() - t0) / per;
	}
	m = median(t, batches);
	free(t);
	return m;
}

struct hit_arg {
	struct regcache *c;
	char *buf;
	int batches;
	double ns;
};

static void *hit_thread(void *p)
{
	struct hit_arg *a = p;

	a->ns = hit_ns(a->c, a->buf, a->batches, 20000);
	return NULL;
}

/* Two threads hitting two regions of one cache at once (with no cache:
 * calling getppid): every probe's syscall takes a reference on the one
 * userfaultfd file, whose count the two CPUs then pass back and forth. */
static double hit2_ns(struct regcache *c, int batches)
{
	struct hit_arg a[2];
	pthread_t th[2];

	for (int i = 0; i < 2; i++) {
		a[i] = (struct hit_arg){ c, t_map(65536), batches, 0 };
		memset(a[i].buf, 1, 65536);
	}
	for (int i = 0; i < 2; i++)
		T_REQUIRE(pthread_create(&th[i], NULL, hit_thread, &a[i]) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return (a[0].ns + a[1].ns) / 2;
}

int main(int argc, char **argv)
{
	int scale = argc > 1 ? atoi(argv[1]) : 10;
	struct io_uring ring, ring2;
	struct regcache *c, *c2;
	struct regcache_stats st;
	char *buf = t_map(65536);
	int reps = 200 * scale;

	double t0, t_start, t_stop, hit1, hit2, ppid1, ppid2;

	t_monitor_only("userfaultfd");
	t_ring_init(&ring);
	t_ring_init(&ring2);
	/* With no cache, regcache_monitor_name() starts the backend and
	 * stops it again: that is its whole lifetime cost. */
	t0 = now_ns();
	regcache_monitor_name();
	t_start = now_ns() - t0;
	c = t_uring_cache(&ring, 0, 0, 0);
	c2 = t_uring_cache(&ring2, REGCACHE_FLAG_NO_HIT_PROBE, 0, 0);
	t_monitor_require();
	memset(buf, 1, 65536);

	printf("munmap 1 page:          unmonitored %7.0f ns, monitored %7.0f "
	       "ns (median of %d)\n", munmap_ns(c, false, reps),
	       munmap_ns(c, true, reps), reps);
	printf("madvise DONTNEED 1 page: unmonitored %7.0f ns, monitored %7.0f "
	       "ns (median of %d)\n", madvise_ns(c, false, reps),
	       madvise_ns(c, true, reps), reps);
	hit1 = hit_ns(c, buf, 11 * scale, 20000);
	ppid1 = hit_ns(NULL, NULL, 11 * scale, 20000);
	printf("hit (get + put):        probe %6.1f ns, NO_HIT_PROBE %6.1f ns, "
	       "getppid %6.1f ns (median of %d batches of %d)\n", hit1,
	       hit_ns(c2, buf, 11 * scale, 20000), ppid1, 11 * scale, 20000);
	hit2 = hit2_ns(c, 5 * scale);
	ppid2 = hit2_ns(NULL, 5 * scale);
	printf("hit, 2 threads at once: probe %6.1f ns, NO_HIT_PROBE %6.1f ns, "
	       "getppid %6.1f ns (per call, per thread)\n", hit2,
	       hit2_ns(c2, 5 * scale), ppid2);
	printf("hit / getppid: %.2f (1 thread), %.2f (2 threads); target "
	       "<= 1.5\n", hit1 / ppid1, hit2 / ppid2);
	regcache_get_stats(c, &st);
	T_CHECK(st.hits > 0);
	regcache_destroy(c2);
	t0 = now_ns();
	regcache_destroy(c);
	t_stop = now_ns() - t0;
	printf("monitor start + stop, nothing watched: %.0f us; last destroy "
	       "(stop with watched VMAs): %.0f us\n", t_start / 1e3,
	       t_stop / 1e3);
	io_uring_queue_exit(&ring);
	io_uring_queue_exit(&ring2);
	return t_exit_status();
}
