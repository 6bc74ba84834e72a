/*
 * Description: seccomp filters that deny a system call the library uses:
 * bpf, userfaultfd and membarrier before the first cache exists, and
 * membarrier, ioctl and openat after it exists (the monitor is running),
 * each once failing with EPERM and once with ENOSYS. In every case the
 * library falls back or fails with a clear error: creating a cache, gets
 * and puts across munmap, MAP_FIXED, mremap and MADV_DONTNEED of the
 * buffer, DMA-checked (0 stale), a second cache, and regcache_destroy()
 * all return. Each case runs in a child that is killed after 20 s (60 s
 * under a sanitizer), so a hang fails the test instead of hanging CI.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 65536

struct deny {
	const char *name;
	long nr;
	bool after;	/* installed once a cache (and the monitor) exists */
	const char *needed_by;	/* the monitor that cannot run without it */
};

static const struct deny denies[] = {
	{ "bpf", SYS_bpf, false, "bpf" },
	{ "userfaultfd", SYS_userfaultfd, false, NULL /* /dev/userfaultfd */ },
	{ "membarrier", SYS_membarrier, false, NULL },
	{ "membarrier", SYS_membarrier, true, NULL },
	{ "ioctl", SYS_ioctl, true, NULL },
	{ "openat", SYS_openat, true, NULL },
};

/* Where a hang happened: the last step printed before the kill. */
static void step(const char *what)
{
	printf("  %s\n", what);
	fflush(stdout);
}

static int run_case(const struct deny *d, int err)
{
	const char *want = getenv("REGCACHE_MONITOR");
	struct regcache_params p = { 0 };
	struct io_uring ring, ring2;
	struct regcache *c, *c2;
	char *buf = t_map(LEN);
	int ret;

	if (!d->after)
		T_REQUIRE(t_seccomp_deny(d->nr, err) == 0);
	t_ring_init(&ring);
	ret = regcache_uring_create(&ring, &p, &c);
	if (ret) {
		/* Failing clearly is allowed; a crash or hang is not. */
		printf("  regcache_uring_create failed: %s\n", strerror(-ret));
		return ret < 0 ? T_EXIT_PASS : T_EXIT_FAIL;
	}
	/* A denied call that the wanted monitor needs may make it fall
	 * back; anything else must not change which monitor runs. */
	if (!(d->needed_by && want && !strcmp(want, d->needed_by)))
		t_monitor_require();
	printf("  monitor %s\n", regcache_monitor_name());
	fflush(stdout);
	t_churn_scenario(&ring, c, buf, LEN);
	if (d->after) {
		T_REQUIRE(t_seccomp_deny(d->nr, err) == 0);
		step("filter installed");
	}
	t_churn_scenario(&ring, c, buf, LEN);
	step("second cache");
	t_ring_init(&ring2);
	ret = regcache_uring_create(&ring2, &p, &c2);
	if (ret == 0) {
		t_churn_scenario(&ring2, c2, buf, LEN);
		regcache_destroy(c2);
	} else {
		printf("  second regcache_uring_create failed: %s\n",
		       strerror(-ret));
	}
	t_churn_scenario(&ring, c, buf, LEN);
	step("regcache_destroy");
	regcache_destroy(c);
	return t_exit_status();
}

struct deny_case {
	const struct deny *d;
	int err;
};

static int deny_child(const void *arg)
{
	const struct deny_case *k = arg;

	return run_case(k->d, k->err);
}

int main(void)
{
	static const int errs[] = { EPERM, ENOSYS };
	struct t_child_cases k = { 0 };

	for (size_t i = 0; i < sizeof(denies) / sizeof(denies[0]); i++)
		for (size_t j = 0; j < 2; j++) {
			const struct deny_case dc = { &denies[i], errs[j] };
			const char *err = errs[j] == EPERM ? "EPERM" : "ENOSYS";
			char what[64];

			printf("deny %s with %s %s the first cache:\n",
			       denies[i].name, err,
			       denies[i].after ? "after" : "before");
			snprintf(what, sizeof(what), "deny %s (%s)",
				 denies[i].name, err);
			t_child_case(&k, what, deny_child, &dc);
		}
	return t_child_cases_status(&k);
}
