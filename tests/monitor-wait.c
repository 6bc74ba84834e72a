/* SPDX-License-Identifier: MIT */
/*
 * Description: regcache_subscriber_wait() wakes a sleeping thread for
 * every change. A thread sleeps in it (5 s timeout) and syncs when it
 * returns 0; the main thread unmaps a watched, cached range (raw syscall
 * and libc, alternately) and the sleeper's sync must report a range
 * covering it within 1 s, every time, while a third thread's gets pull the
 * monitor's records concurrently (the pull may take a record from the
 * kernel between the sleeper's look and its sleep: the lost-wakeup case).
 * Every 16th change is checked with DMA: the reported range is the one
 * whose old pages a held registration still pins (negative control), and
 * a new get sees the new pages. Negative control of the wait itself: with
 * nothing changing it returns -ETIMEDOUT after about its timeout. Under
 * "none" nothing is ever reported: the wait times out even across a
 * munmap. A new subscriber whose ring still holds records nobody pulled
 * sleeps (little CPU) until its timeout. A child forked while the sleeper sleeps: its first wait returns
 * at once, and then its own munmap wakes it. Bad input: -EINVAL.
 *
 * With the argument "bench" it measures instead what a sleeper costs the
 * unmapping thread: munmap of one cached page, medians of rounds without
 * and with a thread asleep in the wait (docs/monitor-bpf.md, Waiting).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <regcache/monitor.h>

#include "helpers.h"
#include "median.h"

static struct regcache_subscriber *sub;
static _Atomic bool done;
static _Atomic uintptr_t target_start, target_end;
static _Atomic bool reported;		/* a sync covered the target */
static _Atomic long sleeper_timeouts, sleeper_errors, sleeper_wakes;

static double now_ms(void)
{
	return t_now() * 1e3;
}

static void on_change(void *arg, uintptr_t start, uintptr_t end)
{
	uintptr_t ts = atomic_load(&target_start), te = atomic_load(&target_end);

	(void)arg;
	if (ts && start <= ts && te <= end)
		atomic_store(&reported, true);
}

/* Sleeps until a change, syncs, sleeps again: a forwarding thread. */
static void *sleeper(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		int ret;

		if (!regcache_subscriber_current(sub)) {
			regcache_subscriber_sync(sub, on_change, NULL);
			continue;
		}
		ret = regcache_subscriber_wait(sub, 5000);
		if (ret == -ETIMEDOUT)
			atomic_fetch_add(&sleeper_timeouts, 1);
		else if (ret)
			atomic_fetch_add(&sleeper_errors, 1);
		else
			atomic_fetch_add(&sleeper_wakes, 1);
	}
	return NULL;
}

/* Gets of a cached region: after every change the first one syncs, which
 * pulls the monitor's records from the kernel (bpf) in this thread. */
static void *puller(void *arg)
{
	struct regcache *c = arg;
	size_t len = 4 * (size_t)sysconf(_SC_PAGESIZE);
	char *buf = t_map(len);

	while (!atomic_load(&done)) {
		struct regcache_region *r;

		if (regcache_get(c, buf, len, 0, &r) == 0)
			regcache_put(c, r);
		sched_yield();
	}
	munmap(buf, len);
	return NULL;
}

/* A change that every monitor reports (userfaultfd only watched ones):
 * wakes the sleeper now rather than at its timeout. */
static void wake_sleeper(size_t len)
{
	char *buf = t_map(len);

	regcache_subscriber_watch(sub, buf, len);
	munmap(buf, len);
}

/* A wait that nothing wakes: -ETIMEDOUT after about @ms. A change made
 * meanwhile by the runtime (a sanitizer's own munmap) ends a wait early
 * with 0, rightly: then sync and try again, up to three times. */
static void expect_timeout(int ms, const char *what)
{
	double t0 = 0, took = 0;
	int ret = 0;

	for (int i = 0; i < 3 && ret != -ETIMEDOUT; i++) {
		regcache_subscriber_sync(sub, on_change, NULL);
		t0 = now_ms();
		ret = regcache_subscriber_wait(sub, ms);
		took = now_ms() - t0;
	}
	if (ret != -ETIMEDOUT || took < ms * 0.9 || took > ms + 1000) {
		fprintf(stderr, "%s: wait(%d ms) returned %d after %.0f ms; "
			"expected -ETIMEDOUT after ~%d ms\n", what, ms, ret,
			took, ms);
		t_failures++;
	} else {
		printf("ok: %s: -ETIMEDOUT after %.0f ms\n", what, took);
	}
}

