/* SPDX-License-Identifier: MIT */
/*
 * regcache-demo: why regcache exists, in one command.
 *
 * A middleware-like message loop DMAs each message into an application
 * buffer through that buffer's registration (io_uring READ_FIXED from a
 * pipe: the device writes the bytes through the pages it pinned) and checks
 * every byte the application then sees. The buffers live the way they do
 * in real programs: long-lived buffers reused for every message, short-lived
 * ones of mixed sizes from malloc/free (including sizes glibc serves with
 * mmap, so addresses come back), and a share released the way custom
 * allocators and language runtimes do it: munmap or mremap or
 * madvise(MADV_DONTNEED) through libc or through a raw syscall, and
 * IORING_OP_MADVISE.
 *
 * The same workload (same seed, same sequence of buffers and messages) runs
 * once per mode, each in its own child process, because UCX's hooks and
 * regcache's monitor are process-wide:
 *   nocache       register before and deregister after every message
 *   naive         a cache keyed by address, as applications write without hooks
 *   ucx           UCX's ucs_rcache with the UCM memory hooks (libucx-dev)
 *   bpf, userfaultfd, none
 *                 regcache with that monitor (REGCACHE_MONITOR=...)
 * A corrupted operation is a message whose bytes the application does not
 * see: the device wrote them through a stale registration into pages that no
 * longer back the buffer (or, after mremap, into another live buffer).
 *
 * Exit status: 0 if no regcache mode corrupted anything, 1 if one did,
 * 2 for bad usage, a regcache mode that could not run, or registrations
 * that failed (e.g. RLIMIT_MEMLOCK too low).
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regcache.h>

#include "device.h"
#include "rcache_ucx.h"

/* ------------------------------------------------------------------------
 * Options
 * ---------------------------------------------------------------------- */

#define MAX_SIZES 16
#define MAX_SLOTS 256
#define MAX_REPEAT 32

static struct {
	unsigned long iterations;
	size_t sizes[MAX_SIZES];
	unsigned nsizes;
	unsigned long seed;
	unsigned long_slots, short_slots;
	unsigned long_share;	/* % of messages into long-lived buffers */
	unsigned lifetime;	/* mean messages per short-lived buffer */
	size_t max_regions;
	bool verbose;
	bool progress;
	bool fill;
	unsigned repeat;
} opt = {
	.iterations = 30000,
	.sizes = { 1 << 10, 16 << 10, 128 << 10, 1 << 20, 4 << 20, 16 << 20 },
	.nsizes = 6,
	.seed = 1,
	.long_slots = 8,
	.short_slots = 24,
	.long_share = 85,
	.lifetime = 12,
	.max_regions = 1024,
	.repeat = 3,
	.fill = true,
};

/* ------------------------------------------------------------------------
 * Modes
 * ---------------------------------------------------------------------- */

enum mode_kind { K_NOCACHE, K_NAIVE, K_UCX, K_REGCACHE };

struct mode {
	const char *key;	/* as given to --modes */
	const char *label;	/* in the table */
	enum mode_kind kind;
	const char *monitor;	/* REGCACHE_MONITOR for K_REGCACHE */
	bool selected;
};

