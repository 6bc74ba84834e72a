/*
 * Description: userfaultfd monitor: with REGCACHE_MONITOR=userfaultfd, the
 * cache works whichever backend it really gets. Where userfaultfd is
 * unavailable (valgrind, seccomp, an old kernel) the library falls back to
 * "none" and serves every get uncached, never a crash or a hang; either
 * way a buffer that is unmapped and mapped again at the same address is
 * never served stale. CTest runs it natively and under valgrind memcheck.
 */
#include "helpers.h"

#define LEN 65536

int main(void)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;
	struct io_uring ring;
	struct regcache *c;
	const char *name;
	bool cached;
	char *buf;

	t_monitor_only("userfaultfd");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	name = regcache_monitor_name();
	printf("monitor: %s\n", name);
	cached = !strcmp(name, "userfaultfd");
	if (!cached && strcmp(name, "none")) {
		fprintf(stderr, "unexpected monitor \"%s\"\n", name);
		return T_EXIT_FAIL;
	}

	buf = t_map(LEN);
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 1));
	regcache_put(c, r);
	regcache_get_stats(c, &st);
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits + cached, st2.hits);
	T_EXPECT_EQ(st.uncached + !cached, st2.uncached);
	regcache_put(c, r);

	t_remap(buf, LEN);
	T_EXPECT_EQ(0, t_get_hits(c, buf, LEN, &r));
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 2));
	regcache_put(c, r);

	munmap(buf, LEN);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
