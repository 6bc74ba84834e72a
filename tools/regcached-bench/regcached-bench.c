/* SPDX-License-Identifier: MIT */
/*
 * regcached-bench: what the node service costs, against the in-process
 * bpf monitor, in one run (docs/regcached.md, Measured costs). Root: it
 * starts a private regcached on a private socket.
 *
 *   regcached-bench [--daemon PATH] [--rounds N]
 *
 * Figures (each the median of N rounds, every one in a fresh process):
 *   - getppid() of an unrelated process with K = 1, 4, 16, 64 idle clients
 *     (regcached: one program set; bpf: one set per client, K <= 16), and
 *     the tax over no monitor at all;
 *   - a hit (get + put of a cached page) and munmap of a cached page in a
 *     client;
 *   - connect-to-ready (the first cache's creation) and 128 clients that
 *     start at once.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <regcache.h>
#include <regcache/uring.h>

#include "device.h"
#include "socket_answers.h"

static char sock_path[108];
static pid_t daemon_pid = -1;
static int rounds = 5;

static int start_daemon(const char *path)
{
	daemon_pid = fork();
	if (daemon_pid < 0)
		return -errno;
	if (daemon_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execl(path, path, "--socket", sock_path, NULL);
		perror(path);
		_exit(127);
	}
	for (int i = 0; i < 5000; i++) {
		if (regcached_socket_answers(sock_path))
			return 0;
		if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid)
			return -ECHILD;
		usleep(2000);
	}
	return -ETIMEDOUT;
}

/* A cache in this process with monitor @mon; NULL if that monitor did
 * not start. */
static struct regcache *make_cache(const char *mon, struct io_uring *ring)
{
	struct regcache_params p = { 0 };
	struct regcache *c;

	setenv("REGCACHE_MONITOR", mon, 1);
	setenv("REGCACHE_SOCKET", sock_path, 1);
	if (io_uring_queue_init(8, ring, 0) || regcache_uring_create(ring, &p, &c))
		return NULL;
	if (strcmp(regcache_monitor_name(), mon)) {
		regcache_destroy(c);
		return NULL;
	}
	return c;
}

/* K idle clients of monitor @mon; returns how many started. */
static int start_idle(const char *mon, int k, pid_t *pids)
{
	int p[2], n = 0;

	if (pipe(p))
		return 0;
	for (int i = 0; i < k; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct io_uring ring;
			char ok;

			close(p[0]);
			ok = make_cache(mon, &ring) ? 'y' : 'n';
			if (write(p[1], &ok, 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
	}
	close(p[1]);
	for (int i = 0; i < k; i++) {
		char ok;

		if (read(p[0], &ok, 1) == 1 && ok == 'y')
			n++;
	}
	close(p[0]);
	return n;
}

static void stop_idle(int k, pid_t *pids)
{
	for (int i = 0; i < k; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < k; i++)
		waitpid(pids[i], NULL, 0);
}

/* getppid() in this (unrelated: it has no cache) process: median over
 * rounds of 200000. */
static double getppid_ns(const char *unused)
{
	double v[64];

	(void)unused;
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns();

		for (int i = 0; i < 200000; i++)
			syscall(SYS_getppid);
		v[r] = (now_ns() - t0) / 200000;
	}
	return median(v, rounds);
}

/* Run @fn in a child with monitor @mon; returns what it reports. */
static double in_child(double (*fn)(const char *), const char *mon)
{
	int p[2];
	double v = -1;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		v = fn(mon);
		if (write(p[1], &v, sizeof(v)) != sizeof(v))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &v, sizeof(v)) != sizeof(v))
		v = -1;
	close(p[0]);
	waitpid(pid, NULL, 0);
	return v;
}

static double hit_ns(const char *mon)
{
	struct regcache_region *r;
	struct io_uring ring;
	struct regcache *c = make_cache(mon, &ring);
	char *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double v[64];

	if (!c || regcache_get(c, buf, 4096, 0, &r))
		return -1;
	regcache_put(c, r);
	for (int k = 0; k < rounds; k++) {
		double t0 = now_ns();

		for (int i = 0; i < 1000000; i++) {
			regcache_get(c, buf, 4096, 0, &r);
			regcache_put(c, r);
		}
		v[k] = (now_ns() - t0) / 1e6;
	}
	return median(v, rounds);
}

static double munmap_ns(const char *mon)
{
	struct regcache_region *r;
	struct io_uring ring;
	struct regcache *c = make_cache(mon, &ring);
	double v[64];

	if (!c)
		return -1;
	for (int k = 0; k < rounds; k++) {
		double total = 0;

		for (int i = 0; i < 2000; i++) {
			char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			double t0;

			p[0] = 1;
			if (regcache_get(c, p, 4096, 0, &r))
				return -1;
			regcache_put(c, r);
			t0 = now_ns();
			munmap(p, 4096);
			total += now_ns() - t0;
		}
		v[k] = total / 2000;
	}
	return median(v, rounds);
}

static double ready_ms(const char *mon)
{
	struct io_uring ring;
	double t0 = now_ns();

	return make_cache(mon, &ring) ? (now_ns() - t0) / 1e6 : -1;
}

