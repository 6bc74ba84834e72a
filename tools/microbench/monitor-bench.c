/*
 * Description: measurements of whichever monitor $REGCACHE_MONITOR selects
 * (not a pass/fail test; exits 0 unless something breaks): hit cost of
 * get+put; median latency of munmap and madvise(MADV_DONTNEED) of one
 * page, with no cache (monitor idle) and with a cache (monitor running, the
 * page cached); the per-syscall cost of getppid() in an unrelated process
 * before and while the monitor is running; and the time to start and stop
 * the monitor. Run it once per backend to compare:
 *   for m in none userfaultfd bpf; do REGCACHE_MONITOR=$m tools/microbench/monitor-bench; done
 * Caches use REGCACHE_FLAG_EXPLICIT_INVALIDATE so that "none" also caches
 * and the hit path is the same code for every backend.
 * Argument: scale factor for the iteration counts (default 1).
 */
#include <sys/wait.h>
#include <time.h>

#include "device.h"
#include "helpers.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/syscall.h>

/* getppid() ns/call in a fresh child process (another tgid, another mm):
 * the machine-wide tax of attached syscall tracepoints. */
static double unrelated_syscall_ns(long iters)
{
	int fds[2], status;
	double ns = 0;
	pid_t pid;

	T_REQUIRE(pipe(fds) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		double best = 1e18;

		for (int round = 0; round < 5; round++) {
			double t0 = now_ns();

			for (long i = 0; i < iters; i++)
				syscall(SYS_getppid);
			t0 = (now_ns() - t0) / iters;
			best = t0 < best ? t0 : best;
		}
		(void)!write(fds[1], &best, sizeof(best));
		_exit(0);
	}
	T_REQUIRE(read(fds[0], &ns, sizeof(ns)) == sizeof(ns));
	waitpid(pid, &status, 0);
	close(fds[0]);
	close(fds[1]);
	return ns;
}

/* Median ns of munmap (op 0) or madvise(DONTNEED) (op 1) of one touched
 * page; with @c, the page is cached (watched) first. */
static double page_op_ns(struct regcache *c, int op, int n)
{
	double *v = calloc(n, sizeof(*v));
	struct regcache_region *r;
	double m;

	for (int i = 0; i < n; i++) {
		char *p = t_map(4096);
		double t0;

		p[0] = 1;
		if (c) {
			T_REQUIRE(regcache_get(c, p, 4096, 0, &r) == 0);
			regcache_put(c, r);
		}
		t0 = now_ns();
		if (op == 0)
			munmap(p, 4096);
		else
			madvise(p, 4096, MADV_DONTNEED);
		v[i] = now_ns() - t0;
		if (op == 1) {
			if (c) {
				/* drain what the madvise published */
				T_REQUIRE(regcache_get(c, p, 4096, 0, &r) == 0);
				regcache_put(c, r);
				regcache_invalidate(c, p, 4096);
			}
			munmap(p, 4096);
		}
	}
	m = median(v, n);
	free(v);
	return m;
}

#define ROUNDS 5

static double min_of(const double *v)
{
	double m = v[0];

	for (int i = 1; i < ROUNDS; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 1;
	long hits = T_SCALE(2000000) * scale, sys_iters = T_SCALE(100000) * scale;
	int ops = T_SCALE(5000) * scale;
	/* Per round: the same process with no monitor, then with one; the
	 * minimum over rounds of each median filters out noise from other
	 * load on the machine. */
	double idle_sys[ROUNDS], run_sys[ROUNDS], idle_unmap[ROUNDS],
		idle_madv[ROUNDS], unmap[ROUNDS], madv[ROUNDS],
		plain_unmap[ROUNDS], plain_madv[ROUNDS], start_ms[ROUNDS],
		stop_ms[ROUNDS];
	struct regcache_region *r;
	struct io_uring ring;
	struct regcache *c;
	const char *name = "?";
	double t0, hit;
	char *buf;

	t_ring_init(&ring);
	page_op_ns(NULL, 0, ops);	/* warm up */
	for (int i = 0; i < ROUNDS; i++) {
		idle_sys[i] = unrelated_syscall_ns(sys_iters);
		idle_unmap[i] = page_op_ns(NULL, 0, ops);
		idle_madv[i] = page_op_ns(NULL, 1, ops);

		t0 = now_ns();
		c = t_uring_cache(&ring, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0,
				  0);
		start_ms[i] = (now_ns() - t0) / 1e6;
		name = regcache_monitor_name();
		run_sys[i] = unrelated_syscall_ns(sys_iters);
		unmap[i] = page_op_ns(c, 0, ops);
		madv[i] = page_op_ns(c, 1, ops);
		plain_unmap[i] = page_op_ns(NULL, 0, ops);
		plain_madv[i] = page_op_ns(NULL, 1, ops);
		t0 = now_ns();
		regcache_destroy(c);
		stop_ms[i] = (now_ns() - t0) / 1e6;
	}

	c = t_uring_cache(&ring, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	buf = t_map(65536);
	T_REQUIRE(regcache_get(c, buf, 65536, 0, &r) == 0);
	regcache_put(c, r);
	t0 = now_ns();
	for (long i = 0; i < hits; i++) {
		T_REQUIRE(regcache_get(c, buf + (i & 4095), 4096, 0, &r) == 0);
		regcache_put(c, r);
	}
	hit = (now_ns() - t0) / hits;
	regcache_destroy(c);

	printf("monitor %s (min over %d rounds of the median)\n", name, ROUNDS);
	printf("  hit get+put                %7.1f ns\n", hit);
	printf("  munmap 1 page:  no monitor %6.2f us | running: not cached "
	       "%6.2f us, cached %6.2f us (+%.2f)\n", min_of(idle_unmap) / 1e3,
	       min_of(plain_unmap) / 1e3, min_of(unmap) / 1e3,
	       (min_of(unmap) - min_of(idle_unmap)) / 1e3);
	printf("  madvise 1 page: no monitor %6.2f us | running: not cached "
	       "%6.2f us, cached %6.2f us (+%.2f)\n", min_of(idle_madv) / 1e3,
	       min_of(plain_madv) / 1e3, min_of(madv) / 1e3,
	       (min_of(madv) - min_of(idle_madv)) / 1e3);
	printf("  getppid in another process: no monitor %6.1f ns | running "
	       "%6.1f ns (+%.1f)\n", min_of(idle_sys), min_of(run_sys),
	       min_of(run_sys) - min_of(idle_sys));
	printf("  monitor start (first cache) %.1f ms, stop (last destroy) "
	       "%.1f ms\n", min_of(start_ms), min_of(stop_ms));
	io_uring_queue_exit(&ring);
	munmap(buf, 65536);
	return t_exit_status();
}
