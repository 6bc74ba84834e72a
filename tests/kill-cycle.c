/*
 * Description: kill -9 cycles. Again and again, fork a child that creates
 * caches under the monitor being tested, registers real io_uring fixed
 * buffers (one of 5 MiB held, small ones DMA-checked while they are
 * munmapped and mapped again), and SIGKILL it at a random moment: during
 * the monitor's start, a registration, a DMA check or a munmap. After each
 * kill the parent checks that nothing is left behind:
 *  - the child is reaped within 10 s, never stuck (its state and wchan are
 *    printed if it is);
 *  - as root: the kernel lists no more BPF programs named rc_* than before
 *    the cycles (a killed bpf monitor must not stay loaded);
 *  - as uid 65534 (under regcached-launch): the daemon takes new clients
 *    again (it runs with --max-per-user 3, so three leaked client slots
 *    would refuse the next one) and the 8 MiB memlock limit is free again
 *    (a fresh process pins 5 MiB, which fails while a killed child's 5 MiB
 *    are still accounted).
 * Then a fresh process creates a cache: the same monitor must run, and a
 * munmap under a cached region must be seen (DMA oracle).
 *
 * Negative controls, before the cycles: a child in uninterruptible sleep
 * (the parent side of vfork) is reported as stuck; a stopped child that
 * keeps its monitor loaded is reported as a BPF leak (as root) or holds
 * its 5 MiB and its client slot so that the fresh process fails (as uid
 * 65534).
 *
 * Usage: kill-cycle [--seconds S]   (default 10)
 */
#include <dirent.h>
#include <linux/bpf.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "helpers.h"

#define BIG (5u << 20)		/* pinned by each child, and by the checker */
#define SMALL_MAX (32 * 4096)
#define REAP_SECONDS 10
#define SLOTS_PER_USER 3	/* regcached --max-per-user (regcached.cmake) */

static const char *want;	/* REGCACHE_MONITOR */
static bool privileged;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned rnd(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* ---- the victim ---- */

/* Create caches, pin BIG, then get/put/munmap small buffers with DMA
 * checks until killed. A stale byte is reported on @fd ('S'); 'R' once the
 * first cache exists. Registration failures are expected (the memlock
 * limit is shared with children killed a moment ago) and ignored. */
static void victim(int fd, unsigned seed)
{
	struct io_uring ring;
	struct regcache *c;
	struct regcache_region *big_r = NULL;
	char *big;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	(void)!write(fd, "R", 1);
	big = t_map(BIG);
	memset(big, 1, BIG);
	if (regcache_get(c, big, BIG, 0, &big_r))
		big_r = NULL;
	for (;;) {
		size_t len = 4096 * (1 + rnd(&seed) % (SMALL_MAX / 4096));
		char *buf = t_map(len);
		struct regcache_region *r;

		for (int i = 0; i < 4; i++) {
			if (regcache_get(c, buf, len, 0, &r))
				break;
			if (!t_dma_visible(&ring, r, buf,
					   len > 65536 ? 65536 : len,
					   rnd(&seed)))
				(void)!write(fd, "S", 1);
			regcache_put(c, r);
			if (rnd(&seed) % 2) {
				munmap(buf, len);
				buf = t_map(len);
			}
		}
		munmap(buf, len);
	}
}

/* ---- checks ---- */

/* Programs named rc_* that the kernel lists (root only), or -1. */
static long bpf_programs(void)
{
	union bpf_attr a;
	__u32 id = 0;
	long n = 0;

	for (;;) {
		struct bpf_prog_info info;
		int fd;

		memset(&a, 0, sizeof(a));
		a.start_id = id;
		if (syscall(SYS_bpf, BPF_PROG_GET_NEXT_ID, &a, sizeof(a)))
			return errno == ENOENT ? n : -1;
		id = a.next_id;
		memset(&a, 0, sizeof(a));
		a.prog_id = id;
		fd = (int)syscall(SYS_bpf, BPF_PROG_GET_FD_BY_ID, &a, sizeof(a));
		if (fd < 0)
			continue;	/* freed meanwhile */
		memset(&info, 0, sizeof(info));
		memset(&a, 0, sizeof(a));
		a.info.bpf_fd = fd;
		a.info.info_len = sizeof(info);
		a.info.info = (__u64)(uintptr_t)&info;
		if (!syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &a, sizeof(a)) &&
		    !strncmp(info.name, "rc_", 3))
			n++;
		close(fd);
	}
}

/* Wait until at most @baseline rc_* programs are listed (programs are
 * freed after an RCU grace period). Returns the last count. */
static long bpf_settle(long baseline, double seconds)
{
	double t0 = now();
	long n;

	while ((n = bpf_programs()) > baseline && now() - t0 < seconds)
		usleep(10000);
	return n;
}

