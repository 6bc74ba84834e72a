/*
 * Description: userfaultfd monitor: two caches created independently in one
 * process (as two libraries would, each on its own io_uring) share the one
 * process-wide userfaultfd, and both see every invalidation: after munmap +
 * mmap of the same address, both miss and DMA through both is visible.
 * Destroying one leaves the other monitored.
 */
#include "helpers.h"

#define LEN 65536

static void cache_it(struct io_uring *ring, struct regcache *c, char *buf)
{
	struct regcache_region *r;

	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	T_CHECK(t_dma_visible(ring, r, buf, LEN, 1));
	regcache_put(c, r);
}

static void expect_miss(struct io_uring *ring, struct regcache *c, char *buf,
			const char *who)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;

	regcache_get_stats(c, &st);
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	regcache_get_stats(c, &st2);
	if (st2.hits != st.hits) {
		fprintf(stderr, "%s: stale hit after munmap + mmap\n", who);
		t_failures++;
	}
	if (!t_dma_visible(ring, r, buf, LEN, 2)) {
		fprintf(stderr, "%s: DMA not visible\n", who);
		t_failures++;
	}
	regcache_put(c, r);
}

static void replace(char *buf)
{
	T_REQUIRE(munmap(buf, LEN) == 0);
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		       0) == buf);
}

int main(void)
{
	struct io_uring ring1, ring2;
	struct regcache *c1, *c2;
	char *buf;

	t_monitor_only("userfaultfd");
	t_ring_init(&ring1);
	t_ring_init(&ring2);
	c1 = t_uring_cache(&ring1, 0, 0, 0);
	c2 = t_uring_cache(&ring2, 0, 0, 0);
	t_monitor_require();
	buf = t_map(LEN);

	cache_it(&ring1, c1, buf);
	cache_it(&ring2, c2, buf);
	replace(buf);
	expect_miss(&ring1, c1, buf, "cache 1");
	expect_miss(&ring2, c2, buf, "cache 2");

	/* One library goes away; the other stays monitored. */
	regcache_destroy(c1);
	cache_it(&ring2, c2, buf);
	replace(buf);
	expect_miss(&ring2, c2, buf, "cache 2 after cache 1 was destroyed");

	regcache_destroy(c2);
	io_uring_queue_exit(&ring1);
	io_uring_queue_exit(&ring2);
	if (!t_failures)
		printf("ok: both caches invalidated\n");
	return t_exit_status();
}
