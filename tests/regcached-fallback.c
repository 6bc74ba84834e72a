/*
 * Description: a client whose regcached daemon is gone for good falls
 * back, live, to the next monitor (userfaultfd, as uid 65534) and caches
 * again; nothing cached or watched through the daemon survives the
 * switch. Run by regcached-launch as uid 65534 with no capabilities:
 *
 *   regcached-fallback MODE
 *
 * MODE "fallback": buffers are cached and two regions held while threads
 * keep getting their own buffers; the daemon is SIGKILLed and stays dead.
 * Within the grace period (REGCACHE_REGCACHED_FALLBACK_MS=1000 here) plus
 * a margin, and not before it, the log says the process fell back to
 * "userfaultfd"; gets hit again and stay DMA-correct across munmap,
 * MAP_FIXED, mremap and MADV_DONTNEED; a region cached after the switch
 * over a held region's range stays correct after the held one is put, and
 * no put makes the new monitor unwatch a range it never watched (it would
 * log "not watched (bug)"); a child forked after the switch caches
 * correctly through a monitor of its own.
 * MODE "disabled" (negative control): with REGCACHE_REGCACHED_FALLBACK_MS=0
 * the process stays on the dead daemon's monitor, uncached (no hit), and
 * the log says so.
 * MODE "refused": the daemon comes back but refuses our ring (another
 * process of our uid holds the one connection --max-per-user allows): the
 * process falls back at once, long before the grace period (60 s here).
 * MODE "nowhere": no other monitor can cache here (uid 65534 may not load
 * BPF programs, and a seccomp filter denies userfaultfd): past the grace
 * period (500 ms) the process stays on the dead daemon, uncached, and says
 * so, rather than fall back to "none" (which would stop telling the
 * bridges' subscribers that everything changed); when the daemon is back,
 * it resumes and caches again, DMA-correct.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 65536
#define NTHREADS 3

static struct io_uring ring;
static struct regcache *cache;

/* --- the library's log, teed from a pipe on fd 2 ------------------------- */

static int saved_stderr = -1;
static int log_pipe[2];
static pthread_t log_thread;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[1 << 20];
static size_t log_len;

static void *log_tee(void *arg)
{
	char chunk[4096];
	ssize_t n;

	(void)arg;
	while ((n = read(log_pipe[0], chunk, sizeof(chunk))) > 0) {
		if (write(saved_stderr, chunk, (size_t)n) < 0)
			break;
		pthread_mutex_lock(&log_lock);
		if (log_len + (size_t)n < sizeof(log_buf) - 1) {
			memcpy(log_buf + log_len, chunk, (size_t)n);
			log_len += (size_t)n;
			log_buf[log_len] = 0;
		}
		pthread_mutex_unlock(&log_lock);
	}
	return NULL;
}

static void log_capture(void)
{
	saved_stderr = dup(2);
	T_REQUIRE(saved_stderr >= 0 && pipe(log_pipe) == 0);
	T_REQUIRE(dup2(log_pipe[1], 2) == 2);
	close(log_pipe[1]);
	T_REQUIRE(pthread_create(&log_thread, NULL, log_tee, NULL) == 0);
}

static bool log_has(const char *what)
{
	bool found;

	pthread_mutex_lock(&log_lock);
	found = strstr(log_buf, what) != NULL;
	pthread_mutex_unlock(&log_lock);
	return found;
}

/* Everything written to fd 2 so far has reached log_buf. */
static void log_flush(void)
{
	static unsigned n;
	char mark[64];

	snprintf(mark, sizeof(mark), "regcached-fallback: mark %u\n", ++n);
	T_REQUIRE(write(2, mark, strlen(mark)) == (ssize_t)strlen(mark));
	for (int i = 0; i < 5000 && !log_has(mark); i++)
		usleep(1000);
	T_REQUIRE(log_has(mark));
}

static void log_end(void)
{
	fflush(stderr);
	dup2(saved_stderr, 2);	/* closes the pipe's last write end */
	pthread_join(log_thread, NULL);
}

/* --- helpers ----------------------------------------------------------- */

static uint64_t hits(void)
{
	struct regcache_stats st;

	regcache_get_stats(cache, &st);
	return st.hits;
}

/* get + put of [buf, buf+len), DMA-checked; fills the cache. */
static void touch(char *buf, unsigned seed)
{
	t_get_dma_checked(&ring, cache, buf, LEN, seed);
}

/* DMA-checked gets of @buf until the log says @what, or @limit seconds
 * passed since @t0 (t_now() before the event, the daemon's kill: under
 * emulation the request to kill it can return after the grace period has
 * begun); returns the seconds since @t0 (or -1). */
static double gets_until_log(char *buf, const char *what, double limit,
			     double t0)
{
	unsigned seed = 1000;

	while (t_now() - t0 < limit) {
		touch(buf, seed++);
		if (log_has(what))
			return t_now() - t0;
		usleep(20000);
	}
	return -1;
}

/* --- threads getting their own buffers across the switch ---------------- */

