/*
 * Description: signal storms. Worker threads, each with its own ring and
 * cache, get and put random buffers with a DMA check and munmap and map
 * them again (so the monitor invalidates), while a storm thread sends them
 * signals as fast as it can: SIGUSR1 (handler installed with SA_RESTART),
 * SIGUSR2 (handler without SA_RESTART), both to single threads and to the
 * process (so a library thread, e.g. the userfaultfd monitor's, may take
 * them). The handlers only count; none calls regcache (include/regcache.h:
 * no call but regcache_version() is async-signal-safe).
 *
 * Fails on any stale byte, any error from regcache_get() (EINTR included:
 * no regcache call documents it), a crash, or a thread without progress
 * for 30 s (watchdog).
 *
 * Negative controls, under the same storm: a read() from an empty pipe in
 * a thread that takes SIGUSR2 must fail with EINTR (the storm interrupts
 * blocking calls, so an EINTR regcache let out would be seen), and DMA
 * through a registration held while new pages are mapped over it
 * (MAP_FIXED) must be seen as stale.
 *
 * Usage: signal-storm [--seconds S]   (default 10)
 */
#include <signal.h>
#include <stdatomic.h>

#include "helpers.h"

#define NWORKERS 3
#define NBUF 8
#define MAXPAGES 16
#define HANG_SECONDS 30

static atomic_bool stop;
static atomic_ulong checks, stale, errors, eintr_seen, controls_stale,
	controls;
static atomic_ulong heartbeat[NWORKERS + 1];
static atomic_ulong handled[2];
static pthread_t workers[NWORKERS + 1];	/* + the control thread */
static pthread_mutex_t dma_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t page;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&handled[0], 1, memory_order_relaxed);
}

static void on_usr2(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&handled[1], 1, memory_order_relaxed);
}

/* t_dma_visible shares one source buffer between callers. */
static bool dma_check(struct io_uring *ring, struct regcache_region *r,
		      void *buf, size_t len, unsigned seed)
{
	bool ok;

	pthread_mutex_lock(&dma_lock);
	ok = t_dma_visible(ring, r, buf, len, seed);
	pthread_mutex_unlock(&dma_lock);
	return ok;
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, seed = 0x9e3779b9u * (id + 1);
	struct io_uring ring;
	struct regcache *c;
	char *buf[NBUF];
	size_t len[NBUF];

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	for (int i = 0; i < NBUF; i++) {
		len[i] = page * (1 + t_rnd(&seed) % MAXPAGES);
		buf[i] = t_map(len[i]);
	}
	while (!atomic_load(&stop)) {
		int i = t_rnd(&seed) % NBUF;
		size_t off = page * (t_rnd(&seed) % (len[i] / page));
		size_t n = len[i] - off;
		struct regcache_region *r;
		int ret = regcache_get(c, buf[i] + off, n, 0, &r);

		if (ret) {
			if (atomic_fetch_add(&errors, 1) < 10)
				fprintf(stderr, "signal-storm: regcache_get: "
					"%s\n", strerror(-ret));
			continue;
		}
		if (!dma_check(&ring, r, buf[i] + off, n, t_rnd(&seed)))
			atomic_fetch_add(&stale, 1);
		regcache_put(c, r);
		atomic_fetch_add(&checks, 1);
		atomic_fetch_add(&heartbeat[id], 1);
		if (t_rnd(&seed) % 4 == 0) {
			/* New pages: elsewhere, or in place (MAP_FIXED). */
			if (t_rnd(&seed) % 2) {
				T_REQUIRE(munmap(buf[i], len[i]) == 0);
				buf[i] = t_map(len[i]);
			} else {
				T_REQUIRE(mmap(buf[i], len[i],
					       PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS |
						       MAP_FIXED, -1,
					       0) == buf[i]);
			}
		}
	}
	for (int i = 0; i < NBUF; i++)
		munmap(buf[i], len[i]);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return NULL;
}

/* The control thread blocks reading [0]; main closes [1] to end it (a
 * signal could come before the read and leave it blocked). */
static int control_pipe[2];

/* Negative controls under the storm (see the top). */
static void *control(void *arg)
{
	struct io_uring ring;
	struct regcache *c;
	char ch;

	(void)arg;
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	while (!atomic_load(&stop)) {
		char *buf = t_map(4 * page);
		/* Empty until main closes the write end: blocks. */
		ssize_t n = read(control_pipe[0], &ch, 1);

		if (n < 0 && errno == EINTR)
			atomic_fetch_add(&eintr_seen, 1);
		if (!t_monitor_is("none")) {
			/* A registration held across new pages at its
			 * address: DMA through it must land elsewhere. */
			struct regcache_region *r;

			T_REQUIRE(regcache_get(c, buf, 4 * page, 0, &r) == 0);
			if (!dma_check(&ring, r, buf, 4 * page, 76))
				atomic_fetch_add(&stale, 1);
			/* New pages in place, atomically (other threads
			 * map memory meanwhile). */
			T_REQUIRE(mmap(buf, 4 * page, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				       -1, 0) == buf);
			if (!dma_check(&ring, r, buf, 4 * page, 77))
				atomic_fetch_add(&controls_stale, 1);
			regcache_put(c, r);
			atomic_fetch_add(&controls, 1);
		}
		munmap(buf, 4 * page);
		atomic_fetch_add(&heartbeat[NWORKERS], 1);
	}
	close(control_pipe[0]);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return NULL;
}