/* 128 processes start a cache at once: ms until the last one is ready. */
static double concurrent_ms(const char *mon)
{
	enum { N = 128 };
	int go[2], rep[2], done[2], ok = 0;
	double t0, last = 0;
	pid_t pids[N];

	if (pipe(go) || pipe(rep) || pipe(done))
		return -1;
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct io_uring ring;
			double t;
			char b;

			close(go[1]);
			close(done[1]);
			if (read(go[0], &b, 1) != 1)
				_exit(1);
			t = make_cache(mon, &ring) ? now_ns() : -1;
			if (write(rep[1], &t, sizeof(t)) != sizeof(t))
				_exit(1);
			if (read(done[0], &b, 1) < 0)
				_exit(1);
			_exit(0);
		}
	}
	close(go[0]);
	close(done[0]);
	usleep(200000);
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		if (write(go[1], "g", 1) != 1)
			return -1;
	for (int i = 0; i < N; i++) {
		double t;

		if (read(rep[0], &t, sizeof(t)) != sizeof(t))
			break;
		if (t > 0) {
			ok++;
			if (t > last)
				last = t;
		}
	}
	close(done[1]);
	for (int i = 0; i < N; i++)
		waitpid(pids[i], NULL, 0);
	return ok == N ? (last - t0) / 1e6 : -1;
}

static void scale_row(const char *mon, int max_k, double base)
{
	static const int ks[] = { 1, 4, 16, 64 };
	double tax1 = 0;

	for (size_t i = 0; i < sizeof(ks) / sizeof(*ks); i++) {
		pid_t pids[64];
		double cost;
		int k = ks[i], got;

		if (k > max_k) {
			printf("  %-10s K=%-3d  (not measured: one program set "
			       "per process)\n", mon, k);
			continue;
		}
		got = start_idle(mon, k, pids);
		if (got != k) {
			printf("  %-10s K=%-3d  only %d clients started\n", mon,
			       k, got);
			stop_idle(k, pids);
			return;
		}
		cost = in_child(getppid_ns,
				mon);
		stop_idle(k, pids);
		if (k == 1)
			tax1 = cost - base;
		printf("  %-10s K=%-3d  getppid %6.1f ns  tax %+6.1f ns%s", mon,
		       k, cost, cost - base, k == 1 ? "\n" : "");
		if (k > 1)
			printf("  (%.2fx the tax at K=1)\n",
			       tax1 > 0 ? (cost - base) / tax1 : 0);
		usleep(100000);
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "daemon", required_argument, NULL, 'd' },
		{ "rounds", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	char self[PATH_MAX], daemon_path[PATH_MAX + 64], dir[] =
		"/tmp/regcached-bench.XXXXXX";
	const char *daemon = NULL, *bindir;
	double base;
	ssize_t n;
	int opt;

	while ((opt = getopt_long(argc, argv, "d:r:", longopts, NULL)) != -1) {
		if (opt == 'd')
			daemon = optarg;
		else if (opt == 'r')
			rounds = atoi(optarg);
		else
			return 2;
	}
	if (rounds < 1 || rounds > 64)
		rounds = 5;
	if (geteuid() != 0) {
		fprintf(stderr, "regcached-bench starts a private regcached: run "
			"it as root\n");
		return 1;
	}
	if (!daemon) {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return 1;
		self[n] = 0;
		bindir = dirname(self);
		snprintf(daemon_path, sizeof(daemon_path), "%s/regcached",
			 bindir);
		if (access(daemon_path, X_OK) &&	/* installed: sbindir */
		    snprintf(daemon_path, sizeof(daemon_path),
			     "%s/%s/regcached", bindir,
			     REGCACHED_FROM_BINDIR) >= (int)sizeof(daemon_path))
			return 1;
		daemon = daemon_path;
	}
	if (!mkdtemp(dir))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(sock_path, sizeof(sock_path), "%s/regcached.sock", dir);
	setenv("REGCACHE_LOG", "error", 0);

	printf("regcached-bench: medians of %d rounds, each in a fresh "
	       "process\n", rounds);
	base = in_child(getppid_ns, "none");
	printf("\ngetppid() of an unrelated process, K idle clients "
	       "(no monitor anywhere: %.1f ns)\n", base);
	scale_row("bpf", 16, base);
	if (start_daemon(daemon)) {
		fprintf(stderr, "cannot start %s\n", daemon);
		return 1;
	}
	{
		/* The daemon alone, no client: its programs are attached. */
		double d0 = in_child(getppid_ns,
				     "none");

		printf("  %-10s K=0    getppid %6.1f ns  tax %+6.1f ns "
		       "(daemon running, no client)\n", "regcached", d0,
		       d0 - base);
	}
	scale_row("regcached", 64, base);

	printf("\nin a client                        regcached      bpf\n");
	printf("  hit (get+put, 1 page)        %9.1f ns %9.1f ns\n",
	       in_child(hit_ns, "regcached"), in_child(hit_ns, "bpf"));
	printf("  munmap of a cached page      %9.0f ns %9.0f ns\n",
	       in_child(munmap_ns, "regcached"), in_child(munmap_ns, "bpf"));
	printf("  munmap, no monitor           %9.0f ns\n",
	       in_child(munmap_ns, "none"));
	printf("  connect-to-ready (1st cache) %9.1f ms %9.1f ms\n",
	       in_child(ready_ms, "regcached"), in_child(ready_ms, "bpf"));
	printf("  128 clients at once, last ready after %.0f ms (regcached)\n",
	       concurrent_ms("regcached"));

	kill(daemon_pid, SIGTERM);
	waitpid(daemon_pid, NULL, 0);
	rmdir(dir);
	return 0;
}
