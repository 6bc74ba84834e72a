/* SPDX-License-Identifier: MIT */
/*
 * regcache-bench: regcache against UCX's ucs_rcache, in the same run.
 *
 * Every figure is the median of --reps repeated runs. Each group of figures
 * runs in its own child process, because UCX's hooks and regcache's monitor
 * are process-wide and the monitor is chosen once per process:
 *   hits     get+put hit cost, 1 and 2 threads, same buffer and 1000
 *            distinct buffers (null device: only the cache is measured)
 *   scale    hit cost on a hot set of 1000 buffers while 1000 and while
 *            1000000 regions are cached; memory per cached region (RSS delta
 *            over regions)
 *   miss     miss overhead above the registrar's own cost (null device, and
 *            io_uring fixed buffers of 4 KiB)
 *   monitor  per monitor (REGCACHE_MONITOR=bpf / userfaultfd) and for UCX's
 *            hooks: hit cost, miss overhead, added munmap/madvise latency,
 *            growth of the VMA count
 * The regcache caches of "hits", "scale" and "miss" use
 * REGCACHE_FLAG_EXPLICIT_INVALIDATE with REGCACHE_MONITOR=none, which
 * measures the cache's own hit path whatever monitor the machine has; the
 * monitor groups measure what each monitor adds.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <regcache.h>

#include "device.h"
#include "rcache_ucx.h"

static struct {
	int reps;
	double scale;
	bool json;
	bool quick;
	const char *only;
} opt = { .reps = 5, .scale = 1 };

static long page;

/* ------------------------------------------------------------------------
 * Figures: what a child reports, one struct per figure
 * ---------------------------------------------------------------------- */

struct fig {
	char key[40];	/* stable name for --json */
	char who[24];	/* regcache, ucx, bpf, userfaultfd, baseline */
	double value;
	char unit[8];
};

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
	long v = (long)(n * opt.scale);

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

/* ns per get+put over @n gets cycling through @nbuf one-page buffers
 * @stride pages apart from @base (stride >= 2: no two regions merge). */
static double hit_loop(struct bcache *c, char *base, int nbuf, long stride,
		       long n)
{
	size_t step = (size_t)stride * page;
	double t0;
	void *r;
	int i = 0;

	t0 = now_ns();
	for (long k = 0; k < n; k++) {
		int ret = bget(c, base + i * step, page, &r);

		if (__builtin_expect(ret, 0))
			die("get in a hit loop", -ret);
		bput(c, r);
		if (++i == nbuf)
			i = 0;
	}
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
#define MAX_REPS 64

struct worker {
	pthread_t tid;
	int cpu;
	struct bcache *c;
	char *own;		/* this thread's 1000 buffers */
	char *priv;		/* 1000 more, in a cache of its own (control) */
	char *shared;		/* the buffer both threads hit */
	pthread_barrier_t *all, *pair;
	long n;
	double same[MAX_REPS], distinct[MAX_REPS], separate[MAX_REPS];
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
	for (int rep = 0; rep < opt.reps; rep++) {
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
			.n = n / 2, .shared = area,
			.own = area + (size_t)(1 + t) * NBUF * 2 * page,
			.priv = area + (size_t)(3 + t) * NBUF * 2 * page,
		};
		pthread_create(&w[t].tid, NULL, worker_fn, &w[t]);
	}
	pthread_barrier_wait(&all);	/* workers warmed up */
	for (int rep = 0; rep < opt.reps; rep++) {
		same[rep] = hit_loop(&c, area, 1, 2, n);
		distinct[rep] = hit_loop(&c, area, NBUF, 2, n);
		pthread_barrier_wait(&all);	/* workers run */
		pthread_barrier_wait(&all);	/* workers done */
	}
	for (int t = 0; t < 2; t++)
		pthread_join(w[t].tid, NULL);
	for (int rep = 0; rep < opt.reps; rep++) {
		same2[rep] = (w[0].same[rep] + w[1].same[rep]) / 2;
		distinct2[rep] = (w[0].distinct[rep] + w[1].distinct[rep]) / 2;
		sep2[rep] = (w[0].separate[rep] + w[1].separate[rep]) / 2;
	}
	emit("hit_1t_same", who, median(same, opt.reps), "ns");
	emit("hit_1t_1000", who, median(distinct, opt.reps), "ns");
	emit("hit_2t_same", who, median(same2, opt.reps), "ns");
	emit("hit_2t_1000", who, median(distinct2, opt.reps), "ns");
	emit("hit_2t_separate", who, median(sep2, opt.reps), "ns");
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
	for (int rep = 0; rep < opt.reps; rep++)
		big_ns[rep] = hit_loop(&c, area, NBUF, stride, n);
	bcache_destroy(&c);

	bcache_create(&c, ucx, &null_dev, (size_t)big + NBUF,
		      REGCACHE_FLAG_EXPLICIT_INVALIDATE);
	warm(&c, area, NBUF, stride);
	hit_loop(&c, area, NBUF, stride, n / 4);
	for (int rep = 0; rep < opt.reps; rep++)
		small_ns[rep] = hit_loop(&c, area, NBUF, stride, n);
	bcache_destroy(&c);
	emit("hit_hot_of_1000", who, median(small_ns, opt.reps), "ns");
	emit("hit_hot_of_1m", who, median(big_ns, opt.reps), "ns");
}

