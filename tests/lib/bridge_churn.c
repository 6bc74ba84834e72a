/* SPDX-License-Identifier: MIT */
/*
 * Description: the buffers of a middleware message loop, changed between
 * messages by every kind of release (bridge_churn.h).
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>

#include "bridge_churn.h"
#include "uring_madvise.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

const char *const churn_kind_name[CHURN_NKINDS] = {
	[CHURN_NONE] = "no change",
	[CHURN_FREE] = "free + malloc",
	[CHURN_MUNMAP] = "munmap + mmap",
	[CHURN_RAW_MUNMAP] = "raw munmap + mmap",
	[CHURN_MREMAP] = "mremap shrink + grow",
	[CHURN_RAW_MREMAP] = "raw mremap over it",
	[CHURN_MADVISE] = "madvise DONTNEED",
	[CHURN_RAW_MADVISE] = "raw madvise DONTNEED",
	[CHURN_URING_MADVISE] = "io_uring madvise DONTNEED",
};

#define PROT (PROT_READ | PROT_WRITE)
#define FLAGS (MAP_PRIVATE | MAP_ANONYMOUS)
#define POISON 0xee

bool churn_kind_is_raw(enum churn_kind kind)
{
	return kind == CHURN_RAW_MUNMAP || kind == CHURN_RAW_MREMAP ||
	       kind == CHURN_RAW_MADVISE || kind == CHURN_URING_MADVISE;
}

int churn_changed_side(unsigned round)
{
	if (round == 0)
		return -1;
	return round % 2 ? CHURN_SENDER : CHURN_RECEIVER;
}

static size_t map_len(const struct churn *c)
{
	long page = sysconf(_SC_PAGESIZE);

	return (c->len + page - 1) & ~(size_t)(page - 1);
}

static void *raw_mmap(void *hint, size_t len, int flags)
{
	long p = syscall(SYS_mmap, hint, len, PROT, flags, -1, 0);

	return p < 0 && p > -4096 ? MAP_FAILED : (void *)p;
}

/*
 * The ring of CHURN_URING_MADVISE, which must take IORING_OP_MADVISE
 * (Linux 5.6). Without it that kind cannot run, and a loop without it
 * would pass on what it never tried: printed with the reason, and FAIL.
 * Return: 0, or -errno.
 */
static int ring_init(struct churn *c)
{
	struct io_uring_probe *probe;
	const char *why = NULL;
	int ret;

	c->ring = calloc(1, sizeof(*c->ring));
	if (!c->ring)
		return -ENOMEM;
	ret = io_uring_queue_init(4, c->ring, 0);
	if (ret) {
		free(c->ring);
		c->ring = NULL;
		fprintf(stderr, "churn: %s not possible here: "
			"io_uring_queue_init: %s (FAIL)\n",
			churn_kind_name[CHURN_URING_MADVISE], strerror(-ret));
		return ret;
	}
	probe = io_uring_get_probe_ring(c->ring);
	if (!probe)
		why = "io_uring_get_probe_ring failed (no IORING_REGISTER_PROBE: "
		      "a kernel before 5.6)";
	else if (!io_uring_opcode_supported(probe, IORING_OP_MADVISE))
		why = "the kernel's io_uring does not take IORING_OP_MADVISE";
	if (probe)
		io_uring_free_probe(probe);
	if (why) {
		fprintf(stderr, "churn: %s not possible here: %s (FAIL)\n",
			churn_kind_name[CHURN_URING_MADVISE], why);
		io_uring_queue_exit(c->ring);
		free(c->ring);
		c->ring = NULL;
		return -EOPNOTSUPP;
	}
	return 0;
}

int churn_init(struct churn *c, enum churn_side side, size_t len)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->side = side;
	c->len = len;
	ret = ring_init(c);
	if (ret)
		return ret;
	/* A fixed threshold: blocks of len are mmap-served, and stay so after
	 * a free (glibc's dynamic threshold would rise past them). */
	if (!mallopt(M_MMAP_THRESHOLD, (int)(len / 2)))
		return -EINVAL;
	for (int k = 0; k < CHURN_NKINDS; k++) {
		if (k == CHURN_FREE)
			c->buf[k] = malloc(len);
		else
			c->buf[k] = mmap(NULL, map_len(c), PROT, FLAGS, -1, 0);
		if (!c->buf[k] || c->buf[k] == MAP_FAILED)
			return -ENOMEM;
	}
	return 0;
}