static struct mode modes[] = {
	{ "nocache", "no cache (reg+dereg per message)", K_NOCACHE, NULL, true },
	{ "naive", "naive address-keyed cache", K_NAIVE, NULL, true },
	{ "ucx", "UCX ucs_rcache + UCM hooks", K_UCX, NULL, true },
	{ "bpf", "regcache, monitor bpf", K_REGCACHE, "bpf", true },
	{ "userfaultfd", "regcache, monitor userfaultfd", K_REGCACHE,
	  "userfaultfd", true },
	{ "none", "regcache, monitor none", K_REGCACHE, "none", true },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

/* How a short-lived buffer goes away. The weights make the share of
 * allocator-style releases. */
enum rel {
	R_FREE,		/* malloc/free */
	R_MUNMAP,	/* mmap/munmap through libc */
	R_RAW_MUNMAP,	/* munmap through syscall(), as Go and static runtimes */
	R_MREMAP,	/* realloc-style mremap(MAYMOVE) through libc */
	R_RAW_MREMAP,	/* the same through syscall() */
	R_MADVISE,	/* allocator purge: madvise(MADV_DONTNEED) through libc */
	R_RAW_MADVISE,	/* the same through syscall() */
	R_URING_MADVISE, /* the same through IORING_OP_MADVISE */
	R_NKINDS
};

static const char *const rel_names[R_NKINDS + 1] = {
	[R_FREE] = "free (glibc munmap/trim)",
	[R_MUNMAP] = "munmap (libc)",
	[R_RAW_MUNMAP] = "munmap (raw syscall)",
	[R_MREMAP] = "mremap (libc)",
	[R_RAW_MREMAP] = "mremap (raw syscall)",
	[R_MADVISE] = "MADV_DONTNEED (libc)",
	[R_RAW_MADVISE] = "MADV_DONTNEED (raw syscall)",
	[R_URING_MADVISE] = "MADV_DONTNEED (io_uring)",
	[R_NKINDS] = "(cause not found)",
};

/* Of every 10 short-lived slots, 3 use malloc/free, one each the rest. */
static const enum rel slot_kinds[10] = {
	R_FREE, R_MUNMAP, R_FREE, R_RAW_MUNMAP, R_MREMAP,
	R_FREE, R_RAW_MREMAP, R_MADVISE, R_RAW_MADVISE, R_URING_MADVISE,
};

/* What a child reports to the parent. */
struct result {
	int status;		/* 0 ran; 1 unavailable; -errno failed */
	char info[160];
	double secs;
	unsigned long ops, regs, corrupt, io_errors, get_errors;
	unsigned long long reg_bytes;
	unsigned long into_live;	/* landed in another live buffer */
	unsigned long corrupt_by[R_NKINDS + 1];
	unsigned long released_by[R_NKINDS];
	struct regcache_stats st;
};

/* ------------------------------------------------------------------------
 * Caches under test, behind one interface
 * ---------------------------------------------------------------------- */

static struct dev dev;
static const struct mode *cur;
static struct regcache *rc;
static struct ucx_cache *ucx;
static uintptr_t page_mask;

/* The naive cache: a hash map from buffer address to registration with
 * LRU eviction at --max-regions, as an application writes one without
 * hooks. It hits whenever the address and a long enough length match. */
struct naive_ent {
	uintptr_t addr;
	size_t len;
	void *handle;
	struct naive_ent *chain;	/* next in the bucket */
	struct naive_ent *newer, *older;	/* LRU list */
};
static struct naive_ent **naive;
static struct naive_ent *naive_newest, *naive_oldest;
static size_t naive_mask, naive_count;

static struct naive_ent **naive_bucket(uintptr_t addr)
{
	return &naive[((uint64_t)addr * 0x9e3779b97f4a7c15ull >> 32) &
		      naive_mask];
}

static void naive_lru_unlink(struct naive_ent *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		naive_newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		naive_oldest = e->newer;
}

static void naive_lru_push(struct naive_ent *e)
{
	e->newer = NULL;
	e->older = naive_newest;
	if (naive_newest)
		naive_newest->newer = e;
	naive_newest = e;
	if (!naive_oldest)
		naive_oldest = e;
}

static void naive_remove(struct naive_ent *e)
{
	struct naive_ent **pp;

	for (pp = naive_bucket(e->addr); *pp != e; pp = &(*pp)->chain)
		;
	*pp = e->chain;
	naive_lru_unlink(e);
	if (e->handle)
		dev_dereg(&dev, e->handle);
	free(e);
	naive_count--;
}

static void naive_evict_oldest(void)
{
	naive_remove(naive_oldest);
}

static int naive_get(void *addr, size_t len, void **handle);

static void page_range(void *addr, size_t len, void **start, size_t *plen)
{
	uintptr_t s = (uintptr_t)addr & ~page_mask;
	uintptr_t e = ((uintptr_t)addr + len + page_mask) & ~page_mask;

	*start = (void *)s;
	*plen = e - s;
}

static int naive_get(void *addr, size_t len, void **handle)
{
	struct naive_ent *e, **head = naive_bucket((uintptr_t)addr);
	void *s;
	size_t l;
	int ret;

	for (e = *head; e && e->addr != (uintptr_t)addr; e = e->chain)
		;
	if (e && e->len >= len) {
		naive_lru_unlink(e);
		naive_lru_push(e);
		*handle = e->handle;
		return 0;
	}
	page_range(addr, len, &s, &l);
	if (e) {
		/* Longer than what was registered: register again. */
		dev_dereg(&dev, e->handle);
		ret = dev_reg(&dev, s, l, &e->handle);
		if (ret) {
			e->handle = NULL;
			naive_remove(e);
			return ret;
		}
		e->len = len;
		naive_lru_unlink(e);
		naive_lru_push(e);
		*handle = e->handle;
		return 0;
	}
	if (naive_count >= opt.max_regions)
		naive_evict_oldest();
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	ret = dev_reg(&dev, s, l, &e->handle);
	if (ret) {
		free(e);
		return ret;
	}
	e->addr = (uintptr_t)addr;
	e->len = len;
	e->chain = *head;
	*head = e;
	naive_lru_push(e);
	naive_count++;
	*handle = e->handle;
	return 0;
}

/* Get a registration for the buffer [addr, addr+len). */
static int cache_get(void *addr, size_t len, void **region, void **handle)
{
	void *s;
	size_t l;
	int ret;

	switch (cur->kind) {
	case K_NOCACHE:
		page_range(addr, len, &s, &l);
		ret = dev_reg(&dev, s, l, handle);
		*region = *handle;
		return ret;
	case K_NAIVE:
		ret = naive_get(addr, len, handle);
		*region = *handle;
		return ret;
	case K_UCX:
		return ucx_cache_get(ucx, addr, len, region, handle);
	case K_REGCACHE:
		ret = regcache_get(rc, addr, len, 0,
				   (struct regcache_region **)region);
		if (!ret)
			*handle = regcache_region_handle(*region);
		return ret;
	}
	return -EINVAL;
}

static void cache_put(void *region)
{
	switch (cur->kind) {
	case K_NOCACHE:
		dev_dereg(&dev, region);
		break;
	case K_NAIVE:
		break;
	case K_UCX:
		ucx_cache_put(ucx, region);
		break;
	case K_REGCACHE:
		regcache_put(rc, region);
		break;
	}
}

static int cache_setup(void)
{
	struct regcache_params p = {
		.ops = &dev_regcache_ops,
		.ctx = &dev,
		.max_regions = opt.max_regions,
		.max_bytes = (size_t)2 << 30,
	};

	switch (cur->kind) {
	case K_NOCACHE:
		return 0;
	case K_NAIVE:
		naive_mask = 1;
		while (naive_mask < opt.max_regions * 2)
			naive_mask <<= 1;
		naive = calloc(naive_mask, sizeof(*naive));
		naive_mask--;
		return naive ? 0 : -ENOMEM;
	case K_UCX:
		return ucx_cache_create(&dev, opt.max_regions, true, &ucx);
	case K_REGCACHE:
		return regcache_create(&p, &rc);
	}
	return -EINVAL;
}

static void cache_teardown(struct result *res)
{
	switch (cur->kind) {
	case K_NOCACHE:
		break;
	case K_NAIVE:
		while (naive_oldest)
			naive_evict_oldest();
		free(naive);
		break;
	case K_UCX:
		ucx_cache_destroy(ucx);
		break;
	case K_REGCACHE:
		regcache_get_stats(rc, &res->st);
		regcache_destroy(rc);
		break;
	}
}

/* ------------------------------------------------------------------------
 * The workload
 * ---------------------------------------------------------------------- */

struct slot {
	char *buf;		/* current buffer */
	size_t size;		/* its length */
	char *arena;		/* madvise kinds: the mapping reused */
	size_t arena_len;
	enum rel kind;
	bool live, long_lived;
	unsigned uses_left;
};

static struct slot slots[MAX_SLOTS];
static unsigned nslots;
static uint64_t rng;

static uint64_t next_rand(void)
{
	/* xorshift64*: the same sequence in every mode for one seed */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static size_t map_len(size_t size)
{
	return (size + page_mask) & ~page_mask;
}

/* Every release, in order: to find which one made a corrupted message's
 * registration stale (the first release after the registration that
 * overlaps what it pinned). */
struct release {
	uintptr_t start, end;
	enum rel kind;
	struct slot *moved_to;	/* mremap: the slot now holding the pages */
	char *new_buf;		/* ... at this address */
};
static struct release *rel_log;
static size_t rel_n, rel_cap;

static void note_release(void *addr, size_t len, enum rel kind)
{
	if (rel_n == rel_cap) {
		rel_cap = rel_cap ? rel_cap * 2 : 1024;
		rel_log = realloc(rel_log, rel_cap * sizeof(*rel_log));
		if (!rel_log) {
			perror("realloc");
			exit(2);
		}
	}
	rel_log[rel_n++] = (struct release){
		.start = (uintptr_t)addr & ~page_mask,
		.end = ((uintptr_t)addr + len + page_mask) & ~page_mask,
		.kind = kind,
	};
	/* Registrations made from now on postdate this release. */
	dev.epoch = rel_n;
}

/* The release that made the registration behind @handle stale, or NULL. */
static struct release *stale_cause(void *handle)
{
	unsigned slot = (unsigned)dev_buf_index(handle);
	uintptr_t s, e;

	if (slot >= DEV_SLOTS)
		return NULL;
	s = dev.slot[slot].addr;
	e = s + dev.slot[slot].len;
	/* free() of a heap chunk changes no pages, so it is the cause only
	 * if nothing else (a glibc munmap or trim it led to) overlaps. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = dev.slot[slot].epoch; i < rel_n; i++)
			if (rel_log[i].start < e && s < rel_log[i].end &&
			    (pass || rel_log[i].kind != R_FREE))
				return &rel_log[i];
	return NULL;
}

/* A short-lived buffer's size: each size class half as likely as the next
 * smaller one, since small allocations dominate every allocator trace;
 * long-lived buffers take every size, the largest first. */
static size_t pick_size(void)
{
	uint64_t r = next_rand() % (((uint64_t)1 << opt.nsizes) - 1);
	unsigned i = 0;
	size_t s;

	/* r < 2^(n-1): class 0; < 2^(n-1) + 2^(n-2): class 1; ... */
	for (uint64_t edge = (uint64_t)1 << (opt.nsizes - 1), w = edge;
	     r >= edge && i + 1 < opt.nsizes; i++) {
		w >>= 1;
		edge += w;
	}
	s = opt.sizes[i];

	/* +-25% so that sizes and addresses vary within a class */
	return s - s / 4 + next_rand() % (s / 2 + 1);
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int uring_madvise(void *addr, size_t len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&dev.ring);
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_prep_madvise(sqe, addr, (off_t)len, MADV_DONTNEED);
	ret = io_uring_submit_and_wait(&dev.ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&dev.ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&dev.ring, cqe);
	return ret;
}

/* Give @s a buffer for its next lifetime. */
static int slot_alloc(struct slot *s)
{
	s->size = s->long_lived ? s->size : pick_size();
	switch (s->kind) {
	case R_FREE:
		s->buf = malloc(s->size);
		break;
	case R_MUNMAP:
	case R_RAW_MUNMAP:
	case R_MREMAP:
	case R_RAW_MREMAP:
		s->buf = map_anon(map_len(s->size));
		break;
	case R_MADVISE:
	case R_RAW_MADVISE:
	case R_URING_MADVISE:
		/* An allocator's extent: the same mapping every lifetime. */
		if (!s->arena) {
			s->arena_len = map_len(opt.sizes[opt.nsizes - 1] * 2);
			s->arena = map_anon(s->arena_len);
		}
		if (s->size > s->arena_len)
			s->size = s->arena_len;
		s->buf = s->arena;
		break;
	default:
		return -EINVAL;
	}
	if (!s->buf)
		return -ENOMEM;
	if (opt.fill)
		/* The application writes its buffer before handing it to the
		 * middleware, as a sender does: the page faults are its own,
		 * not the registration's. */
		memset(s->buf, 0x11, s->size);
	s->live = true;
	s->uses_left = 1 + next_rand() % (2 * opt.lifetime);
	return 0;
}

/* End the lifetime of @s's buffer the way its kind does. */
static int slot_release(struct slot *s, struct result *res)
{
	size_t len = map_len(s->size), len2;
	void *p = s->buf;
	int ret = 0;

	note_release(p, len, s->kind);
	res->released_by[s->kind]++;
	switch (s->kind) {
	case R_FREE:
		free(p);
		break;
	case R_MUNMAP:
		ret = munmap(p, len);
		break;
	case R_RAW_MUNMAP:
		ret = syscall(SYS_munmap, p, len);
		break;
	case R_MREMAP:
	case R_RAW_MREMAP:
		/* realloc: the pages move to wherever the kernel finds room
		 * for the new size, and the slot keeps using them there. */
		s->size = pick_size();
		len2 = map_len(s->size);
		if (s->kind == R_MREMAP)
			p = mremap(p, len, len2, MREMAP_MAYMOVE);
		else
			p = (void *)syscall(SYS_mremap, p, len, len2,
					    MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			return -errno;
		rel_log[rel_n - 1].moved_to = s;
		rel_log[rel_n - 1].new_buf = p;
		s->buf = p;
		s->uses_left = 1 + next_rand() % (2 * opt.lifetime);
		return 0;
	case R_MADVISE:
		ret = madvise(p, len, MADV_DONTNEED);
		break;
	case R_RAW_MADVISE:
		ret = syscall(SYS_madvise, p, len, MADV_DONTNEED);
		break;
	case R_URING_MADVISE:
		ret = uring_madvise(p, len);
		break;
	default:
		return -EINVAL;
	}
	s->live = false;
	return ret < 0 ? (ret == -1 ? -errno : ret) : 0;
}

static void slots_init(void)
{
	nslots = opt.long_slots + opt.short_slots;
	memset(slots, 0, sizeof(slots));
	for (unsigned i = 0; i < nslots; i++) {
		struct slot *s = &slots[i];

		if (i < opt.long_slots) {
			/* Long-lived buffers cover every size, largest first. */
			s->long_lived = true;
			s->kind = R_FREE;
			s->size = opt.sizes[opt.nsizes - 1 - i % opt.nsizes];
		} else {
			s->kind = slot_kinds[(i - opt.long_slots) % 10];
		}
	}
}

static void slots_fini(void)
{
	for (unsigned i = 0; i < nslots; i++) {
		struct slot *s = &slots[i];

		if (s->live && (s->kind == R_FREE))
			free(s->buf);
		else if (s->live && !s->arena)
			munmap(s->buf, map_len(s->size));
		if (s->arena)
			munmap(s->arena, s->arena_len);
	}
}

static unsigned cur_round;
/* msgs/s of every mode in every round */
static double rate[sizeof(modes) / sizeof(modes[0])][MAX_REPEAT];

static void progress(unsigned long done)
{
	static int last = -1;
	int pct = (int)(done * 100 / opt.iterations);

	if (!opt.progress || pct == last)
		return;
	last = pct;
	if (opt.repeat > 1)
		fprintf(stderr, "\r  running %-34s round %u/%u %3d%%", cur->label,
			cur_round + 1, opt.repeat, pct);
	else
		fprintf(stderr, "\r  running %-34s %3d%%", cur->label, pct);
	if (done == opt.iterations)
		fprintf(stderr, "\r%70s\r", "");
}

/* One message: get, DMA, verify, put. */
static int message(struct slot *s, unsigned long op, struct result *res)
{
	size_t len = (size_t)64 << (next_rand() % 11);	/* 64 B .. 64 KiB */
	size_t off;
	void *region, *handle;
	int ret;

	if (len > s->size)
		len = s->size;
	off = next_rand() % (s->size - len + 1);
	/* The application's view before the message arrives. */
	memset(s->buf + off, 0, len);
	ret = cache_get(s->buf, s->size, &region, &handle);
	if (ret) {
		res->get_errors++;
		if (res->get_errors == 1)
			fprintf(stderr, "\n%s: get of %p+%zu failed: %s\n",
				cur->label, (void *)s->buf, s->size,
				strerror(-ret));
		return 0;
	}
	ret = dev_dma_check(&dev, handle, s->buf + off, len, op);
	if (ret == 0) {
		struct release *why = stale_cause(handle);

		res->corrupt++;
		res->corrupt_by[why ? why->kind : R_NKINDS]++;
		/* After mremap the stale registration pins pages that now
		 * back the moved buffer: did the message land in there? */
		if (why && why->moved_to && why->moved_to->live &&
		    why->moved_to->buf == why->new_buf) {
			uintptr_t moved = (uintptr_t)(s->buf + off) - why->start;

			if (moved + len <= map_len(why->moved_to->size) &&
			    !memcmp(why->new_buf + moved, dev_pattern(op), len))
				res->into_live++;
		}
	} else if (ret < 0) {
		res->io_errors++;
		if (res->io_errors == 1)
			fprintf(stderr, "\n%s: DMA into %p+%zu failed: %s\n",
				cur->label, (void *)(s->buf + off), len,
				strerror(-ret));
	}
	cache_put(region);
	return 0;
}

static int run_workload(struct result *res)
{
	unsigned long op;
	double t0;
	int ret;

	rng = opt.seed * 0x9e3779b97f4a7c15ull + 1;
	slots_init();
	for (unsigned i = 0; i < opt.long_slots; i++)
		if ((ret = slot_alloc(&slots[i])))
			return ret;
	t0 = now_ns();
	for (op = 0; op < opt.iterations; op++) {
		struct slot *s;

		if (next_rand() % 100 < opt.long_share || !opt.short_slots)
			s = &slots[next_rand() % opt.long_slots];
		else
			s = &slots[opt.long_slots +
				   next_rand() % opt.short_slots];
		if (!s->live && (ret = slot_alloc(s)))
			return ret;
		message(s, op, res);
		if (!s->long_lived && --s->uses_left == 0 &&
		    (ret = slot_release(s, res)))
			return ret;
		if ((op & 255) == 0)
			progress(op);
	}
	res->secs = (now_ns() - t0) / 1e9;
	res->ops = op;
	progress(op);
	return 0;
}

/* In the child: run one mode and report. */
static void child(const struct mode *m, int fd)
{
	struct result res = { 0 };
	int ret;

	cur = m;
	/* Keep glibc serving >= 128 KiB with mmap for the whole run (its
	 * dynamic threshold would move them to the heap after one free). */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	ret = dev_init(&dev, false);
	if (!ret)
		ret = cache_setup();
	if (ret) {
		res.status = ret;
		snprintf(res.info, sizeof(res.info), "setup failed: %s",
			 strerror(-ret));
		goto out;
	}
	if (m->kind == K_REGCACHE) {
		snprintf(res.info, sizeof(res.info), "%s",
			 regcache_monitor_name());
		if (strcmp(res.info, m->monitor)) {
			res.status = 1;
			snprintf(res.info, sizeof(res.info),
				 "unavailable (fell back to \"%s\")",
				 regcache_monitor_name());
			goto out;
		}
	} else if (m->kind == K_UCX) {
		snprintf(res.info, sizeof(res.info), "UCX %s", ucx_version());
	}
	ret = run_workload(&res);
	if (ret) {
		res.status = ret;
		snprintf(res.info, sizeof(res.info), "workload failed: %s",
			 strerror(-ret));
	}
	res.regs = atomic_load(&dev.regs);
	res.reg_bytes = atomic_load(&dev.reg_bytes);
	cache_teardown(&res);
	slots_fini();
out:
	if (write(fd, &res, sizeof(res)) != sizeof(res))
		_exit(3);
	_exit(0);
}

/* Does monitor @name work here? Asked in a child, since the monitor is
 * process-wide and chosen once. */
static bool monitor_available(const char *name, char *why, size_t len)
{
	int fds[2], status;
	char got[32] = "";
	pid_t pid;

	if (pipe(fds))
		return false;
	pid = fork();
	if (pid == 0) {
		struct regcache_params p = { .ops = &dev_regcache_ops,
					     .ctx = &dev };
		struct regcache *c;

		setenv("REGCACHE_MONITOR", name, 1);
		/* The probe's fallback warning is the answer, not news. */
		setenv("REGCACHE_LOG", "error", 1);
		dev_init(&dev, true);
		if (!regcache_create(&p, &c)) {
			snprintf(got, sizeof(got), "%s", regcache_monitor_name());
			regcache_destroy(c);
		}
		_exit(write(fds[1], got, sizeof(got)) == sizeof(got) ? 0 : 1);
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], got, sizeof(got)) != sizeof(got))
		got[0] = 0;
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (!strcmp(got, name))
		return true;
	snprintf(why, len, "not available on this machine%s",
		 !strcmp(name, "userfaultfd") ? " (or not built)" :
		 !strcmp(name, "bpf") ? " (needs CAP_BPF and a kernel with BTF)" : "");
	return false;
}

static int run_mode(const struct mode *m, struct result *res)
{
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (pipe(fds))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(fds[0]);
		if (m->kind == K_REGCACHE)
			setenv("REGCACHE_MONITOR", m->monitor, 1);
		child(m, fds[1]);
	}
	close(fds[1]);
	n = read(fds[0], res, sizeof(*res));
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (n != sizeof(*res)) {
		res->status = -ECHILD;
		if (WIFSIGNALED(status))
			snprintf(res->info, sizeof(res->info),
				 "crashed: signal %d (%s)", WTERMSIG(status),
				 strsignal(WTERMSIG(status)));
		else
			snprintf(res->info, sizeof(res->info),
				 "child exited with status %d",
				 WEXITSTATUS(status));
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Main
 * ---------------------------------------------------------------------- */

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if ((*end && *end != ',') || !v || v > (1ull << 30))
		return -1;
	*out = v;
	return 0;
}

static int parse_sizes(char *list)
{
	opt.nsizes = 0;
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		if (opt.nsizes == MAX_SIZES || parse_size(tok, &opt.sizes[opt.nsizes]))
			return -1;
		opt.nsizes++;
	}
	/* Ascending: the last is the largest. */
	for (unsigned i = 1; i < opt.nsizes; i++)
		for (unsigned j = i; j && opt.sizes[j] < opt.sizes[j - 1]; j--) {
			size_t t = opt.sizes[j];

			opt.sizes[j] = opt.sizes[j - 1];
			opt.sizes[j - 1] = t;
		}
	return opt.nsizes ? 0 : -1;
}

static int parse_modes(char *list)
{
	for (size_t i = 0; i < NMODES; i++)
		modes[i].selected = false;
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		bool found = false;

		if (!strcmp(tok, "uffd"))
			tok = "userfaultfd";
		for (size_t i = 0; i < NMODES; i++)
			if (!strcmp(tok, modes[i].key) ||
			    (!strcmp(tok, "regcache") &&
			     modes[i].kind == K_REGCACHE) ||
			    !strcmp(tok, "all")) {
				modes[i].selected = true;
				found = true;
			}
		if (!found) {
			fprintf(stderr, "unknown mode \"%s\"\n", tok);
			return -1;
		}
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: regcache-demo [options]\n"
"  -n, --iterations N   messages per mode (default %lu)\n"
"  -s, --sizes LIST     buffer sizes, e.g. 1K,16K,128K,1M,4M,16M (the default)\n"
"  -m, --modes LIST     any of nocache,naive,ucx,bpf,userfaultfd,none;\n"
"                       regcache = every regcache monitor; all (default)\n"
"      --seed N         workload seed (default 1)\n"
"      --long-share P   %% of messages into long-lived buffers (default %u)\n"
"      --lifetime N     mean messages per short-lived buffer (default %u)\n"
"      --long N         long-lived buffers (default %u)\n"
"      --short N        short-lived buffers (default %u)\n"
"      --max-regions N  capacity of every cache (default %zu)\n"
"  -r, --repeat N       rounds of every mode; msgs/s is their median (default 3)\n"
"      --no-fill        do not write each new buffer before its first message\n"
"                       (then registration pays the page faults)\n"
"  -v, --verbose        registered bytes and regcache statistics per mode\n"
"  -h, --help\n",
		opt.iterations, opt.long_share, opt.lifetime, opt.long_slots,
		opt.short_slots, opt.max_regions);
}

