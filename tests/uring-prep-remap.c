/* SPDX-License-Identifier: MIT */
/*
 * Description: the pointer-only helper never targets a buffer's old pages.
 * After munmap + mmap of the same address, regcache_uring_prep_read_fixed()
 * delivers the data where the application now sees it, with whatever
 * monitor this machine has (a cache invalidated by the kernel, or
 * pass-through). Negative control (in a re-executed child with
 * REGCACHE_MONITOR=none): a cache created with
 * REGCACHE_FLAG_EXPLICIT_INVALIDATE whose promise is broken must serve the
 * stale registration and lose the data, which proves the oracle can fail;
 * keeping the promise with regcache_invalidate() delivers it again.
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "helpers.h"


#define ROUNDS 64

static size_t pg;

static struct io_uring ring;
static struct regcache *c;
static char *buf;
static size_t len;

/* A ring, a cache on it with @flags, and a buffer of four pages. */
static void start(unsigned flags)
{
	len = 4 * pg;
	buf = t_map(len);
	t_ring_init(&ring);
	c = t_uring_cache(&ring, flags, 0, 0);
}

/* Undo start(); the run's exit status. */
static int finish(void)
{
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	munmap(buf, len);
	return t_exit_status();
}

static int positive(void)
{
	int lost = 0;

	start(0);
	for (int i = 0; i < T_SCALE(ROUNDS); i++) {
		if (!t_prep_read_visible(&ring, c, buf + 100, 3 * pg, i))
			lost++;
		t_remap(buf, len);
	}
	T_EXPECT_EQ(0, lost);
	printf("monitor %s: %u remaps, %d stale\n", regcache_monitor_name(),
	       T_SCALE(ROUNDS), lost);
	return finish();
}

static int control(void)
{
	int stale = 0;

	if (strcmp(regcache_monitor_name(), "none")) {
		fprintf(stderr, "control run needs REGCACHE_MONITOR=none, got "
			"%s\n", regcache_monitor_name());
		return T_EXIT_FAIL;
	}
	start(REGCACHE_FLAG_EXPLICIT_INVALIDATE);
	T_CHECK(t_prep_read_visible(&ring, c, buf, 2 * pg, 1));
	/* Broken promise: the helper hits the old registration. */
	t_remap(buf, len);
	if (!t_prep_read_visible(&ring, c, buf, 2 * pg, 2))
		stale++;
	T_EXPECT_EQ(1, stale);
	/* Kept promise. */
	t_remap(buf, len);
	T_CHECK(regcache_invalidate(c, buf, len) >= 1);
	T_CHECK(t_prep_read_visible(&ring, c, buf, 2 * pg, 3));
	printf("control: broken promise served %d stale registration(s)\n",
	       stale);
	return finish();
}

int main(int argc, char **argv)
{
	int status, ret;
	pid_t pid;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	if (argc > 1 && !strcmp(argv[1], "control"))
		return control();
	ret = positive();

	/* The monitor is chosen once per process: re-execute for "none". */
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		setenv("REGCACHE_MONITOR", "none", 1);
		execl("/proc/self/exe", argv[0], "control", (char *)NULL);
		perror("execl /proc/self/exe");
		_exit(T_EXIT_FAIL);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "negative control failed (status %#x)\n",
			status);
		ret = T_EXIT_FAIL;
	}
	return ret;
}