static void *storm(void *arg)
{
	unsigned seed = 12345;
	unsigned long *sent = arg;

	while (!atomic_load(&stop)) {
		for (int i = 0; i < 64; i++) {
			int sig = t_rnd(&seed) % 2 ? SIGUSR1 : SIGUSR2;
			unsigned to = t_rnd(&seed) % (NWORKERS + 2);

			if (to == NWORKERS + 1)
				kill(getpid(), sig);
			else
				pthread_kill(workers[to], sig);
			(*sent)++;
		}
		usleep(50);
	}
	return NULL;
}

static void *watchdog(void *arg)
{
	unsigned long last[NWORKERS + 1] = { 0 };
	double since[NWORKERS + 1];

	(void)arg;
	for (int i = 0; i <= NWORKERS; i++)
		since[i] = t_now();
	while (!atomic_load(&stop)) {
		sleep(1);
		for (int i = 0; i <= NWORKERS; i++) {
			unsigned long hb = atomic_load(&heartbeat[i]);

			if (hb != last[i]) {
				last[i] = hb;
				since[i] = t_now();
			} else if (t_now() - since[i] > HANG_SECONDS) {
				fprintf(stderr, "signal-storm: HANG: thread %d "
					"made no progress for %d s\n", i,
					HANG_SECONDS);
				_exit(T_EXIT_FAIL);
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { 0 };
	double seconds, t0, elapsed;
	unsigned long sent = 0;
	struct io_uring ring;
	struct regcache *c;
	pthread_t st, dog;

	seconds = t_arg_seconds(argc, argv, T_SECONDS(6));
	page = sysconf(_SC_PAGESIZE);
	/* The first cache starts the monitor before any signal flies. */
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	T_REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	sa.sa_handler = on_usr2;
	sa.sa_flags = 0;
	T_REQUIRE(sigaction(SIGUSR2, &sa, NULL) == 0);

	printf("signal-storm: monitor %s, %.0f s, %d workers\n",
	       regcache_monitor_name(), seconds, NWORKERS);
	fflush(stdout);
	for (int i = 0; i < NWORKERS; i++)
		T_REQUIRE(pthread_create(&workers[i], NULL, worker,
					 (void *)(uintptr_t)i) == 0);
	T_REQUIRE(pipe(control_pipe) == 0);
	T_REQUIRE(pthread_create(&workers[NWORKERS], NULL, control, NULL) ==
		  0);
	T_REQUIRE(pthread_create(&dog, NULL, watchdog, NULL) == 0);
	T_REQUIRE(pthread_create(&st, NULL, storm, &sent) == 0);
	t0 = t_now();
	while (t_now() - t0 < seconds)
		usleep(100000);
	atomic_store(&stop, true);
	pthread_join(st, NULL);
	/* End the control thread's read(): EOF from now on. */
	close(control_pipe[1]);
	for (int i = 0; i <= NWORKERS; i++)
		pthread_join(workers[i], NULL);
	pthread_join(dog, NULL);
	elapsed = t_now() - t0;
	regcache_destroy(c);
	io_uring_queue_exit(&ring);

	printf("signal-storm: %.1f s: %lu signals sent, %lu + %lu handled "
	       "(SA_RESTART / not), %lu checks, %lu stale, %lu errors; "
	       "controls: %lu EINTR from read(), %lu of %lu held "
	       "registrations seen stale\n", elapsed, sent,
	       atomic_load(&handled[0]), atomic_load(&handled[1]),
	       atomic_load(&checks), atomic_load(&stale),
	       atomic_load(&errors), atomic_load(&eintr_seen),
	       atomic_load(&controls_stale), atomic_load(&controls));
	T_CHECK(atomic_load(&checks) > 0);
	T_EXPECT_EQ(0, atomic_load(&stale));
	T_EXPECT_EQ(0, atomic_load(&errors));
	/* Negative controls: the storm interrupts blocking calls, and the
	 * oracle sees a stale registration. */
	T_CHECK(atomic_load(&eintr_seen) > 0);
	T_CHECK(atomic_load(&handled[0]) > 0 && atomic_load(&handled[1]) > 0);
	T_EXPECT_EQ(atomic_load(&controls), atomic_load(&controls_stale));
	if (!t_monitor_is("none"))
		T_CHECK(atomic_load(&controls) > 0);
	return t_exit_status();
}
