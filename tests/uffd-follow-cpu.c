/*
 * Description: userfaultfd monitor: its thread sleeps on the CPU of the
 * thread that registers memory, so that a release of that memory wakes it
 * without waking another CPU; it follows when that thread moves, and goes
 * back to the CPUs it started with when that thread turns real-time
 * (SCHED_FIFO could keep a thread pinned behind it from ever running). The
 * monitor thread is the one thread of this process other than main; its
 * Cpus_allowed_list in /proc is checked after an event made it loop (each
 * check waits up to 2 s for the move). Negative control: with
 * REGCACHE_UFFD_NO_FOLLOW_CPU=1, in a child, it stays where it started.
 * Needs 2 CPUs; the real-time part needs CAP_SYS_NICE (skipped otherwise,
 * with the reason).
 */
#include <dirent.h>
#include <sched.h>
#include <sys/wait.h>

#include "helpers.h"

static struct io_uring ring;
static struct regcache *cache;
static int cpu_a, cpu_b;	/* two CPUs this process may run on */

/* The monitor thread's Cpus_allowed_list, into @out. */
static void monitor_cpus(char *out, size_t len)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t self = getpid();

	T_REQUIRE(d);
	out[0] = 0;
	while ((e = readdir(d))) {
		char path[300], line[256];
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "Cpus_allowed_list:", 18))
				snprintf(out, len, "%.100s", line + 19);
		fclose(f);
	}
	closedir(d);
	out[strcspn(out, "\n")] = 0;
}

static void on_cpu(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	T_REQUIRE(sched_setaffinity(0, sizeof(s), &s) == 0);
}

/* @n misses from this thread, then a release that the monitor reads. */
static void misses_then_release(int n)
{
	char *b = t_map((size_t)n * 4096 + 4096);
	struct regcache_region *r;

	for (int i = 0; i <= n; i++) {
		b[(size_t)i * 4096] = 1;
		T_REQUIRE(regcache_get(cache, b + (size_t)i * 4096, 4096, 0,
				       &r) == 0);
		regcache_put(cache, r);
	}
	T_REQUIRE(munmap(b, (size_t)n * 4096 + 4096) == 0);
}

/* Whether the monitor thread's CPUs become @want within 2 s. */
static bool monitor_on(const char *want)
{
	char got[128];

	for (int i = 0; i < 200; i++) {
		monitor_cpus(got, sizeof(got));
		if (!strcmp(got, want))
			return true;
		usleep(10000);
	}
	fprintf(stderr, "monitor thread on CPUs %s, expected %s\n", got, want);
	return false;
}

static void start(void)
{
	t_ring_init(&ring);
	cache = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
}

int main(void)
{
	struct sched_param sp = { .sched_priority = 1 };
	char first[128], want[16];
	pid_t pid;
	int status;

	t_monitor_only("userfaultfd");
	{
		cpu_set_t s;
		int n = 0;

		T_REQUIRE(sched_getaffinity(0, sizeof(s), &s) == 0);
		for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
			if (CPU_ISSET(c, &s))
				*(n++ ? &cpu_b : &cpu_a) = c;
		if (n < 2) {
			printf("SKIP: needs 2 CPUs, this process may use 1\n");
			return T_EXIT_SKIP;
		}
	}
	/* Negative control: not following, the thread stays on 0-1. */
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		setenv("REGCACHE_UFFD_NO_FOLLOW_CPU", "1", 1);
		start();
		monitor_cpus(first, sizeof(first));
		on_cpu(cpu_b);
		misses_then_release(1);
		usleep(100000);
		monitor_cpus(first + 64, 64);
		printf("not following: %s, then %s\n", first, first + 64);
		fflush(stdout);
		_exit(strcmp(first, first + 64) ? 1 : 0);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_EXPECT_EQ(1, WIFEXITED(status) && WEXITSTATUS(status) == 0);

	start();
	monitor_cpus(first, sizeof(first));
	printf("monitor thread started on CPUs %s\n", first);
	snprintf(want, sizeof(want), "%d", cpu_b);
	on_cpu(cpu_b);
	misses_then_release(1);
	T_EXPECT_EQ(true, monitor_on(want));
	snprintf(want, sizeof(want), "%d", cpu_a);
	on_cpu(cpu_a);
	misses_then_release(1);
	T_EXPECT_EQ(true, monitor_on(want));
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		printf("SKIP (part): SCHED_FIFO refused (%s): the real-time "
		       "case is not checked\n", strerror(errno));
	} else {
		/* Same CPU: noticed within 64 registrations. */
		misses_then_release(64);
		sp.sched_priority = 0;
		T_REQUIRE(sched_setscheduler(0, SCHED_OTHER, &sp) == 0);
		T_EXPECT_EQ(true, monitor_on(first));
	}
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
