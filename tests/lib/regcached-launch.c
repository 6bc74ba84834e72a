/* SPDX-License-Identifier: MIT */
/*
 * The CTest command of every regcached-* test:
 *
 *   regcached-launch [--root] [--memlock-unlimited] [--daemon-arg ARG]...
 *                    -- PROGRAM [ARG]...
 *
 * As root, starts a private regcached (the real daemon, real BPF) on a
 * socket in a fresh directory, then runs PROGRAM with REGCACHE_MONITOR=
 * regcached and REGCACHE_SOCKET pointing at it: as uid/gid 65534 with no
 * capabilities and an 8 MiB memlock limit (Debian's default; unlimited with
 * --memlock-unlimited, as sites set it for RDMA middleware, whose own pools
 * need more), unless --root. Exits with
 * PROGRAM's status; a daemon that dies on its own, or stops with an error,
 * fails the test. Not root: exit 77 with the reason.
 *
 * PROGRAM runs in a process group of its own, and whatever is left of it
 * (children it forked, which may have dropped privileges or outlived it on
 * purpose) is SIGKILLed when PROGRAM exits, and also when the launcher
 * itself is killed (a CTest timeout): a guardian process, which does
 * nothing but wait for the launcher to die, kills the group then. An
 * orphan would otherwise keep the test runs' shared lock file open.
 *
 * Control channel: fd $RCD_TEST_CONTROL; the program writes one byte and
 * reads one back ('+' done, '-' failed): 'K' SIGKILL the daemon, 'S' start
 * it again (same socket), 'T' SIGTERM it. So an unprivileged test can kill
 * and restart a root daemon at a moment of its choosing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#include "reachable.h"
#include "socket_answers.h"

#ifndef RCD_DAEMON_PATH
#error "RCD_DAEMON_PATH: the regcached binary"
#endif

static char dir[64] = "/tmp/regcached-test.XXXXXX";
static char sock_path[108];
static const char *daemon_args[16];
static int ndaemon_args;
static pid_t daemon_pid = -1;
static bool memlock_unlimited;
static int guard_fd = -1;	/* the guardian's pipe (guard_group) */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Start the daemon and wait until its socket answers. */
static int start_daemon(void)
{
	const char *argv[24];
	int n = 0, status;
	double t0 = now_s();

	argv[n++] = RCD_DAEMON_PATH;
	argv[n++] = "--socket";
	argv[n++] = sock_path;
	argv[n++] = "-v";
	for (int i = 0; i < ndaemon_args; i++)
		argv[n++] = daemon_args[i];
	argv[n] = NULL;
	unlink(sock_path);
	daemon_pid = fork();
	if (daemon_pid < 0)
		return -errno;
	if (daemon_pid == 0) {
		/* Never outlive the launcher (a CTest timeout kills it). */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execv(argv[0], (char **)argv);
		perror(argv[0]);
		_exit(127);
	}
	/* 10 s; more under emulation, where attaching the programs by
	 * fentry alone took up to 8 s (REGCACHE_TEST_SLOWDOWN). */
	const char *slow = getenv("REGCACHE_TEST_SLOWDOWN");
	double wait_s = 10.0 * (slow && atoi(slow) > 1 ? atoi(slow) : 1);

	while (now_s() - t0 < wait_s) {
		if (waitpid(daemon_pid, &status, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			fprintf(stderr, "regcached-launch: the daemon exited "
				"at start (status %#x)\n", status);
			return -ECHILD;
		}
		if (regcached_socket_answers(sock_path))
			return 0;
		usleep(2000);
	}
	fprintf(stderr, "regcached-launch: the daemon did not answer in %.0f "
		"s\n", wait_s);
	return -ETIMEDOUT;
}

/* Stop the daemon with @sig; returns its wait status. */
static int stop_daemon(int sig)
{
	int status = 0;

	if (daemon_pid < 0)
		return 0;
	kill(daemon_pid, sig);
	waitpid(daemon_pid, &status, 0);
	daemon_pid = -1;
	return status;
}

/* Fork the guardian of process group @pgid: when the launcher dies, by
 * whatever means, its end of the pipe closes and the guardian kills the
 * group. It keeps no other descriptor (the lock file among them). */
static void guard_group(pid_t pgid)
{
	int p[2];
	pid_t pid;
	ssize_t n;
	char ch;

	if (pipe(p)) {
		perror("regcached-launch: pipe");
		return;
	}
	pid = fork();
	if (pid < 0) {
		perror("regcached-launch: fork");
		return;
	}
	if (pid == 0) {
		if (dup2(p[0], 0) < 0)
			_exit(1);
		for (int fd = 1; fd < 1024; fd++)
			close(fd);
		/* A byte: the launcher cleaned up itself (the group may be
		 * gone and its number reused). End of file: it died. */
		while ((n = read(0, &ch, 1)) < 0 && errno == EINTR)
			;
		if (n == 0)
			kill(-pgid, SIGKILL);
		_exit(0);
	}
	close(p[0]);
	/* The write end stays open in the launcher only (close-on-exec). */
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
	guard_fd = p[1];
}

static void drop_privileges(void)
{
	struct rlimit rl = { 8 << 20, 8 << 20 };

	if (memlock_unlimited) {
		rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
		/* Root without CAP_SYS_RESOURCE (a container) cannot raise
		 * the hard limit: keep the highest it may set, and say so. */
		if (setrlimit(RLIMIT_MEMLOCK, &rl) && errno == EPERM &&
		    !getrlimit(RLIMIT_MEMLOCK, &rl)) {
			rl.rlim_cur = rl.rlim_max;
			fprintf(stderr, "regcached-launch: memlock limit %llu "
				"bytes, not unlimited (no CAP_SYS_RESOURCE)\n",
				(unsigned long long)rl.rlim_max);
		}
	}

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) ||
	    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		perror("regcached-launch: dropping privileges");
		_exit(1);
	}
	/* setresuid away from 0 cleared every capability set. */
}

