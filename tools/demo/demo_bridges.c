/* SPDX-License-Identifier: MIT */
/*
 * regcache-demo's bridge rows (docs/bridges.md):
 *   ucx-bridge       UCX's ucs_rcache fed by libregcache-ucx, UCX's libc
 *                    hooks off, as `regcache-run` starts a program: the
 *                    child re-executes the demo with LD_PRELOAD and
 *                    UCX_MEM_MMAP_HOOK_MODE=none in its environment, since
 *                    libucs reads them at exec
 *   fabric           libfabric's MR cache (1.17 or 2.1) on its own default
 *                    monitor (memhooks)
 *   fabric-bridge    the same cache on regcache's monitor, imported by
 *                    libregcache-fabric
 * The libfabric rows drive the real cache from Debian's static libfabric
 * the way its verbs and efa providers do (there is no RDMA device here;
 * src/bridge/fabric_layout.h), with the demo's io_uring device as
 * add_region/delete_region.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/env.h"
#include "demo.h"
#include "rcache_ucx.h"

#ifndef DEMO_BRIDGE_DIR
#define DEMO_BRIDGE_DIR "."
#endif

/* $REGCACHE_BRIDGE_DIR; else the bridges built beside the demo, or, when
 * the demo is installed, the installed ones (<bindir>/../<libdir>). */
static const char *bridge_dir(void)
{
	static char installed[1024];	/* short enough for the paths built on it */
	const char *d = rc_env_str(RC_ENV_BRIDGE_DIR);

	if (d)
		return d;
#ifdef DEMO_LIB_FROM_BINDIR
	if (installed[0] || demo_installed_path(DEMO_LIB_FROM_BINDIR, "",
						installed, sizeof(installed)))
		return installed;
#endif
	return DEMO_BRIDGE_DIR;
}

/* ------------------------------------------------------------------------
 * ucx-bridge: re-execute the demo as the child (the regcached row does too)
 * ---------------------------------------------------------------------- */

#define CHILD_ENV "REGCACHE_DEMO_BRIDGE_CHILD"
#define OPT_ENV "REGCACHE_DEMO_BRIDGE_OPT"

static void hex_encode(char *out, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", ((const unsigned char *)p)[i]);
}

static int hex_decode(void *p, size_t n, const char *in)
{
	if (!in || strlen(in) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(in + 2 * i, "%2x", &v) != 1)
			return -1;
		((unsigned char *)p)[i] = (unsigned char)v;
	}
	return 0;
}

void demo_reexec(const struct mode *m, int fd)
{
	char child[64];
	char *opt;

	snprintf(child, sizeof(child), "%d:%d:%u",
		 (int)(m - demo_modes), fd, demo_round);
	opt = malloc(2 * sizeof(demo_opt) + 1);
	if (!opt)
		return;
	hex_encode(opt, &demo_opt, sizeof(demo_opt));
	setenv(CHILD_ENV, child, 1);
	setenv(OPT_ENV, opt, 1);
	execl("/proc/self/exe", "regcache-demo", (char *)NULL);
	free(opt);
}

/* In the forked child of run_mode(): run @m here, or through exec. */
void demo_bridge_child(const struct mode *m, int fd)
{
	char lib[4096];

	if (m->kind != K_UCX_BRIDGE)
		demo_child(m, fd);
	snprintf(lib, sizeof(lib), "%s/libregcache-ucx.so.0", bridge_dir());
	setenv("LD_PRELOAD", lib, 1);
	setenv("UCX_MEM_MMAP_HOOK_MODE", "none", 1);
	demo_reexec(m, fd);
	_exit(4);	/* the parent reports "child exited with status 4" */
}

/* In main(), first: if this process is a re-executed child, run it. */
void demo_bridge_exec_child(void)
{
	const char *c = rc_env_str(RC_ENV_DEMO_BRIDGE_CHILD);
	int idx, fd;
	unsigned round;

	if (!c || sscanf(c, "%d:%d:%u", &idx, &fd, &round) != 3 || idx < 0 ||
	    idx >= NMODES || hex_decode(&demo_opt, sizeof(demo_opt),
					rc_env_str(RC_ENV_DEMO_BRIDGE_OPT)))
		return;
	unsetenv(CHILD_ENV);
	unsetenv(OPT_ENV);
	demo_page_mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
	demo_round = round;
	demo_opt.progress = false;
	demo_child(&demo_modes[idx], fd);
}

/* ------------------------------------------------------------------------
 * libfabric's MR cache, on the layout of the version linked in (a row of
 * src/bridge/fabric_layout.h: 1.17.0, 2.1.0; tests/bridge-fabric.c drives
 * the same cache)
 * ---------------------------------------------------------------------- */

#ifdef TOOLS_HAVE_FABRIC
#include "bridge/fabric_layout.h"

static struct lf_cache cache;

