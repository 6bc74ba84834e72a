/*
 * Description: 128 clients that start at once, as the ranks of an MPI job
 * do, are all served by regcached within 1 s. Each registration inserts a
 * ring into a BPF hash-of-maps, which costs the kernel a synchronize_rcu()
 * (8-24 ms): one by one, 128 would take 1-3 s; the daemon batches them.
 * 128 processes (uid 65534, regcached-launch) wait on one pipe, then each
 * creates its first cache; the test takes the time from the release to the
 * last one's "ready" (monitor "regcached"). The bound is not checked under
 * sanitizers or emulation ($REGCACHE_TEST_SLOWDOWN), which slow every
 * step; the 128 clients must still all be served.
 */
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define N 128

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	int go[2], rep[2], done[2], ok = 0;
	double t0, last = 0;

	T_REQUIRE(pipe(go) == 0 && pipe(rep) == 0 && pipe(done) == 0);
	/* Under emulation a client may wait longer than the library's 5 s
	 * for its reply (seen: 8 of 128 on a guest sharing two cores with
	 * two others), and would take the daemon for stuck. */
	if (t_slowdown() > 1) {
		char ms[32];

		snprintf(ms, sizeof(ms), "%d", 5000 * t_slowdown());
		T_REQUIRE(setenv("REGCACHE_REGCACHED_TIMEOUT_MS", ms, 1) == 0);
	}
	for (int i = 0; i < N; i++) {
		pid_t pid = fork();

		T_REQUIRE(pid >= 0);
		if (pid == 0) {
			struct io_uring ring;
			struct regcache *c;
			double t[2];
			char b;

			close(go[1]);
			close(done[1]);
			T_REQUIRE(read(go[0], &b, 1) == 1);
			t_ring_init(&ring);
			c = t_uring_cache(&ring, 0, 0, 0);
			t[0] = now_s();
			t[1] = !strcmp(regcache_monitor_name(), "regcached");
			T_REQUIRE(write(rep[1], t, sizeof(t)) == sizeof(t));
			/* Stay registered until everyone is. */
			T_REQUIRE(read(done[0], &b, 1) == 0);
			regcache_destroy(c);
			_exit(0);
		}
	}
	close(go[0]);
	close(done[0]);
	usleep(300000);
	t0 = now_s();
	for (int i = 0; i < N; i++)
		T_REQUIRE(write(go[1], "g", 1) == 1);
	for (int i = 0; i < N; i++) {
		double t[2];

		T_REQUIRE(read(rep[0], t, sizeof(t)) == sizeof(t));
		ok += t[1] == 1;
		if (t[0] > last)
			last = t[0];
	}
	close(done[1]);
	while (wait(NULL) > 0)
		;
	printf("%d of %d clients ready with regcached, the last %.0f ms after "
	       "the start\n", ok, N, (last - t0) * 1e3);
	T_EXPECT_EQ(N, ok);
#ifndef REGCACHE_SANITIZE
	if (t_slowdown() == 1)
		T_CHECK(last - t0 <= 1.0);
	else
		printf("SKIP (part): the 1 s bound is not checked under "
		       "emulation (REGCACHE_TEST_SLOWDOWN=%d)\n",
		       t_slowdown());
#endif
	return t_exit_status();
}
