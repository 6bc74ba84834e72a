/* SPDX-License-Identifier: MIT */
/*
 * Shared by the tests/uffd_*.c programs: require the userfaultfd monitor
 * (skip with a reason only when this process cannot create a userfaultfd
 * at all), and the "change under a cached region" scenario is t_case_begin/t_case_end in helpers.h.
 *
 * Memory the monitor cannot watch (file-backed, shared) goes through
 * t_uffd_passthrough_case() instead: every get must be uncached.
 */
#ifndef T_UFFD_HELPERS_H
#define T_UFFD_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include "helpers.h"

/* Can this process create a userfaultfd at all? 0, or -errno of the
 * syscall when /dev/userfaultfd cannot help either. */
static inline int t_uffd_probe(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1);
	int err = errno;

	if (fd < 0) {
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
			close(dev);
		}
	}
	if (fd < 0)
		return -err;
	close(fd);
	return 0;
}

/* Make sure the process-wide monitor is the userfaultfd one, or exit: 77
 * when userfaultfd cannot be created here, 1 when it should have worked.
 * Call after creating the first cache. */
static inline void t_uffd_require(void)
{
	const char *name = regcache_monitor_name();
	int probe;

	if (!strcmp(name, "userfaultfd"))
		return;
	if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload")) {
		printf("SKIP: under valgrind the userfaultfd monitor refuses to "
		       "start (monitor \"%s\"); uffd_fallback checks that\n",
		       name);
		exit(T_EXIT_SKIP);
	}
	probe = t_uffd_probe();
	if (probe) {
		printf("SKIP: this process cannot create a userfaultfd (%s: "
		       "seccomp, vm.unprivileged_userfaultfd or an old "
		       "kernel)\n", strerror(-probe));
		exit(T_EXIT_SKIP);
	}
	fprintf(stderr, "monitor is \"%s\", expected \"userfaultfd\" "
		"although userfaultfd() works; run with REGCACHE_LOG=info "
		"for why\n", name);
	exit(T_EXIT_FAIL);
}

/* Before the first cache: the environment must ask for userfaultfd (CTest
 * sets it; set it here too so the program also works by hand). */
static inline void t_uffd_env(void)
{
	setenv("REGCACHE_MONITOR", "userfaultfd", 0);
}



/*
 * Memory the monitor must refuse: a get is served pass-through (counted as
 * uncached, never a hit), so after @change, which must leave fresh pages at
 * [buf, buf+len), a new get sees them. Negative control: DMA through the
 * registration held across the change is not visible.
 */
static inline void t_uffd_passthrough_case(struct io_uring *ring,
					   struct regcache *c, char *buf,
					   size_t len, void (*change)(void *),
					   void *arg, const char *what)
{
	struct regcache_stats st, st2;
	struct regcache_region *r, *held;

	regcache_get_stats(c, &st);
	T_REQUIRE(regcache_get(c, buf, len, 0, &r) == 0);
	T_CHECK(t_dma_visible(ring, r, buf, len, 1));
	regcache_put(c, r);
	T_REQUIRE(regcache_get(c, buf, len, 0, &held) == 0);
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits, st2.hits);
	T_EXPECT_EQ(st.uncached + 2, st2.uncached);
	change(arg);
	if (t_dma_visible(ring, held, buf, len, 3)) {
		fprintf(stderr, "%s: negative control failed: DMA through the "
			"old registration is still visible\n", what);
		t_failures++;
	}
	regcache_put(c, held);
	T_REQUIRE(regcache_get(c, buf, len, 0, &r) == 0);
	if (!t_dma_visible(ring, r, buf, len, 4)) {
		fprintf(stderr, "%s: DMA after the change is not visible\n",
			what);
		t_failures++;
	}
	regcache_put(c, r);
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits, st2.hits);
	T_EXPECT_EQ(st.uncached + 3, st2.uncached);
	printf("ok: %s (served uncached)\n", what);
}

#endif
