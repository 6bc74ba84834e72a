/* SPDX-License-Identifier: MIT */
/*
 * regcache-demo: the workload a child runs for one mode (see demo.c for the
 * story): buffers that live and die the way real ones do, one DMA-checked
 * message at a time.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <regcache.h>

#include "demo.h"
#include "rcache_ucx.h"

/* Of every 10 short-lived slots, 3 use malloc/free, one each the rest. */
static const enum rel slot_kinds[10] = {
	R_FREE, R_MUNMAP, R_FREE, R_RAW_MUNMAP, R_MREMAP,
	R_FREE, R_RAW_MREMAP, R_MADVISE, R_RAW_MADVISE, R_URING_MADVISE,
};

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
	return (size + demo_page_mask) & ~demo_page_mask;
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
		.start = (uintptr_t)addr & ~demo_page_mask,
		.end = ((uintptr_t)addr + len + demo_page_mask) & ~demo_page_mask,
		.kind = kind,
	};
	/* Registrations made from now on postdate this release. */
	demo_dev.epoch = rel_n;
}

/* The release that made the registration behind @handle stale, or NULL. */
static struct release *stale_cause(void *handle)
{
	unsigned slot = (unsigned)dev_buf_index(handle);
	unsigned long epoch;
	uintptr_t s, e;
	size_t len;

