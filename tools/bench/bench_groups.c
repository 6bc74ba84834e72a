/* SPDX-License-Identifier: MIT */
/*
 * regcache-bench: what one child measures (see bench.c for the groups).
 * Every loop times get+put pairs through one interface over regcache and
 * UCX's ucs_rcache, on a null device or on io_uring fixed buffers.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <regcache.h>

#include "bench.h"
#include "device.h"
#include "rcache_ucx.h"

static long page;

/* ------------------------------------------------------------------------
 * Figures: what a child reports, one struct per figure
 * ---------------------------------------------------------------------- */

static int out_fd = -1;

static void emit(const char *key, const char *who, double value,
		 const char *unit)
{
	struct fig f = { .value = value };

	snprintf(f.key, sizeof(f.key), "%s", key);
	snprintf(f.who, sizeof(f.who), "%s", who);
	snprintf(f.unit, sizeof(f.unit), "%s", unit);
	if (write(out_fd, &f, sizeof(f)) != sizeof(f))
		_exit(3);
}

/* A child cannot measure what it was asked to: say why and give up. */
static void die(const char *what, int err)
{
	fprintf(stderr, "regcache-bench: %s: %s\n", what, strerror(err));
	_exit(2);
}

static long scaled(long n)
{
	long v = (long)(n * bench_opt.scale);

	return v > 0 ? v : 1;
}

static void pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % sysconf(_SC_NPROCESSORS_ONLN), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *map_area(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		_exit(2);
	}
	return p;
}

/* ------------------------------------------------------------------------
 * One interface over the caches under test
 * ---------------------------------------------------------------------- */

struct bcache {
	bool ucx;
	struct dev *dev;
	size_t max_regions;
	struct regcache *rc;
	struct ucx_cache *uc;
};

static struct dev null_dev, ring_dev;
static bool have_ring_dev;

static inline int bget(struct bcache *c, void *addr, size_t len, void **r)
{
	void *handle;

	if (c->ucx)
		return ucx_cache_get(c->uc, addr, len, r, &handle);
	return regcache_get(c->rc, addr, len, 0, (struct regcache_region **)r);
}

static inline void bput(struct bcache *c, void *r)
{
	if (c->ucx)
		ucx_cache_put(c->uc, r);
	else
		regcache_put(c->rc, r);
}

/* @flags: REGCACHE_FLAG_*; for UCX the hooks are always installed, as in
 * UCX's transports. */
static void bcache_create(struct bcache *c, bool ucx, struct dev *d,
			  size_t max_regions, unsigned flags)
{
	struct regcache_params p = {
		.ops = &dev_regcache_ops,
		.ctx = d,
		.max_regions = max_regions,
		.max_bytes = (size_t)1 << 46,
		.flags = flags,
	};
	int ret;

	memset(c, 0, sizeof(*c));
	c->ucx = ucx;
	c->dev = d;
	c->max_regions = max_regions;
	ret = ucx ? ucx_cache_create(d, max_regions, true, &c->uc)
		  : regcache_create(&p, &c->rc);
	if (ret) {
		fprintf(stderr, "creating the %s cache failed: %s\n",
			ucx ? "UCX" : "regcache", strerror(-ret));
		_exit(2);
	}
}

static void bcache_destroy(struct bcache *c)
{
	if (c->ucx)
		ucx_cache_destroy(c->uc);
	else
		regcache_destroy(c->rc);
}

/* Deregister every idle region. UCX has no flush: destroy and recreate. */
static void bcache_flush(struct bcache *c)
{
	if (c->ucx) {
		ucx_cache_destroy(c->uc);
		if (ucx_cache_create(c->dev, c->max_regions, true, &c->uc))
			die("recreating the UCX cache", EIO);
	} else {
		regcache_flush(c->rc);
	}
}

static void must_get(struct bcache *c, void *addr, size_t len, void **r)
{
	int ret = bget(c, addr, len, r);

	if (ret) {
		fprintf(stderr, "get %p+%zu failed: %s\n", addr, len,
			strerror(-ret));
		_exit(2);
	}
}

/* ------------------------------------------------------------------------
 * Hit cost
 * ---------------------------------------------------------------------- */