static _Atomic bool stop;
static _Atomic long thread_failures;
static _Atomic long thread_gets;

static void *getter(void *arg)
{
	char *buf = arg;
	double t0 = t_now();

	/* Bounded: stops when told, or after 60 s whatever happens. */
	while (!atomic_load(&stop) && t_now() - t0 < 60) {
		struct regcache_region *r;
		int ret = regcache_get(cache, buf, LEN, 0, &r);

		if (ret || regcache_region_addr(r) > (void *)buf ||
		    (char *)regcache_region_addr(r) + regcache_region_len(r) <
			    buf + LEN) {
			atomic_fetch_add(&thread_failures, 1);
			if (!ret)
				regcache_put(cache, r);
			continue;
		}
		buf[0]++;
		regcache_put(cache, r);
		atomic_fetch_add(&thread_gets, 1);
	}
	return NULL;
}

/* --- modes --------------------------------------------------------------- */

static char *map_at(char *addr, size_t len)
{
	char *p = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	T_REQUIRE(p == addr);
	return p;
}

/* A child forked after the switch drops both the active monitor and the
 * retired one it inherited, starts its own (the daemon is still gone:
 * userfaultfd) and caches correctly. Not under sanitizers: they cannot
 * start the monitor's thread in a child of a multi-threaded parent. */
static void fork_after_switch(void)
{
#ifdef REGCACHE_SANITIZE
	printf("note: the fork-after-fallback part is skipped under "
	       "sanitizers (no threads in a forked child)\n");
#else
	pid_t parent = getpid(), pid = fork();
	int status;

	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		char *d = t_map(LEN);

		t_die_with_parent(parent);
		t_ring_init(&ring);
		cache = t_uring_cache(&ring, 0, 0, 0);
		touch(d, 1);
		if (strcmp(regcache_monitor_name(), "userfaultfd")) {
			fprintf(stderr, "child: monitor %s\n",
				regcache_monitor_name());
			_exit(1);
		}
		touch(d, 2);
		if (hits() == 0) {
			fprintf(stderr, "child: no hit\n");
			_exit(1);
		}
		T_REQUIRE(munmap(d, LEN) == 0);
		map_at(d, LEN);
		touch(d, 3);
		regcache_destroy(cache);
		_exit(t_failures ? 1 : 0);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#endif
}

static void mode_fallback(void)
{
	char *a = t_map(LEN), *b = t_map(LEN), *c = t_map(LEN);
	struct regcache_region *held_a, *held_b;
	pthread_t th[NTHREADS];
	char *tbuf[NTHREADS];
	uint64_t before;
	double waited, t0;

	/* Cached through the daemon; two regions held across the switch. */
	touch(a, 1);
	touch(b, 2);
	before = hits();
	T_REQUIRE(regcache_get(cache, a, LEN, 0, &held_a) == 0);
	T_REQUIRE(regcache_get(cache, b, LEN, 0, &held_b) == 0);
	T_CHECK(hits() == before + 2);
	for (int i = 0; i < NTHREADS; i++) {
		tbuf[i] = t_map(LEN);
		T_REQUIRE(pthread_create(&th[i], NULL, getter, tbuf[i]) == 0);
	}
	usleep(100000);

	t0 = t_now();
	t_daemon_ctl('K');
	waited = gets_until_log(c, "falling back to \"userfaultfd\"", 30, t0);
	printf("fell back %.2f s after the kill was asked (grace 1.00 s)\n",
	       waited);
	T_CHECK(waited >= 1.0);
	T_CHECK(waited < 1.0 + 20);	/* a margin for sanitizer builds */
	T_CHECK(!strcmp(regcache_monitor_name(), "userfaultfd"));
	usleep(100000);
	atomic_store(&stop, true);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	printf("threads: %ld gets across the switch, %ld failures\n",
	       atomic_load(&thread_gets), atomic_load(&thread_failures));
	T_EXPECT_EQ(0, atomic_load(&thread_failures));
	T_CHECK(atomic_load(&thread_gets) > 0);

	/* Cached again, and correct across every change. */
	touch(c, 1);
	before = hits();
	touch(c, 2);
	T_CHECK(hits() > before);
	before = hits();
	t_churn_scenario(&ring, cache, c, LEN);
	printf("churn after the switch: %llu hits\n",
	       (unsigned long long)(hits() - before));
	T_CHECK(hits() > before);

	/* [a, a+LEN) cached again, through the new monitor, while the old
	 * region of the same range is still held; then the old one is put
	 * (deregistered). Were its put to unwatch the range on the new
	 * monitor, the new region's watch would end early and the change
	 * below would go unseen (stale DMA); b's put would log "(bug)". */
	touch(a, 3);
	before = hits();
	touch(a, 4);
	T_CHECK(hits() > before);
	regcache_put(cache, held_a);
	regcache_put(cache, held_b);
	T_REQUIRE(munmap(a, LEN) == 0);
	map_at(a, LEN);
	touch(a, 5);
	T_REQUIRE(madvise(a, LEN, MADV_DONTNEED) == 0);
	touch(a, 6);
	touch(b, 7);
	fork_after_switch();
	log_flush();
	T_CHECK(!log_has("(bug)"));
}