static void unmap(int how, char *buf, size_t len)
{
	if (how)
		T_REQUIRE(munmap(buf, len) == 0);
	else
		T_REQUIRE(syscall(SYS_munmap, buf, len) == 0);
}

static void *unmap_later(void *buf)
{
	usleep(50000);
	unmap(0, buf, 4 * (size_t)sysconf(_SC_PAGESIZE));
	return NULL;
}

static int run_none(size_t len)
{
	pthread_t t;

	/* Another thread's munmap: nothing is reported, so nothing wakes. */
	T_REQUIRE(pthread_create(&t, NULL, unmap_later, t_map(len)) == 0);
	expect_timeout(300, "monitor none, across a munmap");
	pthread_join(t, NULL);
	return t_exit_status();
}

static void ignore(void *arg, uintptr_t start, uintptr_t end)
{
	(void)arg, (void)start, (void)end;
}

static double thread_cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A subscriber created after changes that nobody has pulled yet (bpf
 * keeps them in the ring, which stays readable): it is current, so its
 * wait sleeps until the timeout, without spinning on the readable ring. */
static void unpulled_records(size_t len)
{
	struct regcache_subscriber *fresh;
	char *buf = t_map(len);
	double cpu, t0;
	int ret = -ETIMEDOUT, left;

	regcache_subscriber_watch(sub, buf, len);
	unmap(0, buf, len);
	T_REQUIRE(regcache_subscriber_create(&fresh) == 0);
	cpu = thread_cpu_ms();
	t0 = now_ms();
	/* Woken by another change (a sanitizer's munmap): sync, sleep on. */
	while ((left = 300 - (int)(now_ms() - t0)) > 0 &&
	       (ret = regcache_subscriber_wait(fresh, left)) == 0)
		regcache_subscriber_sync(fresh, ignore, NULL);
	cpu = thread_cpu_ms() - cpu;
	if (ret != -ETIMEDOUT || cpu > 100) {
		fprintf(stderr, "fresh subscriber, unpulled records: wait "
			"returned %d using %.1f ms of CPU in 300 ms\n", ret, cpu);
		t_failures++;
	} else {
		printf("ok: fresh subscriber, unpulled records: -ETIMEDOUT, "
		       "%.1f ms of CPU in 300 ms\n", cpu);
	}
	regcache_subscriber_destroy(fresh);
}

/* In a child forked while the parent's thread sleeps in the wait: the
 * first wait returns at once (forked: not current), and once synced the
 * child's own monitor wakes the child's sleeper; nothing hangs on the
 * parent's lock or bell. */
static int fork_child(size_t len)
{
	char *buf = t_map(len);
	double t0 = now_ms();
	pthread_t t;
	int ret;

	alarm(20);
	ret = regcache_subscriber_wait(sub, 5000);
	if (ret || now_ms() - t0 > 1000) {
		fprintf(stderr, "child: first wait returned %d after %.0f ms, "
			"expected 0 at once\n", ret, now_ms() - t0);
		return T_EXIT_FAIL;
	}
	regcache_subscriber_sync(sub, ignore, NULL);
	if (regcache_subscriber_watch(sub, buf, len))
		return T_EXIT_FAIL;
	T_REQUIRE(pthread_create(&t, NULL, unmap_later, buf) == 0);
	t0 = now_ms();
	ret = regcache_subscriber_wait(sub, 5000);
	pthread_join(t, NULL);
	if (ret || now_ms() - t0 > 1000) {
		fprintf(stderr, "child: wait across a munmap returned %d after "
			"%.0f ms, expected 0 within 1 s\n", ret, now_ms() - t0);
		return T_EXIT_FAIL;
	}
	printf("ok: forked child: wait returned at once, then woke for the "
	       "child's own munmap after %.1f ms\n", now_ms() - t0);
	return T_EXIT_PASS;
}