/* ns per get+put over @n gets on @nbuf one-page buffers @stride pages
 * apart from @base (stride >= 2: no two regions merge), visited in turn,
 * or when @scattered in a scattered order (i * 7919 % nbuf: 7919 is
 * prime, so every buffer once per pass), as a middleware's buffers come
 * back to it. Always inlined: each caller's loop is compiled for its
 * order, with no test of @scattered inside what it times. */
static inline __attribute__((always_inline)) double
hit_loop_order(struct bcache *c, char *base, int nbuf, long stride, long n,
	       bool scattered)
{
	size_t step = (size_t)stride * page;
	double t0;
	void *r;
	int i = 0;

	t0 = now_ns();
	for (long k = 0; k < n; k++) {
		size_t at = scattered ? (size_t)(i * 7919L % nbuf) : (size_t)i;
		int ret = bget(c, base + at * step, page, &r);

		if (__builtin_expect(ret, 0))
			die("get in a hit loop", -ret);
		bput(c, r);
		if (++i == nbuf)
			i = 0;
	}
	return (now_ns() - t0) / n;
}

static double hit_loop(struct bcache *c, char *base, int nbuf, long stride,
		       long n)
{
	return hit_loop_order(c, base, nbuf, stride, n, false);
}

/* ns per getppid() over @n calls: the cheapest syscall. */
static double getppid_loop(long n)
{
	double t0 = now_ns();

	for (long k = 0; k < n; k++)
		syscall(SYS_getppid);
	return (now_ns() - t0) / n;
}

static void warm(struct bcache *c, char *base, int nbuf, long stride)
{
	void *r;

	for (int i = 0; i < nbuf; i++) {
		must_get(c, base + (size_t)i * stride * page, page, &r);
		bput(c, r);
	}
}

#define NBUF 1000

struct worker {
	pthread_t tid;
	int cpu;
	struct bcache *c;
	char *own;		/* this thread's 1000 buffers */
	char *priv;		/* 1000 more, in a cache of its own (control) */
	char *shared;		/* the buffer both threads hit */
	char *creators;		/* the main thread's 1000 buffers */
	bool other;		/* this worker also times hits on them */
	pthread_barrier_t *all, *pair;
	long n;
	double same[MAX_REPS], distinct[MAX_REPS], separate[MAX_REPS],
		other_ns[MAX_REPS];
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct bcache priv;

	pin_cpu(w->cpu);
	/* The thread that registers a region is its owner (regcache counts
	 * its references without atomics), as a middleware thread would. */
	warm(w->c, w->own, NBUF, 2);
	bcache_create(&priv, w->c->ucx, &null_dev, 1 << 16,
		      REGCACHE_FLAG_EXPLICIT_INVALIDATE);
	warm(&priv, w->priv, NBUF, 2);
	hit_loop(w->c, w->own, NBUF, 2, w->n / 4);
	hit_loop(&priv, w->priv, NBUF, 2, w->n / 4);
	/* Warm-up done: the main thread may time its 1-thread loops alone. */
	pthread_barrier_wait(w->all);
	for (int rep = 0; rep < bench_opt.reps; rep++) {
		pthread_barrier_wait(w->all);
		pthread_barrier_wait(w->pair);
		w->same[rep] = hit_loop(w->c, w->shared, 1, 2, w->n);
		pthread_barrier_wait(w->pair);
		w->distinct[rep] = hit_loop(w->c, w->own, NBUF, 2, w->n);
		pthread_barrier_wait(w->pair);
		/* Control: the same work with nothing shared between the two
		 * threads, which shows what this machine itself loses when
		 * both CPUs run (shared caches, SMT, other load). */
		w->separate[rep] = hit_loop(&priv, w->priv, NBUF, 2, w->n);
		pthread_barrier_wait(w->all);
		/* Alone: hits on regions another thread created, as a
		 * progress thread or a thread pool makes them. */
		if (w->other)
			w->other_ns[rep] = hit_loop(w->c, w->creators, NBUF, 2,
						    2 * w->n);
		pthread_barrier_wait(w->all);
	}
	bcache_destroy(&priv);
	return NULL;
}

