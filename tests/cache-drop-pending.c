/*
 * Description: an explicit drop also drops a registration that is in
 * flight. REGCACHE_FLAG_EXPLICIT_INVALIDATE lets the application call
 * regcache_invalidate() or regcache_flush() before it reuses memory. Thread
 * W misses on a buffer and is inside ops->reg (old pages pinned, not yet
 * indexed) when the application drops the buffer (argument "invalidate":
 * regcache_invalidate() of the buffer; "flush": regcache_flush()), unmaps it
 * and maps new pages at the same address. W's registration must not be
 * cached: a later get (after the drop, the remap and W's put) must register
 * the new pages. The monitor path does the same (a published range taints
 * pending registrations); the explicit calls must too.
 * Oracle: READ_FIXED from a pipe through the region, and the frame numbers.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 16384

static struct t_registrar t;

int main(int argc, char **argv)
{
	struct regcache_region *r;
	struct regcache *c;
	char *buf;
	bool flush = argc > 1 && strcmp(argv[1], "flush") == 0;
	void *q;

	if (argc != 2 || (!flush && strcmp(argv[1], "invalidate") != 0)) {
		fprintf(stderr, "usage: %s invalidate|flush\n", argv[0]);
		return T_EXIT_FAIL;
	}
	buf = t_map(LEN);
	memset(buf, 1, LEN);
	c = t_pending_get_start(&t, buf, LEN);

	/* W has pinned the old pages. The application keeps its promise. */
	if (flush)
		regcache_flush(c);
	else
		regcache_invalidate(c, buf, LEN);
	q = mmap(buf, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	T_REQUIRE(q == buf);
	memset(buf, 2, LEN);

	t_pending_release();
	/* W's get raced with the remap: what it got is the application's
	 * problem. Only what the cache keeps afterwards matters. */
	T_REQUIRE(t_pending_get_join() == 0);

	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(t_registrar_covers(&t, r, buf, LEN));
	if (t_pfn(buf))
		T_CHECK(t_registrar_same_pages(&t, r, buf));
	if (!t_dma_visible(&t.ring, r, buf, LEN, 7)) {
		fprintf(stderr, "stale: the DMA went to the pages that were "
			"unmapped after regcache_%s()\n", argv[1]);
		t_failures++;
	}
	regcache_put(c, r);

	/* Negative control: a get after the remap, nothing in flight. */
	regcache_invalidate(c, buf, LEN);
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(t_dma_visible(&t.ring, r, buf, LEN, 8));
	regcache_put(c, r);

	regcache_destroy(c);
	T_EXPECT_EQ(0, atomic_load(&t.live));
	t_registrar_fini(&t);
	return t_exit_status();
}
