/*
 * Description: free() of a large malloc chunk (glibc unmaps it) followed
 * by a malloc that returns the same address is never served from the old
 * registration, with no malloc hook anywhere. Runs under each kernel
 * monitor.
 */
#include <malloc.h>

#include "helpers.h"

#define SIZE (512 * 1024)
#define LEN 65536

/* The premise: free() unmaps a chunk this large at once (glibc does; an
 * allocator put in by LD_PRELOAD, jemalloc say, keeps it mapped). */
static bool free_unmaps(void)
{
	char *p = malloc(SIZE), *pg;
	unsigned char vec;

	T_REQUIRE(p);
	pg = (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
	memset(p, 1, SIZE);
	free(p);
	return mincore(pg, 4096, &vec) == -1 && errno == ENOMEM;
}

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *p, *q, *buf;
	int tries;

#if defined(__SANITIZE_ADDRESS__)
	printf("SKIP: ASan replaces malloc; this test is about glibc's free() "
	       "unmapping a chunk\n");
	return T_EXIT_SKIP;
#endif
	/* A fixed threshold: glibc would otherwise move big frees to the
	 * heap after the first one. */
	T_REQUIRE(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);
	if (!free_unmaps()) {
		printf("SKIP: free() of a %d KiB chunk leaves it mapped: the "
		       "malloc in use is not glibc's (LD_PRELOAD=%s), and this "
		       "test is about glibc's free() unmapping a chunk\n",
		       SIZE / 1024, getenv("LD_PRELOAD") ? getenv("LD_PRELOAD")
							 : "");
		return T_EXIT_SKIP;
	}
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	for (tries = 0; tries < 20; tries++) {
		p = malloc(SIZE);
		T_REQUIRE(p);
		buf = (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
		t_case_begin(&k, &ring, c, buf, LEN);
		free(p);
		q = malloc(SIZE);
		T_REQUIRE(q);
		if (q == p)
			break;
		/* Not reused this time: the region is stale anyway. */
		regcache_put(c, k.held);
		free(q);
	}
	T_REQUIRE(tries < 20);
	t_case_end(&k, "free() + malloc() at the same address", true);
	free(q);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