/* Corrupted messages by the change that made the registration stale, one
 * column per mode that ran. */
static void print_causes(const struct result *res, const bool *ran)
{
	unsigned long total = 0;

	for (size_t i = 0; i < NMODES; i++)
		if (ran[i] && !res[i].status)
			total += res[i].corrupt;
	if (!total)
		return;
	printf("\ncorrupted messages by what made the registration stale "
	       "(releases in the run)\n%-36s", "");
	for (size_t i = 0; i < NMODES; i++)
		if (ran[i] && !res[i].status)
			printf(" %11s", modes[i].key);
	for (int k = 0; k <= R_NKINDS; k++) {
		char name[64];
		bool any = k < R_NKINDS;
		const struct result *first = NULL;

		for (size_t i = 0; i < NMODES; i++)
			if (ran[i] && !res[i].status) {
				any |= res[i].corrupt_by[k] != 0;
				first = first ? first : &res[i];
			}
		if (!any)
			continue;
		if (k < R_NKINDS && first)
			snprintf(name, sizeof(name), "%s (%lu)", rel_names[k],
				 first->released_by[k]);
		else
			snprintf(name, sizeof(name), "%s", rel_names[k]);
		printf("\n  %-34s", name);
		for (size_t i = 0; i < NMODES; i++)
			if (ran[i] && !res[i].status)
				printf(" %11lu", res[i].corrupt_by[k]);
	}
	printf("\n  %-34s", "DMA landed in another live buffer");
	for (size_t i = 0; i < NMODES; i++)
		if (ran[i] && !res[i].status)
			printf(" %11lu", res[i].into_live);
	printf("\n");
}

