/* SPDX-License-Identifier: MIT */
/*
 * Description: UCX's real registration cache (ucs_rcache from libucs, UCM
 * unmap events) never serves a stale registration once the UCX bridge feeds
 * it regcache's monitor. The device is io_uring's fixed-buffer table: a
 * registration pins pages, and READ_FIXED through it shows whether the
 * application's pages are the pinned ones.
 *
 * Each scenario caches a buffer, changes its pages behind UCX's back (raw
 * munmap, raw mremap, raw and io_uring MADV_DONTNEED, free of an
 * mmap-served malloc block; libc munmap, which UCX's hooks see), maps fresh
 * memory at the address, and looks it up again; a cross-thread race changes pages while another thread looks
 * up. Argument:
 *   stale  UCX's own hooks only (no bridge): stale registrations must be
 *          seen (the negative control: the oracle can fail)
 *   clean  the bridge is loaded (linked, or LD_PRELOADed by regcache-run):
 *          zero stale registrations
 *   kept   the bridge is linked after libucs (bridge-ucx-unreached), so
 *          UCX's lookups do not reach it, and UCX_MEM_MMAP_HOOK_MODE=none
 *          as regcache-run sets it: the bridge must put UCX's hooks back,
 *          so a libc munmap is seen (what the bridge adds from its thread
 *          races the lookups and is not checked)
 */
#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bridge_oracle.h"
#include "bridge_ucx_rcache.h"

static ucs_rcache_t *rcache;

static int ucx_get(void *buf, size_t len, void **entry, void **handle)
{
	ucs_rcache_region_t *r;

	if (rc_ucx_rcache_get(rcache, buf, len, (size_t)getpagesize(),
			      PROT_READ | PROT_WRITE, NULL, &r) != UCS_OK)
		return -EFAULT;
	*entry = r;
	*handle = ((struct b_ucx_region *)r)->handle;
	return 0;
}

static void ucx_put(void *entry)
{
	ucs_rcache_region_put(rcache, entry);
}

static const struct b_cache ucx = { ucx_get, ucx_put };

int main(int argc, char **argv)
{
	long (*forwarded)(void) =
		(long (*)(void))dlsym(RTLD_DEFAULT, "regcache_ucx_bridge_forwarded");
	bool expect_stale = argc > 1 && !strcmp(argv[1], "stale");
	bool kept = argc > 1 && !strcmp(argv[1], "kept");
	struct regcache *c;
	unsigned long stale = 0, race_stale, checked;
	bool bridged;

	t_registrar_init(&b_reg, 4096);
	/* A regcache cache in the same process, so that the monitor the
	 * bridge uses is the one asked for (and skips say why). */
	c = t_registrar_cache(&b_reg, 0, 0, 0);
	if (!expect_stale)
		t_monitor_require();
	rcache = b_ucx_rcache_create(&b_reg, "bridge-ucx");
	if (!rcache) {
		fprintf(stderr, "ucs_rcache_create failed: UCX has neither its "
			"hooks nor an external event source\n");
		return T_EXIT_FAIL;
	}
	bridged = forwarded && forwarded() >= 0;
	fprintf(stderr, "UCX rcache; bridge %s; UCX_MEM_MMAP_HOOK_MODE=%s; "
		"regcache monitor %s\n", bridged ? "forwarding" : "absent",
		getenv("UCX_MEM_MMAP_HOOK_MODE") ? getenv("UCX_MEM_MMAP_HOOK_MODE") : "(default)",
		regcache_monitor_name());
	T_CHECK(bridged == !expect_stale);

	if (kept) {
		/* UCX's own hooks, put back by the bridge, see libc. */
		T_EXPECT_EQ(0, b_scenario(&ucx, B_LIBC_MUNMAP));
		goto out;
	}
	for (int k = 0; k < B_NCHANGES; k++)
		stale += b_scenario(&ucx, k) > 0;
	race_stale = b_race(&ucx, T_SCALE(5000), &checked);
	fprintf(stderr, "  cross-thread race: %lu stale of %lu checked "
		"lookups\n", race_stale, checked);
	T_CHECK(checked > 0);
	if (expect_stale) {
		/* UCX's hooks cannot see raw syscalls or io_uring. */
		T_CHECK(stale >= 4);
		T_CHECK(race_stale > 0);
	} else {
		T_EXPECT_EQ(0, stale);
		T_EXPECT_EQ(0, race_stale);
		T_CHECK(forwarded() > 0);
	}
out:
	ucs_rcache_destroy(rcache);
	regcache_destroy(c);
	t_registrar_fini(&b_reg);
	return t_exit_status();
}