/* ------------------------------------------------------------------------
 * Miss overhead above the registrar's own cost
 * ---------------------------------------------------------------------- */

/* ns per miss: @nbuf fresh one-page buffers, get+put each, then deregister
 * them all; minus the registrar alone doing the same registrations. */
static double miss_overhead(struct bcache *c, struct dev *d, int nbuf,
			    double *reg_ns)
{
	double cache_ns[MAX_REPS], direct_ns[MAX_REPS];
	char *area = map_area((size_t)nbuf * 2 * page);
	void *r, **h = calloc(nbuf, sizeof(*h));

	/* Populated pages: the registrar pins, it does not fault in. */
	for (int i = 0; i < nbuf; i++)
		area[(size_t)i * 2 * page] = 1;
	for (int rep = 0; rep < opt.reps; rep++) {
		double t0 = now_ns();

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
		for (int i = 0; i < nbuf; i++)
			dev_dereg(d, h[i]);
		direct_ns[rep] = (now_ns() - t0) / nbuf;

		t0 = now_ns();
		for (int i = 0; i < nbuf; i++) {
			must_get(c, area + (size_t)i * 2 * page, page, &r);
			bput(c, r);
		}
		bcache_flush(c);
		cache_ns[rep] = (now_ns() - t0) / nbuf;
	}
	munmap(area, (size_t)nbuf * 2 * page);
	free(h);
	*reg_ns = median(direct_ns, opt.reps);
	return median(cache_ns, opt.reps) - *reg_ns;
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

static void monitor_figures(struct bcache *c, const char *who)
{
	int n = (int)scaled(2000);
	double a[MAX_REPS], b[MAX_REPS], d[MAX_REPS];

	for (int rep = 0; rep < opt.reps; rep++) {
		a[rep] = page_op_ns(c, false, OP_MUNMAP, n);
		b[rep] = page_op_ns(c, true, OP_MUNMAP, n);
		d[rep] = page_op_ns(c, true, OP_MADVISE, n);
	}
	emit("munmap_uncached", who, median(a, opt.reps), "ns");
	if (c) {
		emit("munmap_cached", who, median(b, opt.reps), "ns");
		emit("madvise_cached", who, median(d, opt.reps), "ns");
	} else {
		emit("munmap_cached", who, median(a, opt.reps), "ns");
		emit("madvise_cached", who, median(d, opt.reps), "ns");
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
	for (int rep = 0; rep < opt.reps; rep++) {
		same[rep] = hit_loop(&c, area, 1, 2, n);
		distinct[rep] = hit_loop(&c, area, NBUF, 2, n);
	}
	emit("mon_hit_1t_same", who, median(same, opt.reps), "ns");
	emit("mon_hit_1t_1000", who, median(distinct, opt.reps), "ns");
	monitor_figures(&c, who);
	bcache_destroy(&c);

	if (!ucx) {
		bcache_create(&c, false, &null_dev, 1 << 16,
			      REGCACHE_FLAG_NO_HIT_PROBE);
		warm(&c, area, NBUF, 2);
		for (int rep = 0; rep < opt.reps; rep++)
			nop[rep] = hit_loop(&c, area, NBUF, 2, n);
		emit("mon_hit_noprobe_1000", who, median(nop, opt.reps), "ns");
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

/* ------------------------------------------------------------------------
 * The parent: run every group in a child, collect, print
 * ---------------------------------------------------------------------- */

#define MAX_FIGS 4096
static struct fig figs[MAX_FIGS];
static int nfigs;

/* Replace the figures of every round by one figure per (key, who): the
 * median over rounds. */
static void aggregate(void)
{
	static struct fig out[MAX_FIGS];
	static double v[MAX_FIGS];
	int nout = 0;

	for (int i = 0; i < nfigs; i++) {
		int n = 0, j;

		for (j = 0; j < nout; j++)
			if (!strcmp(out[j].key, figs[i].key) &&
			    !strcmp(out[j].who, figs[i].who))
				break;
		if (j < nout)
			continue;
		for (int k = i; k < nfigs; k++)
			if (!strcmp(figs[k].key, figs[i].key) &&
			    !strcmp(figs[k].who, figs[i].who))
				v[n++] = figs[k].value;
		out[nout] = figs[i];
		out[nout++].value = median(v, n);
	}
	memcpy(figs, out, sizeof(out[0]) * nout);
	nfigs = nout;
}

enum group { G_HITS, G_SCALE, G_MISS, G_MONITOR };

static const char *run_group(enum group g, const char *who)
{
	static char err[128];
	struct fig f;
	int fds[2], status;
	pid_t pid;

	if (pipe(fds))
		return "pipe failed";
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return "fork failed";
	if (pid == 0) {
		bool ucx = !strcmp(who, "ucx");
		int ret;

		close(fds[0]);
		out_fd = fds[1];
		/* One measurement per child; the parent repeats the rounds. */
		opt.reps = 1;
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
	close(fds[1]);
	while (read(fds[0], &f, sizeof(f)) == sizeof(f))
		if (nfigs < MAX_FIGS)
			figs[nfigs++] = f;
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, sizeof(err), "%s for %s: %s %d",
			 g == G_HITS ? "hits" : g == G_SCALE ? "scale" :
			 g == G_MISS ? "miss" : "monitor", who,
			 WIFSIGNALED(status) ? "killed by signal" :
					       "exited with",
			 WIFSIGNALED(status) ? WTERMSIG(status)
					     : WEXITSTATUS(status));
		return err;
	}
	return NULL;
}

static const struct fig *find(const char *key, const char *who)
{
	for (int i = 0; i < nfigs; i++)
		if (!strcmp(figs[i].key, key) && !strcmp(figs[i].who, who))
			return &figs[i];
	return NULL;
}

static double val(const char *key, const char *who)
{
	const struct fig *f = find(key, who);

	return f ? f->value : NAN;
}

static void cell(double v, const char *fmt)
{
	char buf[32];

	if (isnan(v))
		printf(" %12s", "-");
	else {
		snprintf(buf, sizeof(buf), fmt, v);
		printf(" %12s", buf);
	}
}

/* A row of regcache vs UCX with their ratio. */
static void row_vs(const char *label, const char *key)
{
	double r = val(key, "regcache"), u = val(key, "ucx");

	printf("  %-40s", label);
	cell(r, "%.1f");
	cell(u, "%.1f");
	cell(u / r, "%.2fx");
	printf("\n");
}

static const char *const mon_cols[] = { "baseline", "bpf", "userfaultfd",
					"ucx" };
#define NMON_COLS 4

static bool mon_ran(const char *who)
{
	return !strcmp(who, "baseline") ||
	       (find("munmap_uncached", who) && !find("unavailable", who));
}

/* A row per monitor; @added: print the difference to the baseline column. */
static void row_mon(const char *label, const char *key, bool added)
{
	printf("  %-34s", label);
	for (int i = 0; i < NMON_COLS; i++) {
		double v = val(key, mon_cols[i]);
		double base = val(key, "baseline");
		char buf[40];

		if (!mon_ran(mon_cols[i]) || isnan(v)) {
			printf(" %13s", "-");
			continue;
		}
		if (added && i)
			snprintf(buf, sizeof(buf), "%.0f (%+.0f)", v, v - base);
		else
			snprintf(buf, sizeof(buf), "%.*f", v < 100 ? 1 : 0, v);
		printf(" %13s", buf);
	}
	printf("\n");
}

struct target {
	const char *text;
	double measured, limit;
	bool pass, known;
	char detail[160];
};
static struct target targets[8];
static int ntargets;

static void target(const char *text, double measured, double limit,
		   bool at_most, const char *detail)
{
	struct target *t = &targets[ntargets++];

	t->text = text;
	t->measured = measured;
	t->limit = limit;
	t->known = !isnan(measured);
	t->pass = t->known && (at_most ? measured <= limit : measured >= limit);
	snprintf(t->detail, sizeof(t->detail), "%s", detail);
}

static void compute_targets(void)
{
	char d[160];
	double r1 = val("hit_1t_same", "regcache"), u1 = val("hit_1t_same", "ucx");
	double r1d = val("hit_1t_1000", "regcache"), u1d = val("hit_1t_1000", "ucx");
	double r2d = val("hit_2t_1000", "regcache"), u2d = val("hit_2t_1000", "ucx");
	double hs = val("hit_hot_of_1000", "regcache");
	double hb = val("hit_hot_of_1m", "regcache");
	double mem = val("mem_per_region", "regcache");

	snprintf(d, sizeof(d), "same buffer %.1f vs %.1f ns", r1, u1);
	target("1-thread hit <= 1/3 of UCX's (same buffer)", r1 / u1, 1.0 / 3,
	       true, d);
	snprintf(d, sizeof(d), "1000 buffers %.1f vs %.1f ns", r1d, u1d);
	target("1-thread hit <= 1/3 of UCX's (1000 buffers)", r1d / u1d,
	       1.0 / 3, true, d);
	snprintf(d, sizeof(d), "%.1f ns per thread vs %.1f ns alone; control "
		 "%.2fx", r2d, r1d, val("hit_2t_separate", "regcache") / r1d);
	target("2 threads, distinct buffers: <= 1.3x the 1-thread cost",
	       r2d / r1d, 1.3, true, d);
	snprintf(d, sizeof(d), "UCX: %.1f ns per thread vs %.1f ns alone",
		 u2d, u1d);
	target("(peer) UCX degrades > 10x with 2 threads", u2d / u1d, 10,
	       false, d);
	snprintf(d, sizeof(d), "%.1f ns with 1000000 cached vs %.1f ns with 1000",
		 hb, hs);
	target("hot-set hit with 1M cached <= 2x with 1000 cached", hb / hs, 2,
	       true, d);
	snprintf(d, sizeof(d), "%.0f bytes of RSS per region (UCX: %.0f)", mem,
		 val("mem_per_region", "ucx"));
	target("memory per cached region <= 128 bytes", mem, 128, true, d);
}

static void print_table(const char *machine, const char **errors, int nerr)
{
	printf("regcache-bench: medians of %d rounds; %s\n", opt.reps, machine);
	printf("UCX: %s\n\n", ucx_version() ? ucx_version() :
			      "not built (install libucx-dev and rebuild)");
	printf("Cache core (null device; regcache with EXPLICIT_INVALIDATE)\n");
	printf("  %-40s %12s %12s %12s\n", "get+put hit, ns", "regcache",
	       "UCX", "UCX/regcache");
	row_vs("1 thread, same buffer", "hit_1t_same");
	row_vs("1 thread, 1000 buffers", "hit_1t_1000");
	row_vs("2 threads, same buffer (per thread)", "hit_2t_same");
	row_vs("2 threads, 1000 buffers each", "hit_2t_1000");
	row_vs("  control: 2 threads, a cache each", "hit_2t_separate");
	row_vs("hot 1000 of 1000 cached", "hit_hot_of_1000");
	row_vs("hot 1000 of 1000000 cached", "hit_hot_of_1m");
	printf("  %-40s\n", "miss overhead above the registrar, ns");
	row_vs("null device", "miss_null");
	row_vs("io_uring 4 KiB", "miss_uring4k");
	printf("  %-40s", "  (io_uring 4 KiB reg+dereg alone)");
	cell(val("reg_uring4k", "regcache"), "%.0f");
	printf("\n");
	row_vs("miss while filling to 1000000 regions", "miss_fill_1m");
	row_vs("memory per cached region, bytes (RSS)", "mem_per_region");

	printf("\nMonitors (regcache defaults; UCX with its UCM hooks)\n");
	printf("  %-34s", "");
	for (int i = 0; i < NMON_COLS; i++)
		printf(" %13s", i == 3 ? "UCX hooks" : mon_cols[i]);
	printf("\n");
	row_mon("hit, 1 thread, same buffer, ns", "mon_hit_1t_same", false);
	row_mon("hit, 1 thread, 1000 buffers, ns", "mon_hit_1t_1000", false);
	row_mon("  ... with NO_HIT_PROBE, ns", "mon_hit_noprobe_1000", false);
	row_mon("miss overhead, io_uring 4 KiB, ns", "mon_miss_uring4k", false);
	row_mon("munmap 1 page, not cached, ns", "munmap_uncached", true);
	row_mon("munmap 1 page, cached, ns", "munmap_cached", true);
	row_mon("MADV_DONTNEED 1 page, cached, ns", "madvise_cached", true);
	row_mon("VMA growth, 10000 cached regions", "vma_growth", false);
	for (int i = 1; i < NMON_COLS; i++)
		if (!mon_ran(mon_cols[i]))
			printf("  %s: not available on this machine\n",
			       mon_cols[i]);

	printf("\nTargets (ratios from this run)\n");
	for (int i = 0; i < ntargets; i++)
		if (!targets[i].known)
			printf("  [n/a ] %s\n", targets[i].text);
		else
			printf("  [%s] %-52s %6.2f (%s)\n",
			       targets[i].pass ? "PASS" : "MISS",
			       targets[i].text, targets[i].measured,
			       targets[i].detail);
	for (int i = 0; i < nerr; i++)
		printf("  error: %s\n", errors[i]);
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s >= 0x20)
			putchar(*s);
	putchar('"');
}

static void print_json(const char *machine, const char **errors, int nerr)
{
	time_t now = time(NULL);
	char date[64];

	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	printf("{\n  \"date\": \"%s\",\n  \"machine\": ", date);
	json_str(machine);
	printf(",\n  \"ucx\": ");
	if (ucx_version())
		json_str(ucx_version());
	else
		printf("null");
	printf(",\n  \"reps\": %d,\n  \"figures\": [", opt.reps);
	for (int i = 0; i < nfigs; i++) {
		printf("%s\n    {\"key\": ", i ? "," : "");
		json_str(figs[i].key);
		printf(", \"who\": ");
		json_str(figs[i].who);
		printf(", \"value\": %.3f, \"unit\": ", figs[i].value);
		json_str(figs[i].unit);
		printf("}");
	}
	printf("\n  ],\n  \"targets\": [");
	for (int i = 0; i < ntargets; i++) {
		printf("%s\n    {\"target\": ", i ? "," : "");
		json_str(targets[i].text);
		if (targets[i].known)
			printf(", \"measured\": %.4f", targets[i].measured);
		else
			printf(", \"measured\": null");
		printf(", \"limit\": %.4f, \"pass\": %s, \"detail\": ",
		       targets[i].limit,
		       !targets[i].known ? "null" :
		       targets[i].pass ? "true" : "false");
		json_str(targets[i].detail);
		printf("}");
	}
	printf("\n  ],\n  \"errors\": [");
	for (int i = 0; i < nerr; i++) {
		printf("%s", i ? ", " : "");
		json_str(errors[i]);
	}
	printf("]\n}\n");
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: regcache-bench [options]\n"
"  -r, --reps N      rounds; each figure is the median over rounds (default 5)\n"
"  -s, --scale X     multiply iteration counts (and the 1000000 regions) by X\n"
"      --only LIST   groups to run: hits,scale,miss,monitor (default all)\n"
"      --json        machine-readable output on stdout\n"
"  -h, --help\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "scale", required_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static const char *const whos[] = { "regcache", "ucx" };
	const char *errors[32], *e;
	int nerr = 0, c;
	char machine[256];
	bool tty;

	while ((c = getopt_long(argc, argv, "r:s:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'r': opt.reps = atoi(optarg); break;
		case 's': opt.scale = atof(optarg); break;
		case 'o': opt.only = optarg; break;
		case 'j': opt.json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (opt.reps < 1 || opt.reps > MAX_REPS || !(opt.scale > 0) ||
	    optind != argc) {
		usage(stderr);
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	machine_info(machine, sizeof(machine));
	tty = isatty(STDERR_FILENO);

	static const struct {
		enum group g;
		const char *name;
	} groups[] = { { G_HITS, "hits" }, { G_SCALE, "scale" },
		       { G_MISS, "miss" }, { G_MONITOR, "monitor" } };
	/* Rounds: every child measures once, and the rounds interleave the
	 * caches and monitors, so that a change in the machine's background
	 * load affects them alike. Each figure is the median over rounds. */
	for (int round = 0; round < opt.reps; round++)
		for (size_t gi = 0; gi < 4; gi++) {
			bool mon = groups[gi].g == G_MONITOR;

			if (opt.only && !strstr(opt.only, groups[gi].name))
				continue;
			for (int i = 0; i < (mon ? NMON_COLS : 2); i++) {
				const char *who = mon ? mon_cols[i] : whos[i];

				if (!strcmp(who, "ucx") && !ucx_version())
					continue;
				/* A monitor missing in round 1 stays missing. */
				if (mon && round && !mon_ran(who))
					continue;
				fprintf(stderr, tty ? "\r  round %d/%d: %s %-16s" :
					"  round %d/%d: %s %s\n", round + 1,
					opt.reps, groups[gi].name, who);
				if ((e = run_group(groups[gi].g, who)) &&
				    nerr < 32)
					errors[nerr++] = strdup(e);
			}
		}
	aggregate();
	if (tty)
		fprintf(stderr, "\r%50s\r", "");
	compute_targets();
	if (opt.json)
		print_json(machine, errors, nerr);
	else
		print_table(machine, errors, nerr);
	return nerr ? 1 : 0;
}
