/* SPDX-License-Identifier: MIT */
/*
 * Shared by the tests/bpf_*.c programs: require the eBPF monitor (skip with
 * a reason when BPF cannot be loaded here), and the "change under a cached
 * region" scenario proven with DMA:
 *
 *   1. get + put: the range is cached; get again: a hit, held as @held.
 *   2. the test changes the pages behind the range and maps fresh memory
 *      at the same address.
 *   3. negative control: DMA through @held (invalidated but still pinned
 *      while held) lands in the old pages, so the app does NOT see it:
 *      proves the change really made the old registration stale.
 *   4. put @held; get: must be a miss, and DMA through it must be visible.
 */
#ifndef T_BPF_HELPERS_H
#define T_BPF_HELPERS_H

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "helpers.h"

/* Can this process load tracing BPF programs at all? Probed with the
 * smallest tracepoint program; only EPERM/EACCES mean "not here". */
static inline int t_bpf_probe(void)
{
	struct bpf_insn insns[] = {
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },	/* r0 = 0 */
		{ .code = 0x95 },				/* exit */
	};
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_TRACEPOINT;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (uintptr_t)"GPL";
	fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Make sure the process-wide monitor is the bpf one, or exit: 77 when BPF
 * is not permitted here, 1 when it should have worked. Call after creating
 * the first cache. */
static inline void t_bpf_require(void)
{
	const char *name = regcache_monitor_name();
	int probe;

	if (!strcmp(name, "bpf"))
		return;
	probe = t_bpf_probe();
	if (probe == -EPERM || probe == -EACCES) {
		printf("SKIP: this process may not load BPF programs (%s); "
		       "run as root or with CAP_BPF+CAP_PERFMON\n",
		       strerror(-probe));
		exit(T_EXIT_SKIP);
	}
	fprintf(stderr, "monitor is \"%s\", expected \"bpf\" (BPF probe: %s); "
		"run with REGCACHE_MONITOR=bpf REGCACHE_LOG=info for why\n",
		name, probe ? strerror(-probe) : "loads fine");
	exit(T_EXIT_FAIL);
}

/* Before the first cache: the environment must ask for bpf (CTest sets it;
 * set it here too so the program also works by hand). */
static inline void t_bpf_env(void)
{
	setenv("REGCACHE_MONITOR", "bpf", 0);
}

struct t_bpf_case {
	struct io_uring *ring;
	struct regcache *cache;
	struct regcache_region *held;
	char *buf;
	size_t len;
	struct regcache_stats before;
};

/* Step 1: cache [buf, buf+len) and hold it through a hit. */
static inline void t_bpf_case_begin(struct t_bpf_case *k, struct io_uring *ring,
				    struct regcache *c, void *buf, size_t len)
{
	struct regcache_region *r;
	struct regcache_stats st;

	k->ring = ring;
	k->cache = c;
	k->buf = buf;
	k->len = len;
	T_REQUIRE(regcache_get(c, buf, len, 0, &r) == 0);
	T_CHECK(t_dma_visible(ring, r, buf, len, 1));
	regcache_put(c, r);
	regcache_get_stats(c, &st);
	T_REQUIRE(regcache_get(c, buf, len, 0, &k->held) == 0);
	regcache_get_stats(c, &k->before);
	T_EXPECT_EQ(st.hits + 1, k->before.hits);
	T_CHECK(t_dma_visible(ring, k->held, buf, len, 2));
}

/*
 * Steps 3 and 4, after the test changed the range (step 2). @stale_expected:
 * whether the change is one that really strands the old pages (the negative
 * control); false for changes the kernel keeps coherent (MADV_FREE without
 * memory pressure). Returns true when the new get was a miss with visible
 * DMA.
 */
static inline bool t_bpf_case_end(struct t_bpf_case *k, const char *what,
				  bool stale_expected)
{
	struct regcache_region *r;
	struct regcache_stats st;
	bool visible, ok = true;

	if (stale_expected) {
		visible = t_dma_visible(k->ring, k->held, k->buf, k->len, 3);
		if (visible) {
			fprintf(stderr, "%s: negative control failed: DMA "
				"through the old registration is still "
				"visible, so this change is not tested\n",
				what);
			t_failures++;
		}
	}
	regcache_put(k->cache, k->held);
	T_REQUIRE(regcache_get(k->cache, k->buf, k->len, 0, &r) == 0);
	regcache_get_stats(k->cache, &st);
	if (st.hits != k->before.hits) {
		fprintf(stderr, "%s: the get after the change was a hit on a "
			"stale region\n", what);
		t_failures++;
		ok = false;
	}
	if (!t_dma_visible(k->ring, r, k->buf, k->len, 4)) {
		fprintf(stderr, "%s: DMA after the change is not visible "
			"(stale registration)\n", what);
		t_failures++;
		ok = false;
	}
	regcache_put(k->cache, r);
	if (ok)
		printf("ok: %s\n", what);
	return ok;
}

#endif