/* The project's targets for the default workload: a caching regcache mode
 * keeps >= 0.9x the naive cache's speed and >= 10x that of no cache. */
static void print_ratios(const struct result *res, const bool *ran)
{
	int nocache = -1, naive = -1;

	for (size_t i = 0; i < NMODES; i++) {
		if (!ran[i] || res[i].status)
			continue;
		if (modes[i].kind == K_NOCACHE)
			nocache = (int)i;
		else if (modes[i].kind == K_NAIVE)
			naive = (int)i;
	}
	for (size_t i = 0; i < NMODES; i++) {
		double v[MAX_REPEAT];

		if (!ran[i] || res[i].status || modes[i].kind != K_REGCACHE ||
		    !strcmp(modes[i].monitor, "none") || (naive < 0 && nocache < 0))
			continue;
		/* Ratios within a round (the modes ran back to back), then
		 * their median: steadier than a ratio of medians. */
		printf("\n%s:", modes[i].label);
		if (naive >= 0) {
			for (unsigned r = 0; r < opt.repeat; r++)
				v[r] = rate[i][r] / rate[naive][r];
			printf(" %.2fx the naive cache's msgs/s (target >= 0.9)%s",
			       median(v, (int)opt.repeat), nocache >= 0 ? "," : "");
		}
		if (nocache >= 0) {
			for (unsigned r = 0; r < opt.repeat; r++)
				v[r] = rate[i][r] / rate[nocache][r];
			printf(" %.1fx no cache (target >= 10)",
			       median(v, (int)opt.repeat));
		}
	}
	printf("\n");
}

