/*
 * Description: eBPF monitor, ring overflow: with no get to drain it, a
 * burst of destructive madvise calls on unrelated memory fills the
 * per-process ring (each call pushes at least two records), so the records
 * of a later munmap of a cached range X are lost. The lost records are
 * counted in the kernel and must turn into "invalidate everything": X is
 * not served stale after it is mapped again, and every other cached region
 * is invalidated too (the proof that the overflow path ran).
 */
#include "helpers.h"

#define LEN 16384
#define NBUF 32
/* 64 KiB ring / 24-byte records = 2730; two records per call. */
#define BURST 5000

int main(void)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *bufs[NBUF], *junk;

	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	for (int i = 0; i < NBUF; i++) {
		bufs[i] = t_map(LEN);
		T_REQUIRE(regcache_get(c, bufs[i], LEN, 0, &r) == 0);
		regcache_put(c, r);
	}
	junk = t_map(4096);
	t_case_begin(&k, &ring, c, bufs[0], LEN);
	regcache_get_stats(c, &st);

	for (int i = 0; i < BURST; i++)
		T_REQUIRE(madvise(junk, 4096, MADV_DONTNEED) == 0);
	/* The ring is full now: these records are dropped. */
	T_REQUIRE(munmap(bufs[0], LEN) == 0);
	T_REQUIRE(mmap(bufs[0], LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0) == bufs[0]);
	t_case_end(&k, "munmap whose records overflowed the ring", true);

	regcache_get_stats(c, &st2);
	/* Every idle region went, not only bufs[0]. */
	if (st2.invalidations - st.invalidations < NBUF) {
		fprintf(stderr, "expected >= %d invalidations after the "
			"overflow, got %llu\n", NBUF,
			(unsigned long long)(st2.invalidations -
					     st.invalidations));
		t_failures++;
	}
	for (int i = 1; i < NBUF; i++) {
		T_REQUIRE(regcache_get(c, bufs[i], LEN, 0, &r) == 0);
		T_CHECK(t_dma_visible(&ring, r, bufs[i], LEN, i));
		regcache_put(c, r);
	}
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