static int serve_control(int ctl)
{
	char cmd, ok = '+';
	int status;

	if (read(ctl, &cmd, 1) != 1)
		return -1;
	switch (cmd) {
	case 'K':
		status = stop_daemon(SIGKILL);
		fprintf(stderr, "regcached-launch: daemon killed (SIGKILL)\n");
		if (!WIFSIGNALED(status))
			ok = '-';
		break;
	case 'T':
		status = stop_daemon(SIGTERM);
		fprintf(stderr, "regcached-launch: daemon stopped (SIGTERM)\n");
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ok = '-';
		break;
	case 'S':
		if (start_daemon())
			ok = '-';
		else
			fprintf(stderr, "regcached-launch: daemon started "
				"again\n");
		break;
	default:
		ok = '-';
	}
	return write(ctl, &ok, 1) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	bool as_root = false;
	int i, sv[2], status = 0, dstatus, pidfd;
	pid_t test, launcher;
	char fdbuf[16];

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--root"))
			as_root = true;
		else if (!strcmp(argv[i], "--memlock-unlimited"))
			memlock_unlimited = true;
		else if (!strcmp(argv[i], "--daemon-arg") && i + 1 < argc &&
			 ndaemon_args < 15)
			daemon_args[ndaemon_args++] = argv[++i];
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: regcached-launch [--root] "
			"[--memlock-unlimited] [--daemon-arg ARG]... -- "
			"PROGRAM [ARG]...\n");
		return 2;
	}
	argv += i + 1;
	if (geteuid() != 0) {
		printf("SKIP: starting a private regcached needs root (the "
		       "test itself runs as uid 65534)\n");
		return 77;
	}
	if (!mkdtemp(dir) || chmod(dir, 0755)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/regcached.sock", dir);
	if (start_daemon()) {
		rmdir(dir);
		printf("SKIP: regcached cannot start here (its log above says "
		       "why)\n");
		return 77;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("socketpair");
		return 1;
	}
	snprintf(fdbuf, sizeof(fdbuf), "%d", sv[1]);
	launcher = getpid();
	test = fork();
	if (test == 0) {
		setpgid(0, 0);
		close(sv[0]);
		setenv("REGCACHE_MONITOR", "regcached", 0);
		setenv("REGCACHE_SOCKET", sock_path, 1);
		setenv("RCD_TEST_CONTROL", fdbuf, 1);
		if (!as_root) {
			int err = reach_path_for_all(argv[0]);

			if (err) {
				fprintf(stderr, "regcached-launch: making %s "
					"reachable for uid 65534: %s\n", argv[0],
					strerror(-err));
				_exit(1);
			}
			drop_privileges();
		}
		/* After the change of credentials, which clears it. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != launcher)
			_exit(1);
		execv(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	close(sv[1]);
	if (test < 0) {
		perror("regcached-launch: fork");
		return 1;
	}
	setpgid(test, test);	/* either side may run first */
	guard_group(test);
	pidfd = (int)syscall(SYS_pidfd_open, test, 0);
	for (;;) {
		struct pollfd p[2] = { { .fd = pidfd, .events = POLLIN },
				       { .fd = sv[0], .events = POLLIN } };

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (p[1].revents && serve_control(sv[0]))
			p[1].fd = -1;
		if (daemon_pid > 0 && waitpid(daemon_pid, &dstatus, WNOHANG) ==
					      daemon_pid) {
			fprintf(stderr, "regcached-launch: FAIL: the daemon "
				"died on its own (status %#x)\n", dstatus);
			daemon_pid = -1;
			status = 1;
		}
	}
	/* What the test left behind must not outlive it. The test is a
	 * zombie until reaped, so the group's number is still ours. */
	kill(-test, SIGKILL);
	waitpid(test, &i, 0);
	if (guard_fd >= 0)
		(void)!write(guard_fd, "x", 1);
	if (daemon_pid > 0) {
		dstatus = stop_daemon(SIGTERM);
		if (!WIFEXITED(dstatus) || WEXITSTATUS(dstatus)) {
			fprintf(stderr, "regcached-launch: FAIL: the daemon "
				"stopped with status %#x\n", dstatus);
			status = 1;
		}
	}
	unlink(sock_path);
	rmdir(dir);
	if (WIFSIGNALED(i)) {
		fprintf(stderr, "regcached-launch: the test died of signal %d\n",
			WTERMSIG(i));
		return 1;
	}
	return status ? status : WEXITSTATUS(i);
}
