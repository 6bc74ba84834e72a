/*
 * Description: shrinking the heap with sbrk(-n) and growing it again gives
 * the same addresses fresh pages; the cached region of the old heap top is
 * invalidated. Runs under each kernel monitor.
 */
#include <malloc.h>

#include "helpers.h"

#define LEN 65536

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *cur, *buf;

	/* Every malloc from here on uses mmap, so the cache's own
	 * allocations never move the break under the test (ASan's allocator
	 * never uses brk; it ignores this). */
	mallopt(M_MMAP_THRESHOLD, 0);
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	/* Page-align the break, then take LEN above it. */
	cur = sbrk(0);
	T_REQUIRE(cur != (void *)-1);
	T_REQUIRE(sbrk((4096 - (uintptr_t)cur % 4096) % 4096) != (void *)-1);
	buf = sbrk(LEN);
	T_REQUIRE(buf != (void *)-1 && (uintptr_t)buf % 4096 == 0);

	t_case_begin(&k, &ring, c, buf, LEN);
	/* malloc in between would own the top of the heap: check it did not. */
	T_REQUIRE((char *)sbrk(0) == buf + LEN);
	T_REQUIRE(sbrk(-LEN) != (void *)-1);
	T_REQUIRE(sbrk(LEN) == buf);
	t_case_end(&k, "sbrk(-n) then sbrk(+n)", true);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
