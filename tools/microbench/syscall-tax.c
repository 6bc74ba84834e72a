/*
 * Description: the eBPF monitor's tax on the syscalls of a process that is
 * not monitored, for both ways the syscall stages attach, in one run (not
 * a pass/fail test). Each round measures getppid() (a call no program
 * decodes) and munmap(p, 0) (a decoded call that changes nothing) in a
 * fresh process that never uses regcache: with no monitor anywhere, then
 * while another process holds a bpf monitor attached by sys_enter/sys_exit
 * (REGCACHE_BPF_ATTACH=syscalls), then by fentry (=fentry). Prints the
 * median ns per call of each, the taxes over no monitor, and the ratio of
 * the two taxes. A mode the kernel refuses is reported and left out.
 * Argument: scale factor for the iteration counts (default 1); the number
 * of rounds is 7.
 *   tools/microbench/syscall-tax [scale]
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device.h"
#include "helpers.h"

#define ROUNDS 7

enum { M_NONE, M_SYSCALLS, M_FENTRY, N_MODES };
static const char *const mode_names[N_MODES] = { "none", "syscalls",
						 "fentry" };

struct costs {
	double getppid, munmap0;
};

/* ns per call in a fresh child (another tgid, another mm): best of 3. */
static struct costs unrelated_costs(long iters)
{
	struct costs c = { 0 };
	int fds[2], status;
	pid_t pid;

	T_REQUIRE(pipe(fds) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		struct costs best = { 1e18, 1e18 };
		char *p = mmap(NULL, 4096, PROT_READ,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		for (int i = 0; i < 3; i++) {
			double t0 = now_ns(), t;

			for (long k = 0; k < iters; k++)
				syscall(SYS_getppid);
			t = (now_ns() - t0) / iters;
			best.getppid = t < best.getppid ? t : best.getppid;
			t0 = now_ns();
			for (long k = 0; k < iters; k++)
				syscall(SYS_munmap, p, 0UL);
			t = (now_ns() - t0) / iters;
			best.munmap0 = t < best.munmap0 ? t : best.munmap0;
		}
		(void)!write(fds[1], &best, sizeof(best));
		_exit(0);
	}
	T_REQUIRE(read(fds[0], &c, sizeof(c)) == sizeof(c));
	waitpid(pid, &status, 0);
	close(fds[0]);
	close(fds[1]);
	return c;
}

/* A process holding a bpf monitor attached as @mode, until killed; NULL
 * (and pid -1) when the mode is refused. */
static pid_t hold_monitor(const char *mode)
{
	int fds[2], status;
	char ok = 0;
	pid_t pid;

	T_REQUIRE(pipe(fds) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		struct io_uring ring;

		close(fds[0]);
		setenv("REGCACHE_BPF_ATTACH", mode, 1);
		setenv("REGCACHE_MONITOR", "bpf", 1);
		t_ring_init(&ring);
		t_uring_cache(&ring, 0, 0, 0);
		ok = t_monitor_is("bpf");
		(void)!write(fds[1], &ok, 1);
		if (!ok)
			_exit(0);
		pause();
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &ok, 1) != 1)
		ok = 0;
	close(fds[0]);
	if (!ok) {
		waitpid(pid, &status, 0);
		return -1;
	}
	return pid;
}

static void release_monitor(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* The links go with the holder's fds; the programs after an RCU
	 * tasks grace period: let it pass before the next measurement. */
	usleep(200000);
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1;
	long iters = (long)(200000 * (scale > 0 ? scale : 1));
	double g[N_MODES][ROUNDS], u[N_MODES][ROUNDS], mg[N_MODES], mu[N_MODES];
	int n[N_MODES] = { 0 };
	bool refused[N_MODES] = { false };

	for (int r = 0; r < ROUNDS; r++) {
		for (int m = 0; m < N_MODES; m++) {
			pid_t holder = -1;
			struct costs c;

			if (refused[m])
				continue;
			if (m != M_NONE) {
				holder = hold_monitor(mode_names[m]);
				if (holder < 0) {
					printf("REGCACHE_BPF_ATTACH=%s: no bpf "
					       "monitor here (REGCACHE_LOG=info "
					       "says why); left out\n",
					       mode_names[m]);
					refused[m] = true;
					continue;
				}
			}
			c = unrelated_costs(iters);
			g[m][n[m]] = c.getppid;
			u[m][n[m]++] = c.munmap0;
			if (holder > 0)
				release_monitor(holder);
		}
	}
	printf("unrelated process, ns per call, median of %d rounds "
	       "(%ld calls, best of 3, per round):\n", ROUNDS, iters);
	printf("  %-9s %10s %10s %12s %12s\n", "monitor", "getppid",
	       "munmap(0)", "getppid tax", "munmap tax");
	for (int m = 0; m < N_MODES; m++) {
		if (!n[m])
			continue;
		mg[m] = median(g[m], n[m]);
		mu[m] = median(u[m], n[m]);
		printf("  %-9s %10.1f %10.1f %+12.1f %+12.1f\n", mode_names[m],
		       mg[m], mu[m], mg[m] - mg[M_NONE], mu[m] - mu[M_NONE]);
	}
	if (n[M_SYSCALLS] && n[M_FENTRY]) {
		double ts = mg[M_SYSCALLS] - mg[M_NONE];
		double tf = mg[M_FENTRY] - mg[M_NONE];

		printf("getppid tax: syscalls %+.1f ns, fentry %+.1f ns",
		       ts, tf);
		if (tf > 0.05 * ts)
			printf(" (%.1fx less)\n", ts / tf);
		else
			printf(" (within the noise of no monitor: %.1f%% of "
			       "the syscalls tax)\n", ts > 0 ? 100 * tf / ts : 0);
	}
	return 0;
}
