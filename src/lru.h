/* SPDX-License-Identifier: MIT */
/*
 * The LRU: which idle region to evict first. It only picks a victim; the
 * cache kills it (cache.c:evict_one_locked).
 *
 * Hits never touch the list (that would need the lock): a put only stamps
 * the region with the cache's clock, which moves once per miss. The list
 * is kept in order of the stamp each region had when it was queued; picking
 * pops the head and, if the region was used since (its stamp moved) or is
 * held, requeues it at the tail instead ("lazy promotion").
 *
 * The caller serialises every call but rc_lru_touch().
 */
#ifndef RC_LRU_H
#define RC_LRU_H

#include <stddef.h>
#include <stdint.h>

#include "region.h"

/**
 * struct rc_lru - live regions in order of use
 * @list: the regions, through rc_region.link.
 * @nr:   how many.
 */
struct rc_lru {
	struct rc_region_list list;
	size_t nr;
};

static inline void rc_lru_init(struct rc_lru *lru)
{
	TAILQ_INIT(&lru->list);
	lru->nr = 0;
}

/* Queue @r as used at @now (the cache's clock). */
static inline void rc_lru_add(struct rc_lru *lru, struct rc_region *r,
			      uint32_t now)
{
	rc_store_relaxed(&r->last_use, (uint16_t)now);
	rc_store_relaxed(&r->lru_stamp, (uint16_t)now);
	TAILQ_INSERT_TAIL(&lru->list, r, link);
	lru->nr++;
}

static inline void rc_lru_del(struct rc_lru *lru, struct rc_region *r)
{
	TAILQ_REMOVE(&lru->list, r, link);
	lru->nr--;
}

/* Mark @r used at @now; no lock, no list move (the hit path's put). */
static inline void rc_lru_touch(struct rc_region *r, uint32_t now)
{
	rc_store_relaxed(&r->last_use, (uint16_t)now);
}

/* The least recently used region that is idle (not held and not used since
 * it was queued), still on the list; NULL when every region is busy. */
rc_hidden struct rc_region *rc_lru_pick_idle(struct rc_lru *lru);

#endif /* RC_LRU_H */
