/* SPDX-License-Identifier: MIT */
/*
 * Description: the UCX bridge's forwarding thread (REGCACHE_UCX_THREAD=1,
 * as UCX >= 1.14 gets) costs no CPU while nothing changes: it sleeps in
 * regcache_subscriber_wait(). Its own CPU time (the thread named
 * rc-ucx-forward) over 2 s of idleness must stay below the percentage of
 * one core given as "below P"; the negative control runs the old polling
 * mode (REGCACHE_UCX_POLL_US=20) with "above P" and must use more. After
 * the idle period the thread must still forward a raw munmap of a cached
 * region within 1 s (asleep, not dead). Run with the bridge preloaded
 * (CTest does, through regcache-run).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bridge_ucx_rcache.h"

static struct t_registrar treg;

static double now_ms(void)
{
	return t_now() * 1e3;
}

/* The tid of this process's thread named @name, or 0. */
static pid_t find_thread(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;

	T_REQUIRE(d);
	while (!tid && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, name, strlen(name)))
			tid = atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

/* CPU time of thread @tid in ms: its per-thread CPU clock (the clockid
 * encoding that clock_getcpuclockid uses for threads). */
static double thread_cpu_ms(pid_t tid)
{
	clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 6);
	struct timespec t;

	T_REQUIRE(clock_gettime(clock, &t) == 0);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long (*forwarded)(void) =
		(long (*)(void))dlsym(RTLD_DEFAULT, "regcache_ucx_bridge_forwarded");
	struct timespec idle = { 2, 0 };
	size_t len = 16 * 4096;
	ucs_rcache_t *rcache;
	struct regcache *c;
	double limit, cpu, t0;
	bool below;
	long before;
	pid_t tid;

	if (argc != 3 || (strcmp(argv[1], "below") && strcmp(argv[1], "above"))) {
		fprintf(stderr, "usage: bridge-ucx-idle below|above PERCENT\n");
		return T_EXIT_FAIL;
	}
	below = !strcmp(argv[1], "below");
	limit = atof(argv[2]);
	t_registrar_init(&treg, 64);
	c = t_registrar_cache(&treg, 0, 0, 0);
	t_monitor_require();
	rcache = b_ucx_rcache_create(&treg, "bridge-idle");
	T_REQUIRE(rcache);
	if (!forwarded || forwarded() < 0) {
		fprintf(stderr, "the UCX bridge is not forwarding (not "
			"preloaded, or no synchronous monitor)\n");
		return T_EXIT_FAIL;
	}
	/* The thread names itself when it first runs, which on a loaded
	 * machine can be after this point: give it 5 s. */
	for (int i = 0; i < 500 && !(tid = find_thread("rc-ucx-forward")); i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	if (!tid) {
		fprintf(stderr, "no forwarding thread (REGCACHE_UCX_THREAD=1 "
			"missing?)\n");
		return T_EXIT_FAIL;
	}
	/* Settle: the thread forwards what setting up changed. */
	usleep(100000);
	cpu = thread_cpu_ms(tid);
	nanosleep(&idle, NULL);
	cpu = thread_cpu_ms(tid) - cpu;
	printf("forwarding thread (%s): %.2f ms of CPU in 2 s idle = %.2f%% of "
	       "one core; must be %s %.1f%%\n",
	       getenv("REGCACHE_UCX_POLL_US") ? "polling" : "sleeping", cpu,
	       cpu / 20, argv[1], limit);
	T_CHECK(below ? cpu / 20 < limit : cpu / 20 > limit);

	/* Still alive: a change is forwarded. */
	before = b_ucx_raw_unmap(rcache, len, forwarded, 1000);
	t0 = now_ms();
	while (forwarded() == before && now_ms() - t0 < 1000)
		usleep(10);
	printf("a raw munmap after the idle period forwarded after %.3f ms\n",
	       now_ms() - t0);
	T_CHECK(forwarded() != before);

	ucs_rcache_destroy(rcache);
	regcache_destroy(c);
	t_registrar_fini(&treg);
	return t_exit_status();
}