static void mode_disabled(void)
{
	char *c = t_map(LEN);
	uint64_t before;
	double t0;

	touch(c, 1);
	t_daemon_ctl('K');
	/* Longer than the default grace would be: nothing must change. */
	t0 = t_now();
	before = hits();
	while (t_now() - t0 < 2.0) {
		touch(c, 2);
		usleep(20000);
	}
	/* The get right after the kill may still have hit (the kill may
	 * not be seen yet); from then on, none. */
	before = hits();
	for (int i = 0; i < 10; i++)
		touch(c, 10 + i);
	T_EXPECT_EQ(before, hits());
	log_flush();
	T_CHECK(!strcmp(regcache_monitor_name(), "regcached"));
	T_CHECK(!log_has("falling back"));
	T_CHECK(log_has("REGCACHE_REGCACHED_FALLBACK_MS=0: no fallback"));
}

static void mode_refused(void)
{
	char *c = t_map(LEN);
	pid_t parent = getpid(), pid;
	int p[2];
	char ch;
	double waited;

	touch(c, 1);
	t_daemon_ctl('K');
	t_daemon_ctl('S');
	/* A process of our uid takes the one connection the new daemon
	 * allows it: a forked child whose library registers anew. */
	T_REQUIRE(pipe(p) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		char *d = t_map(LEN);
		struct regcache_region *r;
		struct regcache *mine;

		t_die_with_parent(parent);
		/* The parent's ring and cache are not the child's. */
		t_ring_init(&ring);
		mine = t_uring_cache(&ring, 0, 0, 0);
		if (regcache_get(mine, d, LEN, 0, &r))
			_exit(1);
		regcache_put(mine, r);
		ch = strcmp(regcache_monitor_name(), "regcached") ? '-' : '+';
		if (write(p[1], &ch, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	T_REQUIRE(read(p[0], &ch, 1) == 1);
	T_REQUIRE(ch == '+');
	waited = gets_until_log(c, "falling back to \"userfaultfd\"", 30,
				t_now());
	printf("fell back %.2f s after the refusal (grace 60 s)\n", waited);
	T_CHECK(waited >= 0 && waited < 20);
	T_CHECK(log_has("did not take our ring back"));
	T_CHECK(!strcmp(regcache_monitor_name(), "userfaultfd"));
	touch(c, 2);
	touch(c, 3);
	T_CHECK(hits() > 0);
	t_churn_scenario(&ring, cache, c, LEN);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	log_flush();
	T_CHECK(!log_has("(bug)"));
}

static void mode_nowhere(void)
{
	char *c = t_map(LEN);
	uint64_t before;
	double waited, t0;

	touch(c, 1);
	t0 = t_now();
	t_daemon_ctl('K');
	waited = gets_until_log(c, "no other monitor can cache here", 10, t0);
	printf("found nothing to fall back to %.2f s after the kill "
	       "(grace 0.5 s)\n", waited);
	T_CHECK(waited >= 0);
	T_CHECK(!log_has("falling back"));
	T_CHECK(!strcmp(regcache_monitor_name(), "regcached"));
	before = hits();
	for (int i = 0; i < 10; i++)
		touch(c, 10 + i);
	T_EXPECT_EQ(before, hits());
	t_daemon_ctl('S');
	waited = gets_until_log(c, "the daemon is back at", 10, t_now());
	printf("resumed %.2f s after the daemon's restart\n", waited);
	T_CHECK(waited >= 0);
	touch(c, 30);
	touch(c, 31);
	T_CHECK(hits() > before);
	t_churn_scenario(&ring, cache, c, LEN);
	log_flush();
	T_CHECK(!log_has("(bug)"));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "fallback"))
		setenv("REGCACHE_REGCACHED_FALLBACK_MS", "1000", 1);
	else if (!strcmp(mode, "disabled"))
		setenv("REGCACHE_REGCACHED_FALLBACK_MS", "0", 1);
	else if (!strcmp(mode, "refused"))
		setenv("REGCACHE_REGCACHED_FALLBACK_MS", "60000", 1);
	else if (!strcmp(mode, "nowhere")) {
		setenv("REGCACHE_REGCACHED_FALLBACK_MS", "500", 1);
		T_REQUIRE(t_seccomp_deny(SYS_userfaultfd, EPERM) == 0);
	} else {
		fprintf(stderr, "usage: %s fallback|disabled|refused|nowhere\n",
			argv[0]);
		return T_EXIT_FAIL;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	log_capture();
	t_ring_init(&ring);
	cache = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	if (!strcmp(mode, "fallback"))
		mode_fallback();
	else if (!strcmp(mode, "disabled"))
		mode_disabled();
	else if (!strcmp(mode, "refused"))
		mode_refused();
	else
		mode_nowhere();
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	log_end();
	return t_exit_status();
}
