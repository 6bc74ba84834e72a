/*
 * Description: munmap of a cached range, through libc and through a raw
 * syscall(SYS_munmap) that no libc hook could see, followed by fresh memory
 * mapped at the same address, is never served from the old registration:
 * the next get misses and DMA lands where the app looks. A negative control
 * shows the old registration really is stale. Also partial munmap (one page
 * in the middle) and a munmap of unrelated memory that must not invalidate.
 * Runs under each kernel monitor.
 */
#include "helpers.h"

#define LEN 65536

static void remap_same(char *buf, size_t len)
{
	T_REQUIRE(mmap(buf, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0) == buf);
}

int main(void)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *buf, *other;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	buf = t_map(LEN);
	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(munmap(buf, LEN) == 0);
	remap_same(buf, LEN);
	t_case_end(&k, "libc munmap", true);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(syscall(SYS_munmap, buf, LEN) == 0);
	remap_same(buf, LEN);
	t_case_end(&k, "syscall(SYS_munmap)", true);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(munmap(buf + 4 * 4096, 4096) == 0);
	remap_same(buf + 4 * 4096, 4096);
	t_case_end(&k, "munmap of one page in the middle", true);

	/* Unrelated munmap: the region stays cached (a hit). */
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	regcache_put(c, r);
	regcache_get_stats(c, &st);
	other = t_map(LEN);
	T_REQUIRE(munmap(other, LEN) == 0);
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits + 1, st2.hits);
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 9));
	regcache_put(c, r);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