/* New pages at @old (or elsewhere, counted), by @kind. */
static char *change(struct churn *c, enum churn_kind kind, char *old)
{
	size_t len = map_len(c);
	void *p = old, *y;
	int ret;

	switch (kind) {
	case CHURN_NONE:
		break;
	case CHURN_FREE:
		free(old);
		p = malloc(c->len);
		break;
	case CHURN_MUNMAP:
		if (munmap(old, len))
			return NULL;
		p = mmap(old, len, PROT, FLAGS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED && p != old) {
			munmap(p, len);
			p = MAP_FAILED;
		}
		if (p == MAP_FAILED)
			p = mmap(NULL, len, PROT, FLAGS, -1, 0);
		break;
	case CHURN_RAW_MUNMAP:
		if (syscall(SYS_munmap, old, len))
			return NULL;
		p = raw_mmap(old, len, FLAGS | MAP_FIXED_NOREPLACE);
		if (p == MAP_FAILED)
			p = raw_mmap(NULL, len, FLAGS);
		break;
	case CHURN_MREMAP:
		/* Shrink to a page, grow back: the tail gets new pages. Not
		 * mremap(MREMAP_FIXED): UCX 1.13's mremap hook passes no
		 * new_address, so under its hooks that call fails (ENOMEM). */
		if (mremap(old, len, 4096, 0) != old)
			return NULL;
		p = mremap(old, 4096, len, 0);
		if (p == MAP_FAILED)
			p = mremap(old, 4096, len, MREMAP_MAYMOVE);
		break;
	case CHURN_RAW_MREMAP:
		/* Fresh pages moved over the buffer. */
		y = raw_mmap(NULL, len, FLAGS);
		if (y == MAP_FAILED)
			return NULL;
		memset(y, 0x5a, len);	/* its own pages, before the move */
		p = (void *)syscall(SYS_mremap, y, len, len,
				    MREMAP_MAYMOVE | MREMAP_FIXED, old);
		if (p != old)
			return NULL;
		break;
	case CHURN_MADVISE:
		if (madvise(old, len, MADV_DONTNEED))
			return NULL;
		break;
	case CHURN_RAW_MADVISE:
		if (syscall(SYS_madvise, old, len, MADV_DONTNEED))
			return NULL;
		break;
	case CHURN_URING_MADVISE:
		/* The kernel does it for the ring: no libc call is made. */
		ret = t_uring_madvise(c->ring, old, len, MADV_DONTNEED);
		if (ret) {
			errno = -ret;
			return NULL;
		}
		break;
	case CHURN_NKINDS:
		return NULL;
	}
	if (!p || p == MAP_FAILED)
		return NULL;
	if (p != old)
		c->moved++;
	return p;
}

static uint64_t word(unsigned round, enum churn_kind kind, size_t i)
{
	uint64_t x = ((uint64_t)round << 32 | (uint64_t)kind << 24) ^
		     (i * 0x9e3779b97f4a7c15ull);

	x ^= x >> 29;
	return x * 0xbf58476d1ce4e5b9ull;
}

char *churn_next(struct churn *c, unsigned round, enum churn_kind kind)
{
	char *b = c->buf[kind];

	if (churn_changed_side(round) == (int)c->side) {
		b = change(c, kind, b);
		if (!b) {
			fprintf(stderr, "churn: %s of %p failed: %s (FAIL)\n",
				churn_kind_name[kind], (void *)c->buf[kind],
				strerror(errno));
			return NULL;
		}
		c->buf[kind] = b;
	}
	if (c->side == CHURN_SENDER) {
		uint64_t *w = (uint64_t *)b;

		for (size_t i = 0; i < c->len / 8; i++)
			w[i] = word(round, kind, i);
	} else {
		memset(b, POISON, c->len);
	}
	return b;
}

bool churn_check(struct churn *c, unsigned round, enum churn_kind kind,
		 const char *buf)
{
	const uint64_t *w = (const uint64_t *)buf;
	int side = churn_changed_side(round);
	bool ok = true;

	for (size_t i = 0; i < c->len / 8; i++)
		if (w[i] != word(round, kind, i)) {
			ok = false;
			break;
		}
	if (side >= 0) {
		c->msgs[kind][side]++;
		c->bad[kind][side] += !ok;
	} else if (!ok) {
		/* Round 0 has no change: a wrong message is a broken run. */
		fprintf(stderr, "churn: round 0 message %s corrupted (FAIL)\n",
			churn_kind_name[kind]);
		c->bad[CHURN_NONE][CHURN_SENDER]++;
	}
	return ok;
}

unsigned long churn_report(const struct churn *c, const char *title,
			   unsigned long *raw)
{
	unsigned long total = 0, r = 0, n = 0;

	printf("%s\n", title);
	printf("  %-26s %16s %16s\n", "change", "sender's buffer",
	       "receiver's buffer");
	for (int k = 0; k < CHURN_NKINDS; k++) {
		printf("  %-26s %7lu of %-6lu %7lu of %-6lu\n",
		       churn_kind_name[k], c->bad[k][0], c->msgs[k][0],
		       c->bad[k][1], c->msgs[k][1]);
		for (int s = 0; s < 2; s++) {
			total += c->bad[k][s];
			n += c->msgs[k][s];
			if (churn_kind_is_raw(k))
				r += c->bad[k][s];
		}
	}
	printf("  corrupted: %lu of %lu messages (%lu after raw syscalls "
	       "and io_uring); "
	       "buffers moved: %lu\n", total, n, r, c->moved);
	if (raw)
		*raw = r;
	return total;
}

int churn_verdict(const struct churn *c, const char *test, const char *title,
		  bool expect_stale, const char *stale_expected)
{
	unsigned long bad = churn_report(c, title, NULL);

	printf("%s: %lu corrupted\n", test, bad);
	if (c->bad[CHURN_NONE][CHURN_SENDER] ||
	    c->bad[CHURN_NONE][CHURN_RECEIVER]) {
		printf("%s: a message with no change was corrupted (FAIL)\n",
		       test);
		return 1;
	}
	if (!expect_stale && bad != 0) {
		printf("%s: expected no corrupted message (FAIL)\n", test);
		return 1;
	}
	/* The control must see every kind that libc does not, in this run:
	 * a kind it shows no corruption for proves nothing about a cache. */
	for (int k = 0; expect_stale && k < CHURN_NKINDS; k++) {
		if (churn_kind_is_raw(k) && !c->bad[k][0] && !c->bad[k][1]) {
			printf("%s: expected %s, none after %s (FAIL)\n", test,
			       stale_expected, churn_kind_name[k]);
			return 1;
		}
	}
	printf("%s: PASS\n", test);
	return 0;
}
