/*
 * Description: a change published while a miss is pinning the pages (after
 * the registrar pinned them, before the cache takes its lock again) makes
 * the cache register again instead of indexing the stale registration.
 * The registrar here discards the pages it just pinned (MADV_DONTNEED, as a
 * neighbour's free() of a widened range would) and touches them, so the
 * application now sees new frames. Checked with the page frames: the
 * region returned must pin the frame mapped now, and it must be the second
 * registration. Negative control: the frame the first registration pinned
 * is not the one mapped now, so the change really stranded it.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 65536

static struct t_registrar treg;
static int discard_on_next_reg;
static uint64_t first_pfn;

static int reg_then_discard(void *ctx, void *addr, size_t len,
			    unsigned access, void **handle)
{
	int ret = t_registrar_ops.reg(ctx, addr, len, access, handle);

	if (!ret && discard_on_next_reg) {
		discard_on_next_reg = 0;
		first_pfn = t_pfn(addr);
		T_REQUIRE(madvise(addr, len, MADV_DONTNEED) == 0);
		memset(addr, 0x5a, len);	/* fault in new frames */
	}
	return ret;
}

int main(void)
{
	struct regcache_ops ops = t_registrar_ops;
	struct regcache_params p = { .ops = &ops, .ctx = &treg };
	struct regcache_region *r;
	struct regcache *c;
	long regs_before;
	char *buf;

	ops.reg = reg_then_discard;
	t_registrar_init(&treg, 64);
	T_REQUIRE(regcache_create(&p, &c) == 0);
	t_monitor_require();
	buf = t_map(LEN);
	memset(buf, 1, LEN);
	if (!t_pfn(buf)) {
		printf("SKIP: /proc/self/pagemap shows no frames (needs "
		       "root)\n");
		return T_EXIT_SKIP;
	}

	regs_before = atomic_load(&treg.regs);
	discard_on_next_reg = 1;
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	if (first_pfn == t_pfn(buf)) {
		fprintf(stderr, "negative control failed: the discarded "
			"range still maps the frame first pinned\n");
		t_failures++;
	}
	if (!t_registrar_same_pages(&treg, r, buf)) {
		fprintf(stderr, "stale: the region pins the frames from "
			"before the change published during pinning\n");
		t_failures++;
	}
	/* At least one registration more than the first. The userfaultfd
	 * monitor publishes a REMOVE range again RC_UFFD_DEFER_MS (2 ms)
	 * after reading it, since madvise sends the event before it zaps;
	 * a second pin slower than that (QEMU's emulation) is tainted by the
	 * second publication and registers a third time. Each costs a
	 * registration, never a stale region (checked above). */
	T_CHECK(atomic_load(&treg.regs) >= regs_before + 2);
	regcache_put(c, r);
	if (!t_failures)
		printf("ok: a change while pinning makes the miss register "
		       "again\n");

	regcache_destroy(c);
	t_registrar_fini(&treg);
	return t_exit_status();
}
