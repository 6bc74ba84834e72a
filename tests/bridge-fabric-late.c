/* SPDX-License-Identifier: MIT */
/*
 * Description: a libfabric loaded after the preloaded bridge's constructor
 * ran (Open MPI's ofi components dlopen it at MPI_Init) still gets
 * regcache's monitor imported before anything else can import or open a
 * domain: the bridge's interposed fi_getinfo/fi_fabric/fi_open import at
 * the component's first call. Started by regcache-run (as a user runs a
 * job), the program has no libfabric of its own and dlopens a component
 * (RTLD_LOCAL) that links the system's libfabric.so.1. Checked: nothing
 * imported before the first call; the bridge's monitor imported after it;
 * a second importer (as Open MPI's own) refused by libfabric. Argument:
 *   bridge  under regcache-run
 *   none    without the bridge (negative control): the second importer is
 *           the first and libfabric takes it
 * argv[2]: the component's path.
 *
 * What this does not show with data: Debian's libfabric.so.1 keeps its MR
 * cache internal and its libfabric.a is not position-independent, so no
 * late-loaded object here can drive the cache with the DMA oracle. The
 * monitor imported here is the one bridge-fabric@* checks that way.
 */
#include <dlfcn.h>
#include <string.h>

#include "helpers.h"

int main(int argc, char **argv)
{
	int (*stats)(unsigned long *) =
		(int (*)(unsigned long *))dlsym(RTLD_DEFAULT,
						"regcache_fabric_bridge_stats");
	bool bridge = argc > 1 && !strcmp(argv[1], "bridge");
	int (*first_call)(void), (*import_other)(void);
	unsigned (*version)(void);
	unsigned long st[3];
	struct t_registrar reg;
	struct regcache *c;
	void *h;
	int ret;

	T_REQUIRE(argc == 3);
	t_registrar_init(&reg, 16);
	c = t_registrar_cache(&reg, 0, 0, 0);
	if (bridge) {
		t_monitor_require();
		T_REQUIRE(stats);
		T_EXPECT_EQ(0, stats(st));	/* nothing to import into yet */
	}
	T_CHECK(!dlsym(RTLD_DEFAULT, "fi_version"));
	/* libfabric arrives now, as a component's dependency. */
	h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
		return T_EXIT_FAIL;
	}
	first_call = (int (*)(void))dlsym(h, "module_first_call");
	import_other = (int (*)(void))dlsym(h, "module_import_other");
	version = (unsigned (*)(void))dlsym(h, "module_version");
	T_REQUIRE(first_call && import_other && version);
	/* fi_version() is no entry point: the bridge does not import yet. */
	fprintf(stderr, "bridge-fabric-late: libfabric %u.%u\n",
		version() >> 16, version() & 0xffff);
	if (bridge)
		T_EXPECT_EQ(0, stats(st));	/* loaded, not yet called */
	ret = first_call();
	fprintf(stderr, "libfabric loaded late (RTLD_LOCAL); first fi_getinfo: "
		"%d; bridge %s; regcache monitor %s\n", ret,
		!stats ? "absent" : stats(st) ? "imported" : "not imported",
		regcache_monitor_name());
	ret = import_other();
	fprintf(stderr, "a second importer (as Open MPI's): %d (%s)\n", ret,
		ret ? "refused" : "accepted");
	if (bridge) {
		T_EXPECT_EQ(1, stats(st));
		T_CHECK(ret != 0);
	} else {
		T_CHECK(!stats);
		T_EXPECT_EQ(0, ret);
	}
	regcache_destroy(c);
	t_registrar_fini(&reg);
	return t_exit_status();
}