static int add_region(struct lf_cache *c, void *e)
{
	struct iovec *iov = lf_entry_iov(e);

	return dev_reg(&demo_dev, iov->iov_base, iov->iov_len,
		       lf_entry_handle(c, e));
}

static void delete_region(struct lf_cache *c, void *e)
{
	dev_dereg(&demo_dev, *lf_entry_handle(c, e));
}

static int fabric_setup(bool bridge, char *info, size_t len)
{
	if (bridge) {
		char lib[4096];
		int (*stats)(unsigned long *);
		unsigned long st[3];

		/* Loaded in this child only: its constructor imports. */
		snprintf(lib, sizeof(lib), "%s/libregcache-fabric.so.0",
			 bridge_dir());
		if (!dlopen(lib, RTLD_NOW | RTLD_GLOBAL)) {
			snprintf(info, len, "cannot load libregcache-fabric.so.0");
			return -ENOENT;
		}
		stats = (int (*)(unsigned long *))dlsym(RTLD_DEFAULT,
							"regcache_fabric_bridge_stats");
		if (!stats || !stats(st)) {
			snprintf(info, len, "regcache's monitor was not imported");
			return -ENOTSUP;
		}
	}
	if (lf_cache_open(&cache, NULL, add_region, delete_region))
		return -EIO;
	snprintf(info, len, "%s", default_monitor == memhooks_monitor ? "memhooks" :
		 default_monitor == uffd_monitor ? "userfaultfd" : "import");
	return 0;
}

static int fabric_get(void *addr, size_t len, void **region, void **handle)
{
	void *e;

	if (lf_cache_search(&cache, addr, len, &e))
		return -EIO;
	*region = e;
	*handle = *lf_entry_handle(&cache, e);
	return 0;
}

static void fabric_put(void *region)
{
	lf_cache_delete(&cache, region);
}

static void fabric_teardown(void)
{
	lf_cache_close(&cache);
}
#else
static int fabric_setup(bool bridge, char *info, size_t len)
{
	(void)bridge, (void)info, (void)len;
	return -ENOSYS;
}
static int fabric_get(void *addr, size_t len, void **region, void **handle)
{
	(void)addr, (void)len, (void)region, (void)handle;
	return -ENOSYS;
}
static void fabric_put(void *region)
{
	(void)region;
}
static void fabric_teardown(void)
{
}
#endif

/* ------------------------------------------------------------------------
 * The cache interface of demo_caches.c for the bridge rows
 * ---------------------------------------------------------------------- */

static struct ucx_cache *ucx;
static char fabric_info[64];

bool demo_bridge_available(const struct mode *m, char *why, size_t len)
{
	char lib[4096];

	snprintf(lib, sizeof(lib), "%s/libregcache-%s.so.0", bridge_dir(),
		 m->kind == K_UCX_BRIDGE ? "ucx" : "fabric");
	if (m->kind == K_UCX_BRIDGE && !ucx_version()) {
		snprintf(why, len, "not built (libucx-dev missing at build time)");
		return false;
	}
#ifndef TOOLS_HAVE_FABRIC
	if (m->kind != K_UCX_BRIDGE) {
		snprintf(why, len, "not built (needs libfabric-dev 1.17 or 2.1)");
		return false;
	}
#endif
	if (m->kind != K_FABRIC && access(lib, R_OK)) {
		snprintf(why, len, "no %.80s (set REGCACHE_BRIDGE_DIR)", lib);
		return false;
	}
	/* No monitor, no claim: the bridges would stand back. */
	if (m->kind != K_FABRIC && !strcmp(regcache_monitor_name(), "none")) {
		snprintf(why, len, "no regcache monitor here: the bridge stands back");
		return false;
	}
	return true;
}

int demo_bridge_setup(void)
{
	switch (demo_cur->kind) {
	case K_UCX_BRIDGE:
		return ucx_cache_create(&demo_dev, demo_opt.max_regions, true, &ucx);
	case K_FABRIC:
	case K_FABRIC_BRIDGE:
		return fabric_setup(demo_cur->kind == K_FABRIC_BRIDGE, fabric_info,
				    sizeof(fabric_info));
	default:
		return -EINVAL;
	}
}

int demo_bridge_get(void *addr, size_t len, void **region, void **handle)
{
	if (demo_cur->kind == K_UCX_BRIDGE)
		return ucx_cache_get(ucx, addr, len, region, handle);
	return fabric_get(addr, len, region, handle);
}

void demo_bridge_put(void *region)
{
	if (demo_cur->kind == K_UCX_BRIDGE)
		ucx_cache_put(ucx, region);
	else
		fabric_put(region);
}

void demo_bridge_teardown(void)
{
	if (demo_cur->kind == K_UCX_BRIDGE)
		ucx_cache_destroy(ucx);
	else
		fabric_teardown();
}
