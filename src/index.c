/* SPDX-License-Identifier: MIT */
/*
 * The interval index: a red-black tree of non-overlapping live regions
 * ordered by start (BSD <sys/tree.h>), and a direct-mapped hint table that
 * lets a hit find its region without the lock.
 *
 * The tree is only touched under c->lock. The hint table is read by hits
 * without any lock; a hint is only a guess, which regcache_get() verifies
 * against the region's seq, range and access, so stale hints are harmless.
 */
#include <errno.h>
#include <stdlib.h>

#include "cache.h"

static int rc_region_cmp(struct rc_region *a, struct rc_region *b)
{
	uintptr_t sa = rc_load_relaxed(&a->start);
	uintptr_t sb = rc_load_relaxed(&b->start);

	return sa < sb ? -1 : sa > sb;
}

RB_GENERATE_INTERNAL(rc_tree, rc_region, rb, rc_region_cmp,
		     __attribute__((unused)) static)

int rc_index_init(struct regcache *c)
{
	size_t want = c->max_regions < 1024 ? 1024 : c->max_regions;
	unsigned bits = 10;

	/* One slot per cached region, at most 2^22: hints collide rarely for
	 * a hot set much smaller than the cache, and cost 8 bytes a region. */
	while (bits < 22 && ((size_t)1 << bits) < want)
		bits++;
	c->hint = calloc((size_t)1 << bits, sizeof(*c->hint));
	if (!c->hint)
		return -ENOMEM;
	c->hint_bits = bits;
	c->hint_mask = ((uintptr_t)1 << bits) - 1;
	RB_INIT(&c->tree);
	TAILQ_INIT(&c->lru);
	return 0;
}

void rc_index_fini(struct regcache *c)
{
	free(c->hint);
	c->hint = NULL;
}

/* The lowest-addressed live region that overlaps [start, end), or NULL. */
struct rc_region *rc_index_first_overlap(struct regcache *c, uintptr_t start,
					 uintptr_t end)
{
	struct rc_region *n = RB_ROOT(&c->tree), *pred = NULL, *succ = NULL;

	/* One descent finds both neighbours of @start: pred, the last region
	 * starting below it, and succ, the first starting at or above it
	 * (RB_NFIND followed by RB_PREV walked the tree twice; this lookup is
	 * most of a miss's time with a million regions cached). */
	while (n) {
		if (rc_load_relaxed(&n->start) < start) {
			pred = n;
			n = RB_RIGHT(n, rb);
		} else {
			succ = n;
			n = RB_LEFT(n, rb);
		}
	}
	if (pred && rc_load_relaxed(&pred->end) > start)
		return pred;
	if (succ && rc_load_relaxed(&succ->start) < end)
		return succ;
	return NULL;
}

/* The live region after @r if it still overlaps [.., end). */
static struct rc_region *next_overlap(struct regcache *c, struct rc_region *r,
				      uintptr_t end)
{
	struct rc_region *next = RB_NEXT(rc_tree, &c->tree, r);

	(void)c; /* RB_NEXT ignores its head argument */

	return next && rc_load_relaxed(&next->start) < end ? next : NULL;
}

void rc_index_insert(struct regcache *c, struct rc_region *r)
{
	uint16_t now = (uint16_t)rc_load_relaxed(&c->clock);

	RB_INSERT(rc_tree, &c->tree, r);
	rc_store_relaxed(&r->last_use, now);
	r->lru_stamp = now;
	TAILQ_INSERT_TAIL(&c->lru, r, link);
	c->nr_live++;
	c->live_bytes += rc_load_relaxed(&r->end) - rc_load_relaxed(&r->start);
}

void rc_index_remove(struct regcache *c, struct rc_region *r)
{
	RB_REMOVE(rc_tree, &c->tree, r);
	TAILQ_REMOVE(&c->lru, r, link);
	c->nr_live--;
	c->live_bytes -= rc_load_relaxed(&r->end) - rc_load_relaxed(&r->start);
}

void rc_index_hint(struct regcache *c, uintptr_t addr, struct rc_region *r)
{
	/* Release pairs with the acquire load in regcache_get(). */
	rc_store_release(&c->hint[rc_hint_slot(c, addr)], r);
}

unsigned rc_index_invalidate_locked(struct regcache *c, uintptr_t start,
				    uintptr_t end, struct rc_kill_batch *batch)
{
	struct rc_region *r = rc_index_first_overlap(c, start, end);
	unsigned n = 0;

	while (r) {
		struct rc_region *next = next_overlap(c, r, end);

		rc_region_kill_locked(c, r, batch);
		n++;
		r = next;
	}
	return n;
}