/* 1- and 2-thread hit costs, interleaved rep by rep so that both see the
 * same background load. */
static void group_hits(bool ucx, const char *who)
{
	double same[MAX_REPS], distinct[MAX_REPS], same2[MAX_REPS],
		distinct2[MAX_REPS], sep2[MAX_REPS];
	struct worker w[2];
	pthread_barrier_t all, pair;
	struct bcache c;
	long n = scaled(2000000);
	char *area = map_area((size_t)5 * NBUF * 2 * page);

	pin_cpu(0);
	bcache_create(&c, ucx, &null_dev, 1 << 16,
		      REGCACHE_FLAG_EXPLICIT_INVALIDATE);
	warm(&c, area, NBUF, 2);
	/* Untimed first pass: code, TLB and caches warm, lazy binding done. */
	hit_loop(&c, area, NBUF, 2, n / 4);
	pthread_barrier_init(&all, NULL, 3);
	pthread_barrier_init(&pair, NULL, 2);
	for (int t = 0; t < 2; t++) {
		w[t] = (struct worker){
			.cpu = t, .c = &c, .all = &all, .pair = &pair,
			.n = n / 2, .shared = area, .creators = area,
			.other = t == 1,
			.own = area + (size_t)(1 + t) * NBUF * 2 * page,
			.priv = area + (size_t)(3 + t) * NBUF * 2 * page,
		};
		pthread_create(&w[t].tid, NULL, worker_fn, &w[t]);
	}
	pthread_barrier_wait(&all);	/* workers warmed up */
	for (int rep = 0; rep < bench_opt.reps; rep++) {
		same[rep] = hit_loop(&c, area, 1, 2, n);
		distinct[rep] = hit_loop(&c, area, NBUF, 2, n);
		pthread_barrier_wait(&all);	/* workers run */
		pthread_barrier_wait(&all);	/* workers done */
		pthread_barrier_wait(&all);	/* other-thread hits done */
	}
	for (int t = 0; t < 2; t++)
		pthread_join(w[t].tid, NULL);
	for (int rep = 0; rep < bench_opt.reps; rep++) {
		same2[rep] = (w[0].same[rep] + w[1].same[rep]) / 2;
		distinct2[rep] = (w[0].distinct[rep] + w[1].distinct[rep]) / 2;
		sep2[rep] = (w[0].separate[rep] + w[1].separate[rep]) / 2;
	}
	emit("hit_1t_same", who, median(same, bench_opt.reps), "ns");
	emit("hit_1t_1000", who, median(distinct, bench_opt.reps), "ns");
	emit("hit_2t_same", who, median(same2, bench_opt.reps), "ns");
	emit("hit_2t_1000", who, median(distinct2, bench_opt.reps), "ns");
	emit("hit_2t_separate", who, median(sep2, bench_opt.reps), "ns");
	emit("hit_1t_other", who, median(w[1].other_ns, bench_opt.reps), "ns");
	bcache_destroy(&c);
}

/* ------------------------------------------------------------------------
 * Scale: a hot set among 1000 or 1000000 cached regions; memory per region
 * ---------------------------------------------------------------------- */

static void group_scale(bool ucx, const char *who)
{
	long big = scaled(1000000), n = scaled(2000000);
	long stride = 2 * (big / NBUF);	/* hot buffers spread over the set */
	double small_ns[MAX_REPS], big_ns[MAX_REPS], t0, fill_ns;
	char *area = map_area((size_t)big * 2 * page);
	struct bcache c;
	long rss0, rss1;

	pin_cpu(0);
	/* Big first, so that the RSS delta is the cache's alone. */
	rss0 = rss_bytes();
	bcache_create(&c, ucx, &null_dev, (size_t)big + NBUF,
		      REGCACHE_FLAG_EXPLICIT_INVALIDATE);
	t0 = now_ns();
	warm(&c, area, (int)big, 2);
	fill_ns = (now_ns() - t0) / big;
	rss1 = rss_bytes();
	emit("mem_per_region", who, (double)(rss1 - rss0) / big, "B");
	emit("miss_fill_1m", who, fill_ns, "ns");
	hit_loop(&c, area, NBUF, stride, n / 4);
	for (int rep = 0; rep < bench_opt.reps; rep++)
		big_ns[rep] = hit_loop(&c, area, NBUF, stride, n);
	bcache_destroy(&c);

	bcache_create(&c, ucx, &null_dev, (size_t)big + NBUF,
		      REGCACHE_FLAG_EXPLICIT_INVALIDATE);
	warm(&c, area, NBUF, stride);
	hit_loop(&c, area, NBUF, stride, n / 4);
	for (int rep = 0; rep < bench_opt.reps; rep++)
		small_ns[rep] = hit_loop(&c, area, NBUF, stride, n);
	bcache_destroy(&c);
	emit("hit_hot_of_1000", who, median(small_ns, bench_opt.reps), "ns");
	emit("hit_hot_of_1m", who, median(big_ns, bench_opt.reps), "ns");
}