static char proc_state(pid_t pid, char *wchan, size_t len)
{
	char path[64], buf[512], *p;
	char st = '?';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
			st = p[2];
		fclose(f);
	}
	wchan[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(wchan, (int)len, f))
			wchan[0] = 0;
		fclose(f);
	}
	return st;
}

/* Reap @pid within @seconds. Not reaped: print where it sleeps, return
 * false (the pid is left to the caller). */
static bool reaped(pid_t pid, double seconds, const char *what)
{
	double t0 = now();
	char wchan[128];
	int status;

	do {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return true;
		usleep(1000);
	} while (now() - t0 < seconds);
	fprintf(stderr, "kill-cycle: %s: pid %d not reaped after %.1f s, "
		"state %c, wchan %s\n", what, (int)pid, seconds,
		proc_state(pid, wchan, sizeof(wchan)), wchan);
	return false;
}

/*
 * A fresh process: its monitor must be the one asked for, it must pin BIG
 * (memlock free again), and a munmap under a cached region must be seen.
 * 0 ok, 2 wrong monitor, 3 pin failed, 4 stale or case failed.
 */
static int fresh_check_child(void)
{
	struct io_uring ring;
	struct regcache *c;
	struct regcache_region *r;
	struct t_case k;
	char *big, *buf;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	if (want && strcmp(want, "auto") &&
	    strcmp(regcache_monitor_name(), want))
		return 2;
	big = t_map(BIG);
	memset(big, 1, BIG);
	if (regcache_get(c, big, BIG, 0, &r))
		return 3;
	regcache_put(c, r);
	buf = t_map(16384);
	if (t_monitor_is("none")) {
		/* Pass-through: nothing cached, every get is fresh. */
		if (regcache_get(c, buf, 16384, 0, &r))
			return 3;
		T_CHECK(t_dma_visible(&ring, r, buf, 16384, 5));
		regcache_put(c, r);
	} else {
		t_case_begin(&k, &ring, c, buf, 16384);
		T_REQUIRE(munmap(buf, 16384) == 0);
		T_REQUIRE(mmap(buf, 16384, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS |
				       MAP_FIXED_NOREPLACE, -1, 0) == buf);
		t_case_end(&k, "fresh process: munmap", true);
	}
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_failures ? 4 : 0;
}

/* Run fresh_check_child() in a new process until it passes or fails on
 * data (4), for at most @seconds; returns its last status. */
static int fresh_status(double seconds)
{
	double t0 = now();
	int ret;

	do {
		int status;
		pid_t parent = getpid(), pid = fork();

		T_REQUIRE(pid >= 0);
		if (pid == 0) {
			t_die_with_parent(parent);
			_exit(fresh_check_child());
		}
		T_REQUIRE(waitpid(pid, &status, 0) == pid);
		ret = WIFEXITED(status) ? WEXITSTATUS(status) : 6;
		if (ret == 0 || ret == 4)
			return ret;
		usleep(50000);
	} while (now() - t0 < seconds);
	return ret;
}

/* Fork a victim and wait until its first cache exists. */
static pid_t spawn_victim(unsigned seed, int *rfd, bool wait_ready)
{
	int p[2];
	pid_t pid, parent = getpid();
	char ch;

	T_REQUIRE(pipe(p) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		t_die_with_parent(parent);
		close(p[0]);
		victim(p[1], seed);
		_exit(0);
	}
	close(p[1]);
	if (wait_ready)
		T_REQUIRE(read(p[0], &ch, 1) == 1 && ch == 'R');
	*rfd = p[0];
	return pid;
}

static unsigned long stale_from(int fd)
{
	char buf[64];
	ssize_t n;
	unsigned long s = 0;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			s += buf[i] == 'S';
	return s;
}

/* ---- negative controls ---- */

static void control_stuck(void)
{
	pid_t parent = getpid(), pid = fork();
	int status;

	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		t_die_with_parent(parent);
		/* The parent side of vfork sleeps uninterruptibly (killable)
		 * until the vfork child execs or exits, which it never does;
		 * it dies with us. */
		if (vfork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				syscall(SYS_pause);
		}
		_exit(0);
	}
	usleep(100000);
	if (reaped(pid, 0.5, "negative control (vfork parent)")) {
		fprintf(stderr, "kill-cycle: FAIL: negative control: a process "
			"in uninterruptible sleep was not reported\n");
		t_failures++;
		return;
	}
	kill(pid, SIGKILL);
	T_CHECK(reaped(pid, REAP_SECONDS, "negative control after SIGKILL"));
	(void)status;
	printf("kill-cycle: negative control ok: a stuck process is "
	       "reported\n");
}

/* @n stopped victims keep what a leak would keep: the check must see it.
 * Unprivileged, one holds 5 MiB of the 8 MiB memlock limit (the fresh
 * process cannot pin, status 3); under regcached, SLOTS_PER_USER hold
 * every client slot (the fresh process gets no monitor, status 2). */
