/* SPDX-License-Identifier: MIT */
/*
 * Description: the pinned-memory budget is one per process and fits the
 * kernel's rules. As an ordinary user (uid 65534, no capabilities,
 * RLIMIT_MEMLOCK 1 MiB, so a budget of 768 KiB): two caches share the
 * budget, so a get in one cache evicts the other cache's idle regions
 * instead of failing in the kernel; a get larger than the whole budget
 * fails at once with -E2BIG and evicts nothing. With CAP_IPC_LOCK (root)
 * and the same RLIMIT_MEMLOCK there is no budget: caches keep 3 MiB
 * pinned and idle, and nothing is evicted. Each case runs in a child of
 * its own, since the budget is computed once per process.
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define KiB 1024
#define LIMIT (1024 * KiB)

static struct t_registrar t;
static char *area;

static struct regcache_stats stats(struct regcache *c)
{
	struct regcache_stats st;

	regcache_get_stats(c, &st);
	return st;
}

/* get+put: the region stays cached, idle. */
static int get_put(struct regcache *c, size_t off, size_t len)
{
	struct regcache_region *r;
	int ret = regcache_get(c, area + off, len, 0, &r);

	if (!ret)
		regcache_put(c, r);
	return ret;
}

static void set_memlock(void)
{
	struct rlimit rl = { LIMIT, LIMIT };

	T_REQUIRE(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
}

static bool has_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = { 0 };

	T_REQUIRE(syscall(SYS_capget, &hdr, data) == 0);
	return data[0].effective & CAP_TO_MASK(CAP_IPC_LOCK);
}

/* The registrar pins through io_uring, which may be closed to ordinary
 * users (kernel.io_uring_disabled). */
static void registrar_init_or_skip(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(4, &ring, 0);

	if (ret) {
		printf("SKIP: io_uring_queue_init as uid %d: %s\n", getuid(),
		       strerror(-ret));
		exit(T_EXIT_SKIP);
	}
	io_uring_queue_exit(&ring);
	t_registrar_init(&t, 64);
}

static void unprivileged(void)
{
	struct regcache *a, *b;
	struct regcache_stats sa, sb;
	uint64_t evicted_before;
	int ret;

	set_memlock();
	T_REQUIRE(setgroups(0, NULL) == 0);
	T_REQUIRE(setgid(65534) == 0 && setuid(65534) == 0);
	T_REQUIRE(!has_ipc_lock());
	/* setuid made us non-dumpable, which closes /proc/self to us; the
	 * registrar reads /proc/self/pagemap. */
	T_REQUIRE(prctl(PR_SET_DUMPABLE, 1) == 0);
	registrar_init_or_skip();
	a = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	b = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);

	/* Cache a fills the budget with idle regions. */
	for (int i = 0; i < 6; i++)
		T_EXPECT_EQ(0, get_put(a, (size_t)i * 256 * KiB, 128 * KiB));
	sa = stats(a);
	T_EXPECT_EQ(6, sa.regions);
	T_EXPECT_EQ(0, sa.evictions);

	/* 768 + 384 KiB would pass the kernel's 1 MiB: cache b makes room
	 * in cache a. */
	ret = get_put(b, 4 * 1024 * KiB, 384 * KiB);
	T_EXPECT_EQ(0, ret);
	sa = stats(a);
	sb = stats(b);
	T_EXPECT_EQ(3, sa.evictions);
	T_CHECK(sa.bytes + sb.bytes <= LIMIT / 4 * 3);

	/* Larger than the whole budget: -E2BIG, and nothing evicted. */
	evicted_before = sa.evictions + sb.evictions;
	T_EXPECT_EQ(-E2BIG, get_put(b, 8 * 1024 * KiB, 800 * KiB));
	T_EXPECT_EQ(-E2BIG, get_put(a, 8 * 1024 * KiB, 800 * KiB));
	sa = stats(a);
	sb = stats(b);
	T_EXPECT_EQ(evicted_before, sa.evictions + sb.evictions);
	T_EXPECT_EQ(3, sa.regions);
	T_EXPECT_EQ(1, sb.regions);

	regcache_destroy(a);
	regcache_destroy(b);
	T_EXPECT_EQ(0, atomic_load(&t.live));
	t_registrar_fini(&t);
}

static void with_ipc_lock(void)
{
	struct regcache *a, *b;

	set_memlock();
	registrar_init_or_skip();
	a = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	b = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	/* 3 MiB pinned, idle, in two caches, beyond RLIMIT_MEMLOCK. */
	T_EXPECT_EQ(0, get_put(a, 0, 1024 * KiB));
	T_EXPECT_EQ(0, get_put(a, 2 * 1024 * KiB, 1024 * KiB));
	T_EXPECT_EQ(0, get_put(b, 4 * 1024 * KiB, 1024 * KiB));
	T_EXPECT_EQ(2, stats(a).regions);
	T_EXPECT_EQ(1, stats(b).regions);
	T_EXPECT_EQ(0, stats(a).evictions + stats(b).evictions);
	regcache_destroy(a);
	regcache_destroy(b);
	t_registrar_fini(&t);
}

/* Run @fn in a child; its exit status. */
static int in_child(void (*fn)(void))
{
	pid_t pid = fork();
	int status;

	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		fn();
		exit(t_exit_status());
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : T_EXIT_FAIL;
}

int main(void)
{
	int ret, skips = 0;

	if (geteuid() != 0 || !has_ipc_lock()) {
		printf("SKIP: needs root with CAP_IPC_LOCK, to drop to uid "
		       "65534 in a child and to test CAP_IPC_LOCK\n");
		return T_EXIT_SKIP;
	}
	/* No regcache call here: the budget is computed once per process. */
	area = t_map(16 * 1024 * KiB);
	memset(area, 1, 16 * 1024 * KiB);

	ret = in_child(unprivileged);
	if (ret == T_EXIT_SKIP)
		skips++;
	else if (ret)
		t_failures++;
	ret = in_child(with_ipc_lock);
	if (ret == T_EXIT_SKIP)
		skips++;
	else if (ret)
		t_failures++;
	if (skips == 2)
		return T_EXIT_SKIP;
	return t_exit_status();
}