	if (demo_opt.verbs) {
		if (!demo_verbs_range(handle, &s, &len, &epoch))
			return NULL;
		e = s + len;
	} else {
		if (slot >= DEV_SLOTS)
			return NULL;
		s = demo_dev.slot[slot].addr;
		e = s + demo_dev.slot[slot].len;
		epoch = demo_dev.slot[slot].epoch;
	}
	/* free() of a heap chunk changes no pages, so it is the cause only
	 * if nothing else (a glibc munmap or trim it led to) overlaps. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = epoch; i < rel_n; i++)
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
	uint64_t r = next_rand() % (((uint64_t)1 << demo_opt.nsizes) - 1);
	unsigned i = 0;
	size_t s;

	/* r < 2^(n-1): class 0; < 2^(n-1) + 2^(n-2): class 1; ... */
	for (uint64_t edge = (uint64_t)1 << (demo_opt.nsizes - 1), w = edge;
	     r >= edge && i + 1 < demo_opt.nsizes; i++) {
		w >>= 1;
		edge += w;
	}
	s = demo_opt.sizes[i];

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
	struct io_uring_sqe *sqe = io_uring_get_sqe(&demo_dev.ring);
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_prep_madvise(sqe, addr, (off_t)len, MADV_DONTNEED);
	ret = io_uring_submit_and_wait(&demo_dev.ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&demo_dev.ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&demo_dev.ring, cqe);
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
			s->arena_len = map_len(demo_opt.sizes[demo_opt.nsizes - 1] * 2);
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
	if (demo_opt.fill)
		/* The application writes its buffer before handing it to the
		 * middleware, as a sender does: the page faults are its own,
		 * not the registration's. */
		memset(s->buf, 0x11, s->size);
	s->live = true;
	s->uses_left = 1 + next_rand() % (2 * demo_opt.lifetime);
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
		s->uses_left = 1 + next_rand() % (2 * demo_opt.lifetime);
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
	nslots = demo_opt.long_slots + demo_opt.short_slots;
	memset(slots, 0, sizeof(slots));
	for (unsigned i = 0; i < nslots; i++) {
		struct slot *s = &slots[i];

		if (i < demo_opt.long_slots) {
			/* Long-lived buffers cover every size, largest first. */
			s->long_lived = true;
			s->kind = R_FREE;
			s->size = demo_opt.sizes[demo_opt.nsizes - 1 - i % demo_opt.nsizes];
		} else {
			s->kind = slot_kinds[(i - demo_opt.long_slots) % 10];
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


static void progress(unsigned long done)
{
	static int last = -1;
	int pct = (int)(done * 100 / demo_opt.iterations);

	if (!demo_opt.progress || pct == last)
		return;
	last = pct;
	if (demo_opt.repeat > 1)
		fprintf(stderr, "\r  running %-34s round %u/%u %3d%%", demo_cur->label,
			demo_round + 1, demo_opt.repeat, pct);
	else
		fprintf(stderr, "\r  running %-34s %3d%%", demo_cur->label, pct);
	if (done == demo_opt.iterations)
		fprintf(stderr, "\r%70s\r", "");
}

/* --profile: charge the time since the last lap to @p. One clock read per
 * step, so that the steps add up to the loop's time. */
static double lap_t;

static inline void lap(enum phase p)
{
	double t;

	if (!demo_opt.profile)
		return;
	t = now_ns();
	demo_phase_ns[p] += t - lap_t;
	lap_t = t;
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
	lap(P_DMA);
	ret = demo_cache_get(s->buf, s->size, &region, &handle);
	lap(P_GET);
	if (ret) {
		res->get_errors++;
		if (res->get_errors == 1)
			fprintf(stderr, "\n%s: get of %p+%zu failed: %s\n",
				demo_cur->label, (void *)s->buf, s->size,
				strerror(-ret));
		return 0;
	}
	ret = demo_opt.verbs
		? demo_verbs_dma_check(handle, s->buf + off, len, op)
		: dev_dma_check(&demo_dev, handle, s->buf + off, len, op);
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
				demo_cur->label, (void *)(s->buf + off), len,
				strerror(-ret));
	}
	lap(P_DMA);
	demo_cache_put(region);
	lap(P_PUT);
	return 0;
}

static int run_workload(struct result *res)
{
	unsigned long op;
	double t0;
	int ret;

	rng = demo_opt.seed * 0x9e3779b97f4a7c15ull + 1;
	slots_init();
	for (unsigned i = 0; i < demo_opt.long_slots; i++)
		if ((ret = slot_alloc(&slots[i])))
			return ret;
	memset(demo_phase_ns, 0, sizeof(demo_phase_ns));
	t0 = now_ns();
	lap_t = t0;
	for (op = 0; op < demo_opt.iterations; op++) {
		struct slot *s;

		if (next_rand() % 100 < demo_opt.long_share || !demo_opt.short_slots)
			s = &slots[next_rand() % demo_opt.long_slots];
		else
			s = &slots[demo_opt.long_slots +
				   next_rand() % demo_opt.short_slots];
		if (!s->live && (ret = slot_alloc(s)))
			return ret;
		lap(P_ALLOC);
		message(s, op, res);
		if (!s->long_lived && --s->uses_left == 0 &&
		    (ret = slot_release(s, res)))
			return ret;
		lap(P_RELEASE);
		if ((op & 255) == 0)
			progress(op);
	}
	res->secs = (now_ns() - t0) / 1e9;
	res->deregs = atomic_load(&demo_dev.deregs);
	memcpy(res->phase_ns, demo_phase_ns, sizeof(res->phase_ns));
	res->ops = op;
	progress(op);
	return 0;
}

/* In the child: run one mode and report. */
void demo_child(const struct mode *m, int fd)
{
	struct result res = { 0 };
	int ret;

	demo_cur = m;
	/* Keep glibc serving >= 128 KiB with mmap for the whole run (its
	 * dynamic threshold would move them to the heap after one free). */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	/* The io_uring ring stays: IORING_OP_MADVISE releases buffers. With
	 * --verbs the ring is all it is for (the device is the RDMA one), so
	 * it gets no fixed-buffer table, which needs 5.13. */
	ret = dev_init(&demo_dev, demo_opt.verbs);
	if (!ret && demo_opt.verbs)
		ret = demo_verbs_init();
	if (!ret)
		ret = demo_cache_setup();
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
	/* --verbs: the regcache rows register inside the registrar. */
	res.phases_known[P_REG] = res.phases_known[P_DEREG] =
		m->kind == K_NOCACHE || m->kind == K_NAIVE ||
		(m->kind == K_REGCACHE && !demo_opt.verbs);
	ret = run_workload(&res);
	if (ret) {
		res.status = ret;
		snprintf(res.info, sizeof(res.info), "workload failed: %s",
			 strerror(-ret));
	}
	res.regs = atomic_load(&demo_dev.regs);
	res.reg_bytes = atomic_load(&demo_dev.reg_bytes);
	demo_cache_teardown(&res);
	if (demo_opt.verbs && m->kind == K_REGCACHE) {
		/* Registered by the registrar, not through demo_dev. */
		res.regs = res.st.registrations;
		res.reg_bytes = 0;
	}
	slots_fini();
	if (demo_opt.verbs)
		demo_verbs_fini();
out:
	if (write(fd, &res, sizeof(res)) != sizeof(res))
		_exit(3);
	_exit(0);
}
