/* SPDX-License-Identifier: MIT */
/*
 * The LRU: which idle region to evict first. It only picks a victim; the
 * cache kills it (cache.c:evict_one_locked).
 *
 * Hits never touch the list (that would need the lock), and puts touch
 * nothing of it: a region counts as used since it was queued when its hit
 * count (rc_region.hits, which every hit bumps) moved. The list is kept in
 * order of queueing; picking pops the head and, if the region was used
 * since or is held, requeues it at the tail instead ("lazy promotion").
 *
 * The caller serialises every call.
 */
#ifndef RC_LRU_H
#define RC_LRU_H

#include <stddef.h>
#include <stdint.h>

#include "region_pool.h"

/**
 * struct rc_lru - live regions in order of use
 * @list: the regions, through rc_region.link.
 * @nr:   how many.
 * @slab: the slab array of the regions' table (region_pool.h).
 */
struct rc_lru {
	struct rc_region_list list;
	size_t nr;
	struct rc_region *const *slab;
};

static inline void rc_lru_init(struct rc_lru *lru,
			       struct rc_region *const *slab)
{
	rc_region_list_init(&lru->list);
	lru->nr = 0;
	lru->slab = slab;
}

/* Queue @r as used now. */
static inline void rc_lru_add(struct rc_lru *lru, struct rc_region *r)
{
	rc_store_relaxed(&r->lru_stamp, rc_load_relaxed(&r->hits));
	rc_region_list_insert_tail(lru->slab, &lru->list, r);
	lru->nr++;
}

static inline void rc_lru_del(struct rc_lru *lru, struct rc_region *r)
{
	rc_region_list_remove(lru->slab, &lru->list, r);
	lru->nr--;
}

/* The least recently used region that is idle (not held and not used since
 * it was queued), still on the list; NULL when every region is busy. */
rc_hidden struct rc_region *rc_lru_pick_idle(struct rc_lru *lru);

#endif /* RC_LRU_H */
