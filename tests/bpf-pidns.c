/*
 * Description: eBPF monitor: a process in a PID namespace (any container)
 * is monitored by its global tgid, which is what the programs see, not by
 * the namespace-local pid that getpid() returns. Set up so that our
 * namespace pid equals the global tgid of a busy unrelated process (a
 * helper looping mmap/munmap): a monitor keyed by the local pid would pass
 * its self-test on the helper's munmaps and never see ours. A munmap + mmap
 * at the same address must not be served from the cache (checked with
 * DMA), and the monitor must work at all inside the namespace.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include "helpers.h"

#define LEN 65536

static int scenario(void)
{
	struct io_uring ring;
	struct regcache *c;
	struct t_case k;
	char *buf;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	printf("in the namespace: pid %d, monitor \"%s\"\n", (int)getpid(),
	       regcache_monitor_name());
	fflush(stdout);
	if (strcmp(regcache_monitor_name(), "bpf")) {
		fprintf(stderr, "the eBPF monitor does not work in a PID "
			"namespace (the maps are keyed by getpid(), the "
			"programs use the global tgid)\n");
		return 1;
	}
	buf = t_map(LEN);
	t_case_begin(&k, &ring, c, buf, LEN);
	t_remap(buf, LEN);
	memset(buf, 0, LEN);
	t_case_end(&k, "munmap + mmap in a PID namespace", true);
	fflush(stdout);
	return t_failures ? 1 : 0;
}

/* In a process that has already unshared: run scenario() as the second
 * process of the new namespace, whose pid there equals @helper. */
static int in_namespace(pid_t helper)
{
	pid_t init;
	int status;
	char val[32];

	init = fork();
	T_REQUIRE(init >= 0);
	if (init == 0) {
		/* pid 1 of the new namespace: make the next pid equal h. */
		int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
		pid_t pid;

		if (fd < 0)
			_exit(77);
		snprintf(val, sizeof(val), "%d", (int)helper - 1);
		if (write(fd, val, strlen(val)) < 0)
			_exit(77);
		close(fd);
		pid = fork();
		if (pid == 0)
			_exit(scenario());
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			_exit(2);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 3);
	}
	T_REQUIRE(waitpid(init, &status, 0) == init);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

int main(void)
{
	pid_t helper, runner;
	int status, ret;

	t_monitor_only("bpf");
	t_monitor_skip_unavailable("bpf");
	/* A busy unrelated process: global tgid h. */
	helper = fork();
	T_REQUIRE(helper >= 0);
	if (helper == 0) {
		for (;;) {
			void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			munmap(p, 4096);
		}
	}
	/* unshare(CLONE_NEWPID) in a child of ours: once the namespace's
	 * init exits, the process that unshared can no longer fork, and
	 * LeakSanitizer's exit-time check needs to. */
	runner = fork();
	T_REQUIRE(runner >= 0);
	if (runner == 0) {
		if (unshare(CLONE_NEWPID)) {
			printf("SKIP: unshare(CLONE_NEWPID): %s\n",
			       strerror(errno));
			fflush(stdout);
			_exit(99);
		}
		_exit(in_namespace(helper));
	}
	T_REQUIRE(waitpid(runner, &status, 0) == runner);
	kill(helper, SIGKILL);
	waitpid(helper, NULL, 0);
	T_REQUIRE(WIFEXITED(status));
	ret = WEXITSTATUS(status);
	if (ret == 99)
		return T_EXIT_SKIP;
	if (ret == 77)
		printf("SKIP: cannot set ns_last_pid in the new namespace\n");
	else if (ret == 0)
		printf("ok: the eBPF monitor works in a PID namespace\n");
	return ret;
}