static const char *fmt_count(char *buf, unsigned long v)
{
	if (v >= 10000000)
		sprintf(buf, "%luM", v / 1000000);
	else if (v >= 100000)
		sprintf(buf, "%luk", v / 1000);
	else
		sprintf(buf, "%lu", v);
	return buf;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "iterations", required_argument, NULL, 'n' },
		{ "sizes", required_argument, NULL, 's' },
		{ "modes", required_argument, NULL, 'm' },
		{ "seed", required_argument, NULL, 'S' },
		{ "long-share", required_argument, NULL, 'L' },
		{ "lifetime", required_argument, NULL, 'T' },
		{ "long", required_argument, NULL, 'l' },
		{ "short", required_argument, NULL, 'x' },
		{ "max-regions", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "no-fill", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct result res[NMODES];
	bool ran[NMODES] = { 0 }, runnable[NMODES] = { 0 };
	char machine[256], a[32], b[32];
	int c, status = 0;
	bool failures = false;

	while ((c = getopt_long(argc, argv, "n:s:m:r:vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'n': opt.iterations = strtoul(optarg, NULL, 0); break;
		case 's':
			if (parse_sizes(optarg)) {
				fprintf(stderr, "bad --sizes (sizes from 1 to 1G, "
					"comma-separated, K/M suffixes)\n");
				return 2;
			}
			break;
		case 'm': if (parse_modes(optarg)) return 2; break;
		case 'S': opt.seed = strtoul(optarg, NULL, 0); break;
		case 'L': opt.long_share = (unsigned)atoi(optarg); break;
		case 'T': opt.lifetime = (unsigned)atoi(optarg); break;
		case 'l': opt.long_slots = (unsigned)atoi(optarg); break;
		case 'x': opt.short_slots = (unsigned)atoi(optarg); break;
		case 'R': opt.max_regions = strtoul(optarg, NULL, 0); break;
		case 'v': opt.verbose = true; break;
		case 'r': opt.repeat = (unsigned)atoi(optarg); break;
		case 'F': opt.fill = false; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!opt.iterations || !opt.long_slots || opt.long_share > 100 ||
	    !opt.lifetime || opt.long_slots + opt.short_slots > MAX_SLOTS ||
	    !opt.max_regions || !opt.repeat || opt.repeat > MAX_REPEAT ||
	    optind != argc) {
		usage(stderr);
		return 2;
	}
	page_mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
	if (ucx_version()) {
		static char label[64];

		snprintf(label, sizeof(label), "UCX %s ucs_rcache + UCM hooks",
			 ucx_version());
		modes[2].label = label;
	}
	opt.progress = isatty(STDERR_FILENO);
	machine_info(machine, sizeof(machine));
	{
		struct rlimit rl;
		size_t need = 0;

		for (unsigned i = 0; i < opt.long_slots; i++)
			need += opt.sizes[opt.nsizes - 1 - i % opt.nsizes];
		if (geteuid() && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
		    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need * 2)
			fprintf(stderr, "warning: RLIMIT_MEMLOCK is %llu KiB; "
				"pinning these buffers needs more, so some "
				"registrations will fail\n  (run as root, raise "
				"`ulimit -l`, or use smaller --sizes)\n",
				(unsigned long long)rl.rlim_cur >> 10);
	}

	printf("regcache-demo: %lu messages per mode into %u long-lived and %u "
	       "short-lived buffers\n", opt.iterations, opt.long_slots,
	       opt.short_slots);
	printf("  buffer sizes:");
	for (unsigned i = 0; i < opt.nsizes; i++)
		printf(opt.sizes[i] >= (1 << 20) && !(opt.sizes[i] & 0xfffff) ?
		       " %zuM" : " %zuK", opt.sizes[i] >= (1 << 20) &&
		       !(opt.sizes[i] & 0xfffff) ? opt.sizes[i] >> 20 :
		       opt.sizes[i] >> 10);
	printf(" (+-25%%). Every message is DMAed by io_uring\n"
	       "  READ_FIXED through the buffer's registration, and every byte "
	       "is checked\n  where the application looks. Short-lived buffers "
	       "end by free, munmap,\n  mremap or MADV_DONTNEED (through libc "
	       "or a raw syscall) or io_uring MADVISE.\n"
	       "  machine: %s\n\n", machine);

	for (size_t i = 0; i < NMODES; i++) {
		char why[128];

		if (!modes[i].selected)
			continue;
		if (modes[i].kind == K_UCX && !ucx_version()) {
			res[i].status = 1;
			snprintf(res[i].info, sizeof(res[i].info),
				 "not built (libucx-dev missing at build time)");
			ran[i] = true;
			continue;
		}
		if (modes[i].kind == K_REGCACHE &&
		    !monitor_available(modes[i].monitor, why, sizeof(why))) {
			res[i].status = 1;
			snprintf(res[i].info, sizeof(res[i].info), "%s", why);
			ran[i] = true;
			continue;
		}
		ran[i] = true;
		runnable[i] = true;
	}

	/* Rounds interleave the modes, so a change in the machine's load hits
	 * them alike; msgs/s is the median over rounds, counts are totals. */
	for (unsigned round = 0; round < opt.repeat; round++)
		for (size_t i = 0; i < NMODES; i++) {
			struct result one;

			if (!runnable[i])
				continue;
			if (!opt.progress)
				fprintf(stderr, "  running %s (round %u/%u)\n",
					modes[i].label, round + 1, opt.repeat);
			cur_round = round;
			if (run_mode(&modes[i], &one)) {
				one.status = -EIO;
				snprintf(one.info, sizeof(one.info),
					 "could not start a child process");
			}
			rate[i][round] = one.status || !one.secs ? 0 :
					 one.ops / one.secs;
			if (round == 0) {
				res[i] = one;
				continue;
			}
			if (one.status && !res[i].status) {
				res[i].status = one.status;
				memcpy(res[i].info, one.info, sizeof(one.info));
			}
			res[i].corrupt += one.corrupt;
			res[i].io_errors += one.io_errors;
			res[i].get_errors += one.get_errors;
			res[i].into_live += one.into_live;
			for (int k = 0; k <= R_NKINDS; k++)
				res[i].corrupt_by[k] += one.corrupt_by[k];
			for (int k = 0; k < R_NKINDS; k++)
				res[i].released_by[k] += one.released_by[k];
		}
	for (size_t i = 0; i < NMODES; i++) {
		double v[MAX_REPEAT];

		if (!runnable[i] || res[i].status)
			continue;
		/* The table prints ops / secs; median() sorts, so a copy. */
		memcpy(v, rate[i], sizeof(v));
		res[i].secs = res[i].ops / median(v, (int)opt.repeat);
	}

	if (opt.repeat > 1)
		printf("medians of msgs/s over %u rounds; corrupted messages are "
		       "totals\n", opt.repeat);
	printf("%-34s %10s %9s %8s %10s\n", "mode", "msgs/s", "regs",
	       "hit rate", "corrupted");
	for (size_t i = 0; i < NMODES; i++) {
		struct result *r = &res[i];

		if (!ran[i])
			continue;
		if (r->status) {
			printf("%-34s %s\n", modes[i].label, r->info);
			if (r->status < 0 && modes[i].kind == K_REGCACHE)
				status = status ? status : 2;
			continue;
		}
		printf("%-34s %10.0f %9s %7.1f%% %10s", modes[i].label,
		       r->ops / r->secs, fmt_count(a, r->regs),
		       r->ops ? 100.0 * (r->ops > r->regs ? r->ops - r->regs : 0) /
					r->ops : 0.0,
		       fmt_count(b, r->corrupt));
		if (r->io_errors || r->get_errors)
			printf("  (%lu I/O errors, %lu failed gets)",
			       r->io_errors, r->get_errors);
		putchar('\n');
		if (modes[i].kind == K_REGCACHE && r->corrupt)
			status = 1;
		else if (modes[i].kind == K_REGCACHE &&
			 (r->io_errors || r->get_errors) && !status)
			status = 3;
		failures |= r->io_errors || r->get_errors;
	}

	print_ratios(res, ran);
	print_causes(res, ran);
	if (opt.verbose) {
		for (size_t i = 0; i < NMODES; i++) {
			struct regcache_stats *st = &res[i].st;

			if (!ran[i] || res[i].status)
				continue;
			printf("%s: %llu MiB registered in %lu registrations\n",
			       modes[i].label, res[i].reg_bytes >> 20,
			       res[i].regs);
			if (modes[i].kind != K_REGCACHE)
				continue;
			printf("%s: hits %llu, misses %llu, uncached %llu, "
			       "invalidations %llu, evictions %llu, merges %llu\n",
			       modes[i].label, (unsigned long long)st->hits,
			       (unsigned long long)st->misses,
			       (unsigned long long)st->uncached,
			       (unsigned long long)st->invalidations,
			       (unsigned long long)st->evictions,
			       (unsigned long long)st->merges);
		}
	}
	if (failures)
		printf("\nSome gets or DMAs failed (see the first error above); "
		       "registrations of large\nbuffers fail when "
		       "RLIMIT_MEMLOCK is low: run as root, raise `ulimit -l`, "
		       "or\nuse smaller --sizes.\n");
	printf("\n%s\n", status == 1 ? "FAILED: regcache corrupted data" :
		status == 3 ? "FAILED: regcache could not register some buffers" :
		status ? "FAILED: a regcache mode could not run" :
		"regcache: zero corrupted messages.");
	return status == 3 ? 2 : status;
}
