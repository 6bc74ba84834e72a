/* SPDX-License-Identifier: MIT */
/*
 * Description: under the userfaultfd monitor, regcache_destroy() returns
 * and the application's own munmap of memory that was cached returns,
 * even when every ioctl fails from the moment after the cache was
 * created (a seccomp filter denying ioctl, once with EPERM and once with
 * ENOSYS), so that the final UFFDIO_UNREGISTERs all fail. No registered
 * range may be left without a reader. Each case runs in a child that the
 * parent kills after a timeout: a hang (uninterruptible, in the kernel's
 * wait for the userfaultfd reader) is reported as a failure, naming the
 * step that hung.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define LEN (64 * 1024)
#define TIMEOUT_MS 10000

enum step { STEP_READY = 1, STEP_FILTERED, STEP_DESTROYED, STEP_UNMAPPED };

static const char *const step_name[] = {
	[0] = "creating the cache",
	[STEP_READY] = "installing the seccomp filter",
	[STEP_FILTERED] = "regcache_destroy()",
	[STEP_DESTROYED] = "munmap() of the formerly cached buffer",
	[STEP_UNMAPPED] = "exit",
};

static void report(int fd, char step)
{
	while (write(fd, &step, 1) < 0 && errno == EINTR)
		;
}

static void child(int fd, int err, bool check_only)
{
	struct io_uring ring;
	struct regcache *c;
	struct regcache_region *r;
	char *buf;

	c = t_monitor_cache(&ring);
	buf = t_map(LEN);
	memset(buf, 1, LEN);
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	regcache_put(c, r);
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	regcache_put(c, r);
	{
		struct regcache_stats st;

		regcache_get_stats(c, &st);
		/* Cached: its VMA is registered with the userfaultfd. */
		T_REQUIRE(st.hits == 1);
	}
	report(fd, STEP_READY);
	if (!check_only) {
		int ret = t_seccomp_deny(SYS_ioctl, err);

		if (ret) {
			fprintf(stderr, "seccomp: %s\n", strerror(-ret));
			exit(T_EXIT_FAIL);
		}
		/* The filter works: a harmless ioctl now fails. */
		T_REQUIRE(ioctl(0, FIONREAD, &ret) < 0 && errno == err);
	}
	report(fd, STEP_FILTERED);
	regcache_destroy(c);
	report(fd, STEP_DESTROYED);
	munmap(buf, LEN);
	report(fd, STEP_UNMAPPED);
	exit(t_exit_status());
}

/* Run one case; returns the child's exit status or -1 when it hung. */
static int run(int err, bool check_only, int *last_step)
{
	int p[2], status = 0;
	struct timespec t0, t;
	pid_t pid;

	T_REQUIRE(pipe(p) == 0);
	fflush(NULL);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child(p[1], err, check_only);
	}
	close(p[1]);
	*last_step = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		char step;
		long ms;

		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1000 +
		     (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms > TIMEOUT_MS) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			close(p[0]);
			return -1;
		}
		if (poll(&pfd, 1, 50) > 0 && read(p[0], &step, 1) == 1)
			*last_step = step;
	}
	for (char step; read(p[0], &step, 1) == 1;)
		*last_step = step;
	close(p[0]);
	if (!WIFEXITED(status)) {
		fprintf(stderr, "child died: signal %d\n", WTERMSIG(status));
		return T_EXIT_FAIL;
	}
	return WEXITSTATUS(status);
}

int main(void)
{
	static const struct {
		int err;
		bool check_only;
		const char *what;
	} cases[] = {
		{ 0, true, "no filter (control)" },
		{ EPERM, false, "ioctl denied with EPERM" },
		{ ENOSYS, false, "ioctl denied with ENOSYS" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int step, ret = run(cases[i].err, cases[i].check_only, &step);

		if (ret == T_EXIT_SKIP)
			return T_EXIT_SKIP;	/* the child said why */
		if (ret < 0) {
			fprintf(stderr, "%s: hung in %s (killed after %d ms)\n",
				cases[i].what, step_name[step], TIMEOUT_MS);
			t_failures++;
		} else if (ret) {
			fprintf(stderr, "%s: child failed (%d)\n",
				cases[i].what, ret);
			t_failures++;
		} else {
			printf("%s: destroy and munmap returned\n",
			       cases[i].what);
		}
	}
	return t_exit_status();
}
