/* SPDX-License-Identifier: MIT */
/*
 * Eviction of idle regions, least recently used first, for the count and
 * byte limits and to make room when the registrar runs out of resources.
 *
 * Hits never touch the LRU list (that would need the lock): a put only
 * stamps the region with the cache's clock, which moves once per miss. The
 * list is kept in order of the stamp each region had when it was queued;
 * eviction pops the head and, if the region was used since (its stamp
 * moved) or is held, requeues it at the tail instead ("lazy promotion").
 */
#include "cache.h"

static bool evict_one_locked(struct regcache *c, size_t *freed_bytes,
			     struct rc_kill_batch *batch)
{
	/* Bounded: each region is requeued at most once per pass. */
	for (size_t steps = c->nr_live; steps; steps--) {
		struct rc_region *r = TAILQ_FIRST(&c->lru);
		uint16_t used = rc_load_relaxed(&r->last_use);

		/* A racy read of the counts is enough here: killing a region
		 * that somebody just took is still safe (it is deregistered at
		 * its last put), only wasteful. */
		if (rc_region_refs(r) || used != r->lru_stamp) {
			TAILQ_REMOVE(&c->lru, r, link);
			r->lru_stamp = used;
			TAILQ_INSERT_TAIL(&c->lru, r, link);
			continue;
		}
		*freed_bytes += rc_load_relaxed(&r->end) -
				rc_load_relaxed(&r->start);
		rc_region_kill_locked(c, r, batch);
		rc_fetch_add_relaxed(&c->st_evictions, 1);
		return true;
	}
	return false;
}

void rc_evict_over_limits_locked(struct regcache *c,
				 struct rc_kill_batch *batch)
{
	size_t freed = 0;

	while ((c->nr_live > c->max_regions || c->live_bytes > c->max_bytes) &&
	       evict_one_locked(c, &freed, batch))
		;
}

size_t rc_evict_idle_locked(struct regcache *c, size_t want_bytes,
			    size_t want_regions, struct rc_kill_batch *batch)
{
	size_t freed = 0, n = 0;

	while ((freed < want_bytes || n < want_regions) && c->nr_live &&
	       evict_one_locked(c, &freed, batch))
		n++;
	return n;
}