static void fork_while_asleep(size_t len)
{
	pthread_t ts;
	pid_t pid;
	int status;

#ifdef __SANITIZE_THREAD__
	/* TSan cannot start threads in the child of a threaded process
	 * ("dup thread with used id"); the plain and ASan runs check this. */
	(void)ts, (void)pid, (void)status, (void)len, (void)fork_child;
	printf("fork check not run under TSan: its runtime cannot start "
	       "threads in a forked child\n");
	return;
#endif
	atomic_store(&done, false);
	T_REQUIRE(pthread_create(&ts, NULL, sleeper, NULL) == 0);
	/* Let it fall asleep (it blocks in the kernel, allocating nothing,
	 * when the child is forked). */
	usleep(100000);
	fflush(stdout);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		int ret = fork_child(len);

		fflush(stdout);
		_exit(ret);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	atomic_store(&done, true);
	wake_sleeper(len);
	pthread_join(ts, NULL);
}

static int run(struct io_uring *ring, struct regcache *c,
	       struct regcache *pull_cache)
{
	size_t len = 4 * (size_t)sysconf(_SC_PAGESIZE);
	int n = T_SCALE(400), late = 0, dma_checked = 0, hole_taken = 0;
	double worst = 0, deadline = now_ms() + T_SECONDS(60) * 1e3;
	pthread_t ts, tp;
	int i;

	atomic_store(&done, false);
	T_REQUIRE(pthread_create(&ts, NULL, sleeper, NULL) == 0);
	T_REQUIRE(pthread_create(&tp, NULL, puller, pull_cache) == 0);
	for (i = 0; i < n && now_ms() < deadline; i++) {
		char *buf = t_map(len);
		struct t_case k;
		bool dma = i % 16 == 0;
		double t0, took;
		int how = i & 1;

		T_REQUIRE(regcache_subscriber_watch(sub, buf, len) == 0);
		if (dma) {
			t_case_begin(&k, ring, c, buf, len);
		} else {
			struct regcache_region *r;

			T_REQUIRE(regcache_get(c, buf, len, 0, &r) == 0);
			regcache_put(c, r);
		}
		/* Let the sleeper go back to sleep after the map's records. */
		usleep(200);
		atomic_store(&reported, false);
		atomic_store(&target_end, (uintptr_t)buf + len);
		atomic_store(&target_start, (uintptr_t)buf);
		unmap(how, buf, len);
		t0 = now_ms();
		while (!atomic_load(&reported) && now_ms() - t0 < 1000)
			usleep(20);
		took = now_ms() - t0;
		atomic_store(&target_start, 0);
		if (took > worst)
			worst = took;
		if (!atomic_load(&reported)) {
			fprintf(stderr, "change %d (%s munmap): the sleeper did "
				"not report it within 1 s\n", i,
				how ? "libc" : "raw");
			late++;
		}
		if (dma) {
			/* Fresh pages at the address, then the old ones must
			 * be the ones the held registration still pins. */
			if (mmap(buf, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
				 -1, 0) != buf) {
				/* Another thread's mapping took the hole. */
				regcache_put(c, k.held);
				hole_taken++;
				continue;
			}
			memset(buf, 0, len);
			t_case_end(&k, how ? "libc munmap, reported by the wait" :
					     "raw munmap, reported by the wait",
				   true);
			dma_checked++;
			munmap(buf, len);
		}
	}
	atomic_store(&done, true);
	wake_sleeper(len);
	pthread_join(tp, NULL);
	pthread_join(ts, NULL);
	printf("%d changes, %d reported late, slowest %.2f ms; %d checked with "
	       "DMA (%d holes taken); sleeper: %ld wakes, %ld timeouts, %ld "
	       "errors\n", i, late, worst, dma_checked, hole_taken,
	       atomic_load(&sleeper_wakes), atomic_load(&sleeper_timeouts),
	       atomic_load(&sleeper_errors));
	T_CHECK(late == 0);
	T_CHECK(i >= n / 4);
	T_CHECK(dma_checked > 0);
	T_EXPECT_EQ(0, atomic_load(&sleeper_errors));
	return t_exit_status();
}

/* ------------------------------------------------------------------------
 * bench: munmap of one cached page, with and without a sleeper
 * ---------------------------------------------------------------------- */

