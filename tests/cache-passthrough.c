/*
 * Description: with the "none" monitor nothing can prove a cached
 * registration is still valid, so no get is served from an earlier
 * registration: every get registers, every put deregisters, counted as
 * uncached. Proven with data across munmap + mmap at the same address.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 65536
#define ROUNDS 50

int main(void)
{
	struct regcache_region *r, *r2;
	struct regcache_stats st;
	struct io_uring ring;
	struct regcache *c;
	char *buf = t_map(LEN);

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	if (strcmp(regcache_monitor_name(), "none")) {
		fprintf(stderr, "monitor is %s; this test needs "
			"REGCACHE_MONITOR=none\n", regcache_monitor_name());
		return T_EXIT_FAIL;
	}
	for (int i = 0; i < ROUNDS; i++) {
		T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
		T_CHECK(t_dma_visible(&ring, r, buf, LEN, i));
		/* A second get while the first is held is its own registration. */
		T_EXPECT_EQ(0, regcache_get(c, buf + 10, 10, 0, &r2));
		regcache_put(c, r2);
		regcache_put(c, r);
		regcache_get_stats(c, &st);
		T_EXPECT_EQ(0, st.regions);
		T_REQUIRE(munmap(buf, LEN) == 0);
		T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0) == buf);
	}
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, st.hits);
	T_EXPECT_EQ(0, st.misses);
	T_EXPECT_EQ(2 * ROUNDS, st.uncached);
	T_EXPECT_EQ(2 * ROUNDS, st.registrations);
	T_EXPECT_EQ(2 * ROUNDS, st.deregistrations);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
