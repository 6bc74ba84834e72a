/*
 * Description: userfaultfd monitor, shutdown while other threads unmap:
 * worker threads keep unmapping memory whose VMAs the monitor registered
 * (each munmap waits for the monitor thread's read) and mapping new
 * buffers, while the main thread destroys the last cache (unregister
 * everything, stop the thread, close the fd) and creates a new one, many
 * times. Nothing may hang (alarm() turns a hang into a failure), and after
 * each restart an mmap(MAP_FIXED) over a cached buffer is still seen.
 * The workers map their new buffers anywhere (never MAP_FIXED at the
 * address they just unmapped: between the two calls any other thread's
 * mmap, the monitor's or a sanitizer's, may take that address, and the
 * MAP_FIXED would then destroy it).
 */
#include <signal.h>

#include "helpers.h"

#define ROUNDS T_SCALE(200)
#define NBUF 16
#define LEN 65536

static _Atomic(char *) bufs[2][NBUF];
static atomic_int stop;

static void *unmapper(void *arg)
{
	_Atomic(char *) *mine = arg;
	unsigned i = 0;

	while (!atomic_load(&stop)) {
		_Atomic(char *) *slot = &mine[i++ % NBUF];
		char *b = atomic_load(slot);

		T_REQUIRE(munmap(b, LEN) == 0);
		b = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		T_REQUIRE(b != MAP_FAILED);
		b[0] = 1;
		atomic_store(slot, b);
	}
	return NULL;
}

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	pthread_t th[2];
	char *probe = t_map(LEN);

	t_monitor_only("userfaultfd");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	alarm(250);
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < NBUF; i++)
			atomic_store(&bufs[t][i], t_map(LEN));
	for (int t = 0; t < 2; t++)
		T_REQUIRE(pthread_create(&th[t], NULL, unmapper,
					 (void *)bufs[t]) == 0);

	for (int round = 0; round < ROUNDS; round++) {
		struct regcache_stats st, st2;
		struct regcache_region *r;

		/* Watch the workers' buffers (their VMAs get registered);
		 * a get may race with their munmap: EFAULT is fine. */
		for (int t = 0; t < 2; t++)
			for (int i = 0; i < NBUF; i += 4)
				if (!regcache_get(c, atomic_load(&bufs[t][i]),
						  LEN, 0, &r))
					regcache_put(c, r);
		T_REQUIRE(regcache_get(c, probe, LEN, 0, &r) == 0);
		regcache_put(c, r);
		/* MAP_FIXED over it: no window in which another thread's
		 * mmap (the workers', the runtime's) could take the address. */
		T_REQUIRE(mmap(probe, LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			       0) == probe);
		regcache_get_stats(c, &st);
		T_REQUIRE(regcache_get(c, probe, LEN, 0, &r) == 0);
		regcache_get_stats(c, &st2);
		if (st2.hits != st.hits) {
			fprintf(stderr, "round %d: stale hit after munmap + "
				"mmap (invalidations %llu -> %llu)\n", round,
				(unsigned long long)st.invalidations,
				(unsigned long long)st2.invalidations);
			t_failures++;
		}
		T_CHECK(t_dma_visible(&ring, r, probe, LEN, (unsigned)round));
		regcache_put(c, r);

		regcache_destroy(c);
		c = t_uring_cache(&ring, 0, 0, 0);
	}
	atomic_store(&stop, 1);
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	if (!t_failures)
		printf("ok: %d shutdowns while two threads unmapped watched "
		       "memory\n", ROUNDS);
	return t_exit_status();
}