/* ------------------------------------------------------------------------
 * Miss overhead above the registrar's own cost
 * ---------------------------------------------------------------------- */

/* ns per miss: @nbuf fresh one-page buffers, get+put each, minus the
 * registrar alone registering the same buffers. */
static double miss_overhead(struct bcache *c, struct dev *d, int nbuf,
			    double *reg_ns)
{
	double cache_ns[MAX_REPS], direct_ns[MAX_REPS];
	char *area = map_area((size_t)nbuf * 2 * page);
	void *r, **h = calloc(nbuf, sizeof(*h));

	/* Populated pages: the registrar pins, it does not fault in. */
	for (int i = 0; i < nbuf; i++)
		area[(size_t)i * 2 * page] = 1;
	for (int rep = 0; rep < bench_opt.reps; rep++) {
		double t0;

		/* Warm-up pass: the first registration of fresh pages costs
		 * more than later ones, whoever makes it. */
		for (int i = 0; i < nbuf; i++) {
			must_get(c, area + (size_t)i * 2 * page, page, &r);
			bput(c, r);
		}
		bcache_flush(c);

		t0 = now_ns();
		for (int i = 0; i < nbuf; i++) {
			int ret = dev_reg(d, area + (size_t)i * 2 * page, page,
					  &h[i]);

			if (ret) {
				/* Typically RLIMIT_MEMLOCK: no figure. */
				fprintf(stderr, "regcache-bench: registering %d "
					"pages failed at %d: %s; no miss figure "
					"for this device\n", nbuf, i,
					strerror(-ret));
				while (i--)
					dev_dereg(d, h[i]);
				munmap(area, (size_t)nbuf * 2 * page);
				free(h);
				return NAN;
			}
		}
		direct_ns[rep] = (now_ns() - t0) / nbuf;
		for (int i = 0; i < nbuf; i++)
			dev_dereg(d, h[i]);

		/* Deregistration is left out on both sides: the caches defer
		 * it, and UCX can only flush by destroying the cache. */
		t0 = now_ns();
		for (int i = 0; i < nbuf; i++) {
			must_get(c, area + (size_t)i * 2 * page, page, &r);
			bput(c, r);
		}
		cache_ns[rep] = (now_ns() - t0) / nbuf;
		bcache_flush(c);
	}
	munmap(area, (size_t)nbuf * 2 * page);
	free(h);
	*reg_ns = median(direct_ns, bench_opt.reps);
	return median(cache_ns, bench_opt.reps) - *reg_ns;
}

static void group_miss(bool ucx, const char *who, unsigned flags)
{
	struct bcache c;
	double reg_ns, v;

	pin_cpu(0);
	bcache_create(&c, ucx, &null_dev, 1 << 16, flags);
	v = miss_overhead(&c, &null_dev, (int)scaled(10000), &reg_ns);
	if (!isnan(v))
		emit("miss_null", who, v, "ns");
	bcache_destroy(&c);
	if (!have_ring_dev)
		return;
	bcache_create(&c, ucx, &ring_dev, 1 << 16, flags);
	v = miss_overhead(&c, &ring_dev, 4000, &reg_ns);
	if (!isnan(v)) {
		emit("miss_uring4k", who, v, "ns");
		emit("reg_uring4k", who, reg_ns, "ns");
	}
	bcache_destroy(&c);
}

