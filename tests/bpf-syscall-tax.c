/*
 * Description: eBPF monitor: attached by fentry (REGCACHE_BPF_ATTACH=
 * fentry), no program of the monitor runs for a syscall it does not decode:
 * 3 x N calls of getppid, read and write leave the syscall stages' run
 * counts where they were (bpf_prog_info.run_cnt, BPF stats enabled), while
 * N munmaps run them 2 N times (entry and exit), so the counter works.
 * Negative control: attached by sys_enter/sys_exit (REGCACHE_BPF_ATTACH=
 * syscalls), the same undecoded calls run them at least 2 x 3 N times.
 * The programs are machine-wide: another process's decoded calls during
 * the loop also count, so fentry is allowed a tenth of N (the count is
 * printed; 0 on a quiet machine). Skips where the kernel refuses fentry,
 * after the control ran.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "bpf-held-progs.h"

#define N 100000L

/* In a child: the monitor attached as @mode, then the counts. Exits 0
 * when every check passed, 77 when @mode is refused here. */
/* In a child: REGCACHE_BPF_ATTACH=@mode ("syscalls" or "fentry"). */
static int run_mode(void *arg)
{
	const char *mode = arg;
	bool fentry = !strcmp(mode, "fentry");
	struct t_bpf_held h0, h1, h2;
	struct io_uring ring;
	struct regcache *c;
	char buf[64] = { 0 };
	int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	long n = T_SCALE(N), m = T_SCALE(N) / 10;
	__u64 undecoded, decoded;

	T_REQUIRE(zero >= 0 && null >= 0);
	setenv("REGCACHE_BPF_ATTACH", mode, 1);
	if (fentry)
		setenv("REGCACHE_LOG", "info", 1);	/* why, if refused */
	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	if (fentry && !t_monitor_is("bpf")) {
		printf("SKIP: REGCACHE_BPF_ATTACH=fentry: the monitor is "
		       "\"%s\" (the library's log above says why)\n",
		       regcache_monitor_name());
		exit(T_EXIT_SKIP);
	}
	t_monitor_require();
	t_bpf_held(&h0);
	if (fentry) {
		T_CHECK(h0.fentry > 0 && h0.syscall_tp == 0);
	} else {
		T_EXPECT_EQ(2, h0.syscall_tp);
		T_EXPECT_EQ(0, h0.fentry);
	}
	for (long i = 0; i < n; i++) {
		syscall(SYS_getppid);
		T_REQUIRE(read(zero, buf, sizeof(buf)) == sizeof(buf));
		T_REQUIRE(write(null, buf, sizeof(buf)) == sizeof(buf));
	}
	t_bpf_held(&h1);
	/* Decoded: munmap of nothing (length 0 fails with EINVAL after
	 * both stages ran), so that no mmap runs a program too. */
	for (long i = 0; i < m; i++)
		syscall(SYS_munmap, buf, 0UL);
	t_bpf_held(&h2);
	if (fentry) {
		undecoded = h1.runs_fentry - h0.runs_fentry;
		decoded = h2.runs_fentry - h1.runs_fentry;
	} else {
		undecoded = h1.runs_syscall_tp - h0.runs_syscall_tp;
		decoded = h2.runs_syscall_tp - h1.runs_syscall_tp;
	}
	printf("%s: %ld each of getppid, read, write: %llu runs of the "
	       "syscall stages; %ld munmaps: %llu runs (%u fentry/fexit and "
	       "%u sys_enter/sys_exit programs held)\n", mode, n,
	       (unsigned long long)undecoded, m, (unsigned long long)decoded,
	       h0.fentry, h0.syscall_tp);
	T_CHECK(decoded >= 2 * (__u64)m);
	if (fentry)
		T_CHECK(undecoded <= (__u64)n / 10);
	else
		T_CHECK(undecoded >= 2 * 3 * (__u64)n);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	exit(t_exit_status());
}

static int in_child(const char *mode)
{
	int status = t_fork_wait(run_mode, (void *)mode, true);

	return WIFEXITED(status) ? WEXITSTATUS(status) : T_EXIT_FAIL;
}

int main(void)
{
	int stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	int control, fe;

	t_monitor_skip_unavailable("bpf");
	if (stats < 0 && (errno == EPERM || errno == EACCES)) {
		printf("SKIP: enabling BPF run counts needs CAP_SYS_ADMIN "
		       "(bpf_enable_stats: %s)\n", strerror(errno));
		return T_EXIT_SKIP;
	}
	T_REQUIRE(stats >= 0);
	control = in_child("syscalls");
	if (control == T_EXIT_SKIP)
		return T_EXIT_SKIP;	/* it printed why */
	T_EXPECT_EQ(T_EXIT_PASS, control);
	fe = in_child("fentry");
	close(stats);
	if (fe == T_EXIT_SKIP && control == T_EXIT_PASS)
		return T_EXIT_SKIP;	/* it printed why */
	T_EXPECT_EQ(T_EXIT_PASS, fe);
	if (!t_failures)
		printf("ok: fentry runs no program for undecoded syscalls; "
		       "sys_enter/sys_exit runs two for each\n");
	return t_exit_status();
}
