/*
 * Description: the io_uring registrar on kernels without sparse buffer
 * tables (before 5.19: Ubuntu 22.04's 5.15, RHEL 9's 5.14), forced with
 * $REGCACHE_URING_NO_SPARSE: regcache_uring_create() registers 16384 empty
 * iovecs instead, and the cache works through that table as through a
 * sparse one: the twelve DMA-checked gets of t_churn_scenario() across
 * munmap, MAP_FIXED, mremap and MADV_DONTNEED, and 64 buffers held at once
 * in 64 slots, each DMA-checked.
 *
 * Negative control: the log line that says the empty-iovec table was taken
 * is looked for; without the variable, on a kernel with sparse tables, it
 * must not appear (so the check can tell the two ways apart).
 */
#include <unistd.h>

#include "helpers.h"

#define LEN 16384
#define HELD 64
#define FALLBACK_LINE "registered 16384 empty slots instead"

/* Create a cache on @ring with stderr captured; whether the log said that
 * the empty-iovec table was registered. */
static bool create_logged(struct io_uring *ring, struct regcache **c)
{
	char line[512];
	bool seen = false;
	FILE *log = tmpfile();
	int saved = dup(2);

	T_REQUIRE(log && saved >= 0);
	fflush(stderr);
	T_REQUIRE(dup2(fileno(log), 2) == 2);
	*c = t_uring_cache(ring, 0, 0, 0);
	fflush(stderr);
	T_REQUIRE(dup2(saved, 2) == 2);
	close(saved);
	rewind(log);
	while (fgets(line, sizeof(line), log)) {
		fputs(line, stderr);	/* kept in the test's output */
		seen |= strstr(line, FALLBACK_LINE) != NULL;
	}
	fclose(log);
	return seen;
}

int main(void)
{
	struct regcache_region *held[HELD];
	struct io_uring ring, ring2;
	struct regcache *c, *c2;
	char *buf = t_map(LEN), *many = t_map(HELD * LEN);
	bool fallback, sparse_kernel;

	setenv("REGCACHE_LOG", "info", 1);
	t_ring_init(&ring2);
	/* Without the variable first: does this kernel have sparse tables? */
	sparse_kernel = !create_logged(&ring2, &c2);
	regcache_destroy(c2);
	io_uring_queue_exit(&ring2);

	setenv("REGCACHE_URING_NO_SPARSE", "1", 1);
	t_ring_init(&ring);
	fallback = create_logged(&ring, &c);
	printf("empty-iovec table %s; this kernel %s sparse tables\n",
	       fallback ? "registered" : "NOT registered",
	       sparse_kernel ? "has" : "lacks");
	T_CHECK(fallback);

	t_churn_scenario(&ring, c, buf, LEN);
	for (int i = 0; i < HELD; i++) {
		T_REQUIRE(regcache_get(c, many + i * LEN, LEN, 0,
				       &held[i]) == 0);
		T_CHECK(regcache_region_buf_index(held[i]) >= 0 &&
			regcache_region_buf_index(held[i]) < 16384);
		T_CHECK(t_dma_visible(&ring, held[i], many + i * LEN, LEN,
				      (unsigned)i));
	}
	for (int i = 0; i < HELD; i++)
		regcache_put(c, held[i]);
	printf("%d buffers held at once in their own slots, DMA-checked\n",
	       HELD);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
