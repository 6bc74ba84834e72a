/* SPDX-License-Identifier: MIT */
/* The LRU's victim choice (see lru.h). */
#include "lru.h"
#include "region_refs.h"

struct rc_region *rc_lru_pick_idle(struct rc_lru *lru)
{
	/* Bounded: each region is requeued at most once per pick. */
	for (size_t steps = lru->nr; steps; steps--) {
		struct rc_region *r = rc_region_list_first(lru->slab, &lru->list);
		uint16_t used = rc_load_relaxed(&r->hits);

		/* A racy read of the counts is enough here: killing a region
		 * that somebody just took is still safe (it is deregistered at
		 * its last put), only wasteful. */
		if (rc_region_refs(r) || used != rc_load_relaxed(&r->lru_stamp)) {
			rc_region_list_remove(lru->slab, &lru->list, r);
			rc_store_relaxed(&r->lru_stamp, used);
			rc_region_list_insert_tail(lru->slab, &lru->list, r);
			continue;
		}
		return r;
	}
	return NULL;
}
