/*
 * Description: idle regions beyond max_regions or max_bytes are evicted
 * least recently used first; held regions are never evicted; flush
 * deregisters every idle region and keeps held ones.
 */
#include <unistd.h>

#include "helpers.h"

static struct regcache_region *get(struct regcache *c, char *p, size_t len)
{
	struct regcache_region *r = NULL;

	T_EXPECT_EQ(0, regcache_get(c, p, len, 0, &r));
	return r;
}

static void touch(struct regcache *c, char *p, size_t len)
{
	regcache_put(c, get(c, p, len));
}

int main(void)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct regcache_region *held;
	struct regcache_stats st, st2;
	struct t_registrar t;
	struct regcache *c;
	/* Buffers two pages apart, so they never merge. */
	char *buf = t_map(64 * page);
#define B(i) (buf + 2 * (i) * page)

	t_registrar_init(&t, 64);

	/* Count limit: A B C D cached; A used again; E evicts B, not A. */
	c = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 4, 0);
	for (int i = 0; i < 4; i++)
		touch(c, B(i), page);
	touch(c, B(0), page);
	touch(c, B(4), page);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.evictions);
	T_EXPECT_EQ(4, st.regions);
	touch(c, B(0), page); /* A: still cached */
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.misses, st2.misses);
	touch(c, B(1), page); /* B: was evicted, misses (and evicts C) */
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.misses + 1, st2.misses);
	T_EXPECT_EQ(4, st2.regions);

	/* Held regions are not evicted even when over the limit. */
	held = get(c, B(2), page);
	for (int i = 5; i < 12; i++)
		touch(c, B(i), page);
	T_CHECK(t_registrar_covers(&t, held, B(2), page));
	regcache_get_stats(c, &st);
	T_CHECK(st.regions <= 5);
	regcache_put(c, held);

	/* flush: idle ones go, held ones stay registered */
	held = get(c, B(3), page);
	regcache_flush(c);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.regions);
	T_CHECK(t_registrar_covers(&t, held, B(3), page));
	regcache_put(c, held);
	regcache_destroy(c);
	T_EXPECT_EQ(0, atomic_load(&t.live));

	/* Byte limit: 3 pages' worth; a 2-page region evicts the oldest. */
	c = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 3 * page);
	touch(c, B(0), page);
	touch(c, B(1), page);
	touch(c, B(2), page);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, st.evictions);
	touch(c, B(3), 2 * page);
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(2, st.evictions);
	T_CHECK(st.bytes <= 3 * page);
	touch(c, B(2), page); /* the newest of the first three survived */
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.misses, st2.misses);
	regcache_destroy(c);
	T_EXPECT_EQ(0, atomic_load(&t.live));
	t_registrar_fini(&t);
	return t_exit_status();
}
