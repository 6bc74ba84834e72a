/* SPDX-License-Identifier: MIT */
/* Statistics: counters kept outside the hit path, plus per-region hits. */
#include <string.h>

#include "cache.h"

void regcache_get_stats(const struct regcache *cache,
			struct regcache_stats *stats)
{
	struct regcache *c = (struct regcache *)cache;
	struct rc_region *r;
	uint64_t hits;

	if (!stats)
		return;
	memset(stats, 0, sizeof(*stats));
	if (!c)
		return;

	/* Hits are counted in each region (a shared counter would make two
	 * threads hitting distinct buffers write one cache line). */
	pthread_mutex_lock(&c->lock);
	hits = c->hits_retired + rc_load_relaxed(&c->hits_wrapped);
	for (r = rc_index_first_overlap(&c->index, 0, UINTPTR_MAX); r;
	     r = rc_index_next_overlap(&c->index, r, UINTPTR_MAX))
		hits += rc_load_relaxed(&r->hits);
	pthread_mutex_unlock(&c->lock);

	stats->hits = hits;
	stats->misses = rc_load_relaxed(&c->st_misses);
	stats->uncached = rc_load_relaxed(&c->st_uncached);
	stats->registrations = rc_load_relaxed(&c->st_registrations);
	stats->deregistrations = rc_load_relaxed(&c->st_deregistrations);
	stats->invalidations = rc_load_relaxed(&c->st_invalidations);
	stats->evictions = rc_load_relaxed(&c->st_evictions);
	stats->merges = rc_load_relaxed(&c->st_merges);
	stats->overflows = rc_load_relaxed(&c->st_overflows);
	stats->reg_failures = rc_load_relaxed(&c->st_reg_failures);
	stats->regions = rc_load_relaxed(&c->cur_regions);
	stats->bytes = rc_load_relaxed(&c->cur_bytes);
}
