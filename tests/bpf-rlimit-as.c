/* SPDX-License-Identifier: MIT */
/*
 * Description: with an address-space limit too tight to parse the kernel's
 * BTF, the eBPF monitor is unavailable and says so with the cause: its log
 * line reads "out of memory" (libbpf itself only says "failed to find
 * valid kernel BTF") and points to regcache-info. The cache is still
 * created and serves gets pass-through. Runs in a child, so the limit
 * stays there; the parent first proves that the monitor loads here
 * without the limit (control), and skips when it cannot load at all.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define HEADROOM (1L << 20)	/* bytes of address space left to grow */

static int child(int logfd)
{
	struct io_uring ring;
	struct regcache *c;
	struct regcache_region *r;
	struct rlimit lim;
	char *buf;
	int ret;

	/* A hang is a failure too: the default action of SIGALRM ends it. */
	alarm(60);
	t_ring_init(&ring);
	buf = t_map(1 << 16);
	T_REQUIRE(dup2(logfd, 2) == 2);
	lim.rlim_cur = lim.rlim_max = (rlim_t)(t_vm_size() + HEADROOM);
	T_REQUIRE(setrlimit(RLIMIT_AS, &lim) == 0);
	ret = regcache_uring_create(&ring, &(struct regcache_params){ 0 }, &c);
	if (ret) {
		printf("child: regcache_uring_create: %s\n", strerror(-ret));
		return T_EXIT_FAIL;
	}
	if (strcmp(regcache_monitor_name(), "bpf") == 0) {
		printf("child: bpf loaded under the limit: the test's "
		       "limit is not tight enough here\n");
		return T_EXIT_FAIL;
	}
	/* Still usable: served pass-through. */
	T_EXPECT_EQ(0, regcache_get(c, buf, 1 << 16, 0, &r));
	if (!t_failures)
		regcache_put(c, r);
	regcache_destroy(c);
	return t_exit_status();
}

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	char log[16384];
	int fd, status;
	ssize_t n;
	pid_t pid;

#ifdef REGCACHE_SANITIZE
	printf("skip: sanitizers reserve terabytes of address space, so "
	       "RLIMIT_AS cannot be made tight under them\n");
	return T_EXIT_SKIP;
#endif
	/* Control: without the limit the monitor loads (or the test skips
	 * with the reason). The cache is destroyed, so the monitor stops
	 * and the child starts it afresh. The log level is read once, at
	 * the first log call. */
	setenv("REGCACHE_LOG", "info", 1);
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	regcache_destroy(c);
	io_uring_queue_exit(&ring);

	fd = memfd_create("log", 0);
	T_REQUIRE(fd >= 0);
	fflush(NULL);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child(fd));
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	n = pread(fd, log, sizeof(log) - 1, 0);
	log[n > 0 ? n : 0] = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "child failed (status %#x); its log:\n%s",
			status, log);
		t_failures++;
	}
	if (!strstr(log, "eBPF monitor unavailable: out of memory")) {
		fprintf(stderr, "expected \"eBPF monitor unavailable: out of "
			"memory\" in the log, got:\n%s", log);
		t_failures++;
	}
	if (!strstr(log, "regcache-info")) {
		fprintf(stderr, "expected a pointer to regcache-info in the "
			"log, got:\n%s", log);
		t_failures++;
	}
	return t_exit_status();
}
