/*
 * Description: mremap never leaves a stale cached region. A move with the
 * old address reused by fresh memory (where DMA through the old registration
 * lands in the *moved* buffer), MREMAP_DONTUNMAP (the old range stays mapped
 * but empty), a shrink whose tail is mapped again, and a move onto an
 * existing cached mapping with MREMAP_FIXED. Runs under each kernel monitor.
 */
#include "helpers.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

#define LEN 65536

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *buf, *dst, *moved;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	buf = t_map(LEN);
	dst = t_map(LEN);
	T_REQUIRE(munmap(dst, LEN) == 0);
	t_case_begin(&k, &ring, c, buf, LEN);
	moved = mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	T_REQUIRE(moved == dst);
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0) == buf);
	t_case_end(&k, "mremap move, old address reused", true);

	/* The moved buffer at its new address is a new range: cache it, then
	 * move buf on top of it (MREMAP_FIXED replaces dst). */
	t_case_begin(&k, &ring, c, dst, LEN);
	T_REQUIRE(mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst) ==
		  dst);
	t_case_end(&k, "mremap MAYMOVE|FIXED onto a cached mapping", true);
	buf = dst;

	t_case_begin(&k, &ring, c, buf, LEN);
	moved = mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
	if (moved == MAP_FAILED && errno == EINVAL) {
		printf("mremap DONTUNMAP not supported here (EINVAL)\n");
		regcache_put(c, k.held);
	} else {
		T_REQUIRE(moved != MAP_FAILED);
		t_case_end(&k, "mremap MREMAP_DONTUNMAP", true);
		munmap(moved, LEN);
	}

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(mremap(buf, LEN, LEN / 2, 0) == buf);
	T_REQUIRE(mmap(buf + LEN / 2, LEN / 2, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0) == buf + LEN / 2);
	t_case_end(&k, "mremap shrink, tail mapped again", true);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