/* ------------------------------------------------------------------------
 * What a monitor (or UCX's hooks) adds
 * ---------------------------------------------------------------------- */

enum page_op { OP_MUNMAP, OP_MADVISE };

/* Median ns of one munmap or madvise(MADV_DONTNEED) of a touched page;
 * with @c and @cached, the page is in the cache (watched) first. */
static double page_op_ns(struct bcache *c, bool cached, enum page_op op,
			 int n)
{
	double *v = calloc(n, sizeof(*v)), m;
	void *r;

	for (int i = 0; i < n; i++) {
		char *p = map_area(page);
		double t0;

		p[0] = 1;
		if (c && cached) {
			must_get(c, p, page, &r);
			bput(c, r);
		}
		t0 = now_ns();
		if (op == OP_MUNMAP)
			munmap(p, page);
		else
			madvise(p, page, MADV_DONTNEED);
		v[i] = now_ns() - t0;
		if (op == OP_MADVISE)
			munmap(p, page);
	}
	m = median(v, n);
	free(v);
	return m;
}

/* A thread that only waits for its pipe to close. */
static void *idle_thread(void *arg)
{
	char b;

	while (read(*(int *)arg, &b, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static double hit_loop_scattered(struct bcache *c, char *base, int nbuf,
				 long stride, long n)
{
	return hit_loop_order(c, base, nbuf, stride, n, true);
}

/* The calling thread's time on a CPU and waiting for one, ns, from
 * /proc/thread-self/schedstat; false where the kernel has no schedstat. */
static bool thread_sched(double *on_cpu, double *waiting)
{
	unsigned long long on, wait;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	bool ok = f && fscanf(f, "%llu %llu", &on, &wait) == 2;

	if (f)
		fclose(f);
	if (ok) {
		*on_cpu = (double)on;
		*waiting = (double)wait;
	}
	return ok;
}

/* One timed scattered hit loop: wall, on-CPU and run-queue ns per hit
 * (the last two NAN without schedstat). */
struct timed {
	double wall, on_cpu, waiting;
};

static struct timed timed_scattered(struct bcache *c, char *area, long n)
{
	double on0, wait0, on1, wait1;
	bool ok = thread_sched(&on0, &wait0);
	struct timed t;

	t.wall = hit_loop_scattered(c, area, NBUF, 2, n);
	ok = thread_sched(&on1, &wait1) && ok;
	t.on_cpu = ok ? (on1 - on0) / n : NAN;
	t.waiting = ok ? (wait1 - wait0) / n : NAN;
	return t;
}

struct late_thread {
	struct bcache *c;
	char *area;
	long n;
	int cpu;		/* -1: the creator's */
	struct timed t;
};

static void *late_thread_fn(void *arg)
{
	struct late_thread *l = arg;

	if (l->cpu >= 0)
		pin_cpu(l->cpu);
	l->t = timed_scattered(l->c, l->area, l->n);
	return NULL;
}

/* A thread started now does the hits; @cpu as in struct late_thread. */
static struct timed late_hits(struct bcache *c, char *area, long n, int cpu)
{
	struct late_thread l = { .c = c, .area = area, .n = n, .cpu = cpu };
	pthread_t t;
	int ret;

	if ((ret = pthread_create(&t, NULL, late_thread_fn, &l)))
		die("pthread_create", ret);
	pthread_join(t, NULL);
	return l.t;
}

/* Medians of one kind of timed loop: wall as @key, time on the CPU and
 * waiting for it as @key_on_cpu and @key_waiting (with schedstat). */
static void emit_timed(const char *key, const char *who, struct timed *t,
		       int reps)
{
	double wall[MAX_REPS], on[MAX_REPS], wait[MAX_REPS];
	char k[40];

	for (int rep = 0; rep < reps; rep++) {
		wall[rep] = t[rep].wall;
		on[rep] = t[rep].on_cpu;
		wait[rep] = t[rep].waiting;
	}
	emit(key, who, median(wall, reps), "ns");
	if (isnan(on[0]))
		return;
	snprintf(k, sizeof(k), "%s_on_cpu", key);
	emit(k, who, median(on, reps), "ns");
	snprintf(k, sizeof(k), "%s_waiting", key);
	emit(k, who, median(wait, reps), "ns");
}

/*
 * Issue 18: the creator caches 1000 one-page io_uring buffers and hits them
 * in a scattered order; then a thread started only now does the same hits,
 * as a progress thread or a pool thread started after the application
 * registered its buffers. Each round times the creator and two such
 * threads, one on the creator's CPU and one on the other CPU, each with
 * its time on the CPU and its wait for it: on a CPU that other work also
 * wants, the wall clock counts that work too.
 */
static void late_thread_figures(const char *who)
{
	struct timed cr[MAX_REPS], same[MAX_REPS], other[MAX_REPS];
	long n = scaled(1000000);
	int reps = bench_opt.reps, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct bcache c;
	char *area;

	if (!have_ring_dev)
		return;
	bcache_create(&c, false, &ring_dev, 1 << 16, 0);
	area = map_area((size_t)NBUF * 2 * page);
	for (int i = 0; i < NBUF; i++)
		area[(size_t)i * 2 * page] = 1;
	warm(&c, area, NBUF, 2);
	hit_loop_scattered(&c, area, NBUF, 2, n / 4);
	for (int rep = 0; rep < reps; rep++) {
		cr[rep] = timed_scattered(&c, area, n);
		same[rep] = late_hits(&c, area, n, -1);
		if (ncpu > 1)
			other[rep] = late_hits(&c, area, n, 1);
	}
	emit_timed("mon_late_creator", who, cr, reps);
	emit_timed("mon_late_same", who, same, reps);
	if (ncpu > 1)
		emit_timed("mon_late_other", who, other, reps);
	bcache_destroy(&c);
	munmap(area, (size_t)NBUF * 2 * page);
}

static void monitor_figures(struct bcache *c, const char *who)
{
	int n = (int)scaled(2000);
	double a[MAX_REPS], b[MAX_REPS], d[MAX_REPS];

	for (int rep = 0; rep < bench_opt.reps; rep++) {
		a[rep] = page_op_ns(c, false, OP_MUNMAP, n);
		b[rep] = page_op_ns(c, true, OP_MUNMAP, n);
		d[rep] = page_op_ns(c, true, OP_MADVISE, n);
	}
	emit("munmap_uncached", who, median(a, bench_opt.reps), "ns");
	if (c) {
		emit("munmap_cached", who, median(b, bench_opt.reps), "ns");
		emit("madvise_cached", who, median(d, bench_opt.reps), "ns");
	} else {
		emit("munmap_cached", who, median(a, bench_opt.reps), "ns");
		emit("madvise_cached", who, median(d, bench_opt.reps), "ns");
	}
}

static void vma_growth(struct bcache *c, const char *who)
{
	int n = (int)scaled(10000);
	char *area = map_area((size_t)n * 2 * page);
	long v0, v1;
	void *r;

	for (int i = 0; i < n; i++)
		area[(size_t)i * 2 * page] = 1;
	v0 = vma_count();
	for (int i = 0; i < n; i++) {
		must_get(c, area + (size_t)i * 2 * page, page, &r);
		bput(c, r);
	}
	v1 = vma_count();
	emit("vma_growth", who, (double)(v1 - v0), "VMAs");
	emit("vma_growth_regions", who, n, "");
}

static void group_monitor(const char *who)
{
	bool ucx = !strcmp(who, "ucx");
	struct bcache c;
	char *area;
	double same[MAX_REPS], distinct[MAX_REPS], nop[MAX_REPS];
	long n = scaled(1000000);
	int ret;

	pin_cpu(0);
	if (!strcmp(who, "baseline")) {
		/* No cache and no hooks in this process. */
		monitor_figures(NULL, who);
		return;
	}
	bcache_create(&c, ucx, &null_dev, 1 << 16, 0);
	if (!ucx && strcmp(regcache_monitor_name(), who)) {
		emit("unavailable", who, 1, "");
		bcache_destroy(&c);
		return;
	}
	area = map_area((size_t)NBUF * 2 * page);
	for (int i = 0; i < NBUF; i++)
		area[(size_t)i * 2 * page] = 1;
	warm(&c, area, NBUF, 2);
	hit_loop(&c, area, NBUF, 2, n / 4);
	for (int rep = 0; rep < bench_opt.reps; rep++) {
		same[rep] = hit_loop(&c, area, 1, 2, n);
		distinct[rep] = hit_loop(&c, area, NBUF, 2, n);
		nop[rep] = getppid_loop(n);
	}
	emit("mon_hit_1t_same", who, median(same, bench_opt.reps), "ns");
	emit("mon_hit_1t_1000", who, median(distinct, bench_opt.reps), "ns");
	/* The syscall floor, in the same process and rounds: the target for
	 * a userfaultfd hit (one probe syscall) is a ratio to it. */
	emit("mon_getppid", who, median(nop, bench_opt.reps), "ns");
	if (!ucx) {
		/* The same hits in a process with a second (idle) thread: a
		 * userfaultfd hit of a one-thread process needs no probe
		 * (docs/monitor-userfaultfd.md), one of any other pays it. */
		int fds[2];
		pthread_t idle;

		if (pipe(fds))
			die("pipe", errno);
		if ((ret = pthread_create(&idle, NULL, idle_thread, &fds[0])))
			die("idle thread", ret);
		for (int rep = 0; rep < bench_opt.reps; rep++) {
			same[rep] = hit_loop(&c, area, 1, 2, n);
			nop[rep] = getppid_loop(n);
		}
		close(fds[1]);
		pthread_join(idle, NULL);
		close(fds[0]);
		emit("mon_hit_mt_same", who, median(same, bench_opt.reps), "ns");
		emit("mon_getppid_mt", who, median(nop, bench_opt.reps), "ns");
	}
	monitor_figures(&c, who);
	bcache_destroy(&c);

	if (!ucx) {
		late_thread_figures(who);
		bcache_create(&c, false, &null_dev, 1 << 16,
			      REGCACHE_FLAG_NO_HIT_PROBE);
		warm(&c, area, NBUF, 2);
		for (int rep = 0; rep < bench_opt.reps; rep++)
			nop[rep] = hit_loop(&c, area, NBUF, 2, n);
		emit("mon_hit_noprobe_1000", who, median(nop, bench_opt.reps), "ns");
		bcache_destroy(&c);
	}

	bcache_create(&c, ucx, &null_dev, 1 << 16, 0);
	vma_growth(&c, who);
	bcache_destroy(&c);

	if (have_ring_dev) {
		double reg_ns, v;

		bcache_create(&c, ucx, &ring_dev, 1 << 16, 0);
		v = miss_overhead(&c, &ring_dev, 4000, &reg_ns);
		if (!isnan(v))
			emit("mon_miss_uring4k", who, v, "ns");
		bcache_destroy(&c);
	}
}

/* In a child: set the process up for group @g and measure it for @who,
 * writing struct fig records to @fd. */
void bench_child(enum group g, const char *who, int fd)
{
	bool ucx = !strcmp(who, "ucx");
	int ret;

	out_fd = fd;
	page = sysconf(_SC_PAGESIZE);
	/* One measurement per child; the parent repeats the rounds. */
	bench_opt.reps = 1;
	/* The cache-core groups measure regcache without a monitor. */
	setenv("REGCACHE_MONITOR",
	       g == G_MONITOR && !ucx ? who : "none", 1);
	if (g == G_MONITOR)
		setenv("REGCACHE_LOG", "error", 0);
	if ((ret = dev_init(&null_dev, true)))
		die("io_uring_queue_init", -ret);
	have_ring_dev = dev_init(&ring_dev, false) == 0;
	switch (g) {
	case G_HITS: group_hits(ucx, who); break;
	case G_SCALE: group_scale(ucx, who); break;
	case G_MISS:
		group_miss(ucx, who, REGCACHE_FLAG_EXPLICIT_INVALIDATE);
		break;
	case G_MONITOR: group_monitor(who); break;
	}
	_exit(0);
}