static void control_leak(long bpf_base, int n, int expect)
{
	pid_t pids[SLOTS_PER_USER];
	int fds[SLOTS_PER_USER], ret;

	for (int i = 0; i < n; i++) {
		pids[i] = spawn_victim(1234 + i, &fds[i], true);
		usleep(100000);	/* let it pin BIG */
		kill(pids[i], SIGSTOP);
	}
	if (bpf_base >= 0 && !strcmp(want, "bpf")) {
		long left = bpf_settle(bpf_base, 1);

		if (left <= bpf_base) {
			fprintf(stderr, "kill-cycle: FAIL: negative control: a "
				"live bpf monitor was not counted\n");
			t_failures++;
		} else {
			printf("kill-cycle: negative control ok: a live "
			       "monitor's %ld programs are counted\n",
			       left - bpf_base);
		}
	}
	if (expect) {
		ret = fresh_status(1);
		if (ret != expect) {
			fprintf(stderr, "kill-cycle: FAIL: negative control: "
				"with %d stopped victims a fresh process "
				"exited %d, expected %d (%s)\n", n, ret,
				expect, expect == 2 ? "no client slot"
						    : "no memlock left");
			t_failures++;
		} else {
			printf("kill-cycle: negative control ok: %s held by "
			       "%d stopped victim(s) is seen\n",
			       expect == 2 ? "every client slot"
					   : "locked memory", n);
		}
	}
	for (int i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		T_CHECK(reaped(pids[i], REAP_SECONDS, "control victim"));
		close(fds[i]);
	}
}

int main(int argc, char **argv)
{
	double seconds = 10, t0;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	unsigned long cycles = 0, early = 0, stale = 0, stuck = 0;
	long bpf_base = -1, bpf_max = 0;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else {
			fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
			return 2;
		}
	}
	if (!seed)
		seed = 1;
	want = getenv("REGCACHE_MONITOR");
	if (!want)
		want = "auto";
	privileged = geteuid() == 0;
	/* Learn whether the monitor runs here at all, in a child (the
	 * parent must not hold a monitor of its own). */
	ret = fresh_status(0);
	if (ret == 2) {
		printf("SKIP: monitor %s does not start here (see "
		       "regcache-info)\n", want);
		return T_EXIT_SKIP;
	}
	if (privileged) {
		bpf_base = bpf_settle(0, 5);
		if (bpf_base < 0)
			fprintf(stderr, "kill-cycle: cannot list BPF programs "
				"(%s): that check is left out\n",
				strerror(errno));
	}
	printf("kill-cycle: monitor %s, %.0f s, seed %u, %s, %ld rc_* BPF "
	       "programs before\n", want, seconds, seed,
	       privileged ? "root" : "unprivileged", bpf_base);
	if (ret) {
		fprintf(stderr, "kill-cycle: FAIL: a fresh process failed "
			"before any kill (status %d)\n", ret);
		return T_EXIT_FAIL;
	}
	control_stuck();
	control_leak(bpf_base, 1, privileged ? 0 : 3);
	if (!privileged && !strcmp(want, "regcached")) {
		/* The daemon frees the slots when it sees the exits. */
		T_EXPECT_EQ(0, fresh_status(REAP_SECONDS));
		control_leak(-1, SLOTS_PER_USER, 2);
	}

	t0 = now();
	while (now() - t0 < seconds) {
		unsigned delay = rnd(&seed) % 80000;	/* us after fork */
		int fd;
		pid_t pid = spawn_victim(rnd(&seed), &fd, false);
		char wchan[128];

		usleep(delay);
		if (delay < 20000)
			early++;
		kill(pid, SIGKILL);
		if (!reaped(pid, REAP_SECONDS, "victim")) {
			proc_state(pid, wchan, sizeof(wchan));
			stuck++;
			close(fd);
			break;
		}
		stale += stale_from(fd);
		close(fd);
		cycles++;
		if (bpf_base >= 0) {
			long n = bpf_settle(bpf_base, REAP_SECONDS);

			if (n > bpf_max)
				bpf_max = n;
			if (n > bpf_base) {
				fprintf(stderr, "kill-cycle: FAIL: %ld rc_* BPF "
					"programs still loaded %d s after the "
					"kill (%ld before)\n", n, REAP_SECONDS,
					bpf_base);
				t_failures++;
				break;
			}
		}
	}
	/* Client slots and locked memory go back asynchronously (the
	 * daemon sees the pidfd, io_uring tears down in a worker). */
	ret = fresh_status(REAP_SECONDS);
	printf("kill-cycle: %lu kills (%lu within 20 ms of fork), %lu stale, "
	       "%lu stuck; fresh process after the cycles: status %d\n",
	       cycles, early, stale, stuck, ret);
	T_EXPECT_EQ(0, stale);
	T_EXPECT_EQ(0, stuck);
	T_EXPECT_EQ(0, ret);
	T_CHECK(cycles > 0);
	return t_exit_status();
}