static double now_ns(void)
{
	return t_now() * 1e9;
}

/* Median over @n of the munmap of one cached page. */
static double munmap_ns(struct regcache *c, int n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	double *v = calloc((size_t)n, sizeof(*v)), med;

	T_REQUIRE(v);
	for (int i = 0; i < n; i++) {
		char *buf = t_map(page);
		struct regcache_region *r;
		double t0;

		T_REQUIRE(regcache_get(c, buf, page, 0, &r) == 0);
		regcache_put(c, r);
		/* The sleeper's sync of the previous change is over. */
		usleep(100);
		t0 = now_ns();
		T_REQUIRE(syscall(SYS_munmap, buf, page) == 0);
		v[i] = now_ns() - t0;
	}
	med = median_of(v, (size_t)n);
	free(v);
	return med;
}

static int bench(struct regcache *c)
{
	enum { ROUNDS = 7 };
	double alone[ROUNDS], asleep[ROUNDS];
	int n = T_SCALE(2000);

	for (int r = 0; r < ROUNDS; r++) {
		pthread_t ts;

		alone[r] = munmap_ns(c, n);
		atomic_store(&done, false);
		T_REQUIRE(pthread_create(&ts, NULL, sleeper, NULL) == 0);
		asleep[r] = munmap_ns(c, n);
		atomic_store(&done, true);
		wake_sleeper(4096);
		pthread_join(ts, NULL);
	}
	double a = median_of(alone, ROUNDS), s = median_of(asleep, ROUNDS);

	printf("munmap 1 cached page, monitor %s, medians of %d rounds of %d:\n"
	       "  no sleeper %.0f ns, a thread in regcache_subscriber_wait() "
	       "%.0f ns (+%.0f ns)\n",
	       regcache_monitor_name(), ROUNDS, n, a, s, s - a);
	return T_EXIT_PASS;
}

int main(int argc, char **argv)
{
	size_t len = 4 * (size_t)sysconf(_SC_PAGESIZE);
	struct io_uring ring, pull_ring;
	struct regcache *c, *pull_cache;
	int ret;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	T_EXPECT_EQ(-EINVAL, regcache_subscriber_wait(NULL, 0));
	T_REQUIRE(regcache_subscriber_create(&sub) == 0);
	T_EXPECT_EQ(-EINVAL, regcache_subscriber_wait(sub, -2));
	if (!(regcache_subscriber_caps(sub) & REGCACHE_MONITOR_CAN_CACHE)) {
		ret = run_none(len);
		goto out;
	}
	regcache_subscriber_sync(sub, on_change, NULL);
	ret = regcache_subscriber_wait(sub, 0);
	if (ret == -EOPNOTSUPP) {
		printf("SKIP: monitor %s cannot wake a sleeper\n",
		       regcache_monitor_name());
		ret = T_EXIT_SKIP;
		goto out;
	}
	/* Not current (a change, and no sync yet): returns at once. */
	{
		char *buf = t_map(len);

		T_REQUIRE(regcache_subscriber_watch(sub, buf, len) == 0);
		unmap(0, buf, len);
		T_EXPECT_EQ(0, regcache_subscriber_wait(sub, 5000));
	}
	regcache_subscriber_sync(sub, on_change, NULL);
	if (argc > 1 && !strcmp(argv[1], "bench")) {
		ret = bench(c);
		goto out;
	}
	unpulled_records(len);
	regcache_subscriber_sync(sub, on_change, NULL);
	expect_timeout(300, "nothing changes");
	fork_while_asleep(len);
	regcache_subscriber_sync(sub, on_change, NULL);
	/* The puller's cache is its own: the DMA cases count this one's
	 * hits. */
	t_ring_init(&pull_ring);
	pull_cache = t_uring_cache(&pull_ring, 0, 0, 0);
	ret = run(&ring, c, pull_cache);
	regcache_destroy(pull_cache);
	io_uring_queue_exit(&pull_ring);
	/* Nothing left to report: the wait times out again. */
	regcache_subscriber_sync(sub, on_change, NULL);
	expect_timeout(200, "after the changes");
	ret = t_exit_status();
out:
	regcache_subscriber_destroy(sub);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return ret;
}
