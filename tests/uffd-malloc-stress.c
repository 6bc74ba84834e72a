/*
 * Description: userfaultfd monitor, no deadlock: threads that malloc and
 * free heavily (small and large chunks, so glibc trims and unmaps watched
 * heap memory), a jemalloc-like allocator thread (carves chunks from a big
 * arena and gives free ones back with MADV_DONTNEED, purging with munmap of
 * the arena's tail), and threads that get and put regions of malloc'd and
 * arena memory, all at once while the monitor runs. Bounded by iteration
 * counts; a hang is turned into a failure by alarm(). DMA through a sample
 * of the gets must be visible.
 */
#include <malloc.h>
#include <signal.h>

#include "helpers.h"

#define ITERS T_SCALE(20000)
#define ARENA (16 << 20)
#define CHUNK 65536

static struct io_uring ring;
static struct regcache *cache;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static char *arena;
static atomic_long gets, dma_fail;

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void *mallocer(void *arg)
{
	unsigned s = (unsigned)(uintptr_t)arg;
	void *keep[64] = { 0 };

	for (int i = 0; i < ITERS; i++) {
		unsigned k = rnd(&s) % 64;
		size_t sz = rnd(&s) % 8 ? 16 + rnd(&s) % 8192
					: 128 * 1024 + rnd(&s) % (1 << 20);

		free(keep[k]);
		keep[k] = malloc(sz);
		T_REQUIRE(keep[k]);
		memset(keep[k], 1, sz < 4096 ? sz : 4096);
		if (i % 1000 == 0)
			malloc_trim(0);
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	return NULL;
}

/* jemalloc-like: dirty chunks are purged with MADV_DONTNEED, and now and
 * then the arena's top chunk is unmapped and mapped again. The hole is
 * anyone's until it is mapped again: the mallocers' large chunks are mmaps
 * of their own (glibc's, or the sanitizer's), so the top chunk comes back
 * with MAP_FIXED_NOREPLACE and, once another mapping has taken its place,
 * is left to that mapping. MAP_FIXED there would zero a live malloc chunk. */
static void *purger(void *arg)
{
	unsigned s = (unsigned)(uintptr_t)arg;
	char *top = arena + ARENA - CHUNK;
	int taken = 0;

	for (int i = 0; i < ITERS; i++) {
		size_t k = rnd(&s) % (ARENA / CHUNK - 1);

		madvise(arena + k * CHUNK, CHUNK, MADV_DONTNEED);
		if (top && i % 64 == 0) {
			T_REQUIRE(munmap(top, CHUNK) == 0);
			void *p = mmap(top, CHUNK, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS |
					       MAP_FIXED_NOREPLACE,
				       -1, 0);
			if (p == MAP_FAILED && errno == EEXIST) {
				top = NULL;
				taken = 1;
				continue;
			}
			T_REQUIRE(p == top);
		}
	}
	if (taken)
		printf("the arena's top chunk was taken by another mapping "
		       "while unmapped; the purger left it alone\n");
	return NULL;
}

static void *getter(void *arg)
{
	unsigned s = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < ITERS; i++) {
		struct regcache_region *r;
		bool from_heap = rnd(&s) % 2;
		size_t len = 4096 + rnd(&s) % CHUNK;
		char *buf = from_heap ? malloc(len)
				      : arena + (rnd(&s) % (ARENA / CHUNK - 2)) *
							CHUNK;

		T_REQUIRE(buf);
		if (!from_heap)
			len = CHUNK;
		T_REQUIRE(regcache_get(cache, buf, len, 0, &r) == 0);
		atomic_fetch_add(&gets, 1);
		if (from_heap && i % 64 == 0) {
			/* Only heap buffers are ours alone: the purger may
			 * discard an arena chunk at any moment. */
			pthread_mutex_lock(&ring_lock);
			if (!t_dma_visible(&ring, r, buf, len < 65536 ? len : 65536,
					   (unsigned)i))
				atomic_fetch_add(&dma_fail, 1);
			pthread_mutex_unlock(&ring_lock);
		}
		regcache_put(cache, r);
		if (from_heap)
			free(buf);
	}
	return NULL;
}

int main(void)
{
	pthread_t th[6];
	struct regcache_stats st;

	t_monitor_only("userfaultfd");
	t_ring_init(&ring);
	cache = t_uring_cache(&ring, 0, 4096, 0);
	t_monitor_require();
	alarm(280);
	arena = t_map(ARENA);
	memset(arena, 1, ARENA);

	T_REQUIRE(pthread_create(&th[0], NULL, mallocer, (void *)1) == 0);
	T_REQUIRE(pthread_create(&th[1], NULL, mallocer, (void *)2) == 0);
	T_REQUIRE(pthread_create(&th[2], NULL, purger, (void *)3) == 0);
	T_REQUIRE(pthread_create(&th[3], NULL, getter, (void *)4) == 0);
	T_REQUIRE(pthread_create(&th[4], NULL, getter, (void *)5) == 0);
	T_REQUIRE(pthread_create(&th[5], NULL, getter, (void *)6) == 0);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);

	regcache_get_stats(cache, &st);
	printf("%ld gets: %llu hits, %llu misses, %llu uncached, %llu "
	       "invalidations; %ld DMA failures\n", atomic_load(&gets),
	       (unsigned long long)st.hits, (unsigned long long)st.misses,
	       (unsigned long long)st.uncached,
	       (unsigned long long)st.invalidations, atomic_load(&dma_fail));
	T_EXPECT_EQ(0, atomic_load(&dma_fail));
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
