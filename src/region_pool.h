/* SPDX-License-Identifier: MIT */
/*
 * The pool of one cache's regions (region.h): type-stable memory in slabs
 * that give each region a 32-bit number, the table that turns a number
 * back into its region (what a hit follows from the hint table), and the
 * lists that link regions by number.
 */
#ifndef RC_REGION_POOL_H
#define RC_REGION_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"
#include "region.h"

/*
 * Slabs: RC_SLAB_BYTES, aligned to their size, a header and then the
 * regions. A region's number is its slab's number << RC_SLAB_NUM_BITS plus
 * its place in the slab (numbers past RC_SLAB_REGIONS in a slab are never
 * used), so that both ways are a few instructions: a region finds its slab
 * header by masking its address.
 */
#define RC_SLAB_BYTES		((uintptr_t)1 << 16)
#define RC_SLAB_NUM_BITS	11
/* Every number a pool hands out is below 2^RC_REGION_NUM_BITS (what an
 * index leaf entry holds); RC_NO_REGION is none of them. */
#define RC_REGION_NUM_BITS	28
#define RC_NO_REGION		UINT32_MAX

/**
 * struct rc_slab - the header of a slab of regions
 * @first:   number of regions[0].
 * @map:     the mapping the slab was carved from (rc_region_slab_free()).
 * @next:    the pool's slabs.
 * @regions: RC_SLAB_REGIONS regions, from the slab's second cache line on.
 */
struct rc_slab {
	uint32_t first;
	void *map;
	struct rc_slab *next;
	struct rc_region regions[] __attribute__((aligned(64)));
};
#define RC_SLAB_REGIONS							\
	((RC_SLAB_BYTES - sizeof(struct rc_slab)) / sizeof(struct rc_region))
_Static_assert(RC_SLAB_REGIONS <= (1u << RC_SLAB_NUM_BITS),
	       "a slab's regions fit its numbers");

/**
 * struct rc_region_table - region numbers to regions, for one pool
 * @slab: @cap entries; slab[i] is the first region of slab i (regions
 *        i << RC_SLAB_NUM_BITS and on), for i < @nslabs. Allocated once,
 *        at its full size: it never moves while the pool lives. slab[0] is
 *        no slab: it points to one region that is always FREE, so that
 *        number 0 means "no region" and still reads as a region (an empty
 *        hint slot costs a hit no test of its own).
 */
struct rc_region_table {
	struct rc_region **slab;
	uint32_t nslabs;
	uint32_t cap;
};

/* The region numbered @num in the table whose slab array is @slab (which
 * has it). The array never moves and its entries never change once set:
 * whoever learnt @num through a release that followed the slab's addition
 * may call this without a lock. */
static inline struct rc_region *rc_region_at(struct rc_region *const *slab,
					     uint32_t num)
{
	return &slab[num >> RC_SLAB_NUM_BITS]
		    [num & ((1u << RC_SLAB_NUM_BITS) - 1)];
}

/* The number of @r, which sits in a slab. */
static inline uint32_t rc_region_num(const struct rc_region *r)
{
	const struct rc_slab *slab =
		(const struct rc_slab *)((uintptr_t)r & ~(RC_SLAB_BYTES - 1));

	return slab->first + (uint32_t)(r - slab->regions);
}

/* Make @mem (RC_SLAB_BYTES, aligned to them, zeroed) slab number @no; its
 * first region. */
static inline struct rc_region *rc_region_slab_format(void *mem, uint32_t no)
{
	struct rc_slab *slab = mem;

	slab->first = no << RC_SLAB_NUM_BITS;
	return slab->regions;
}

/* ---------------------------------------------------------------------
 * Lists of regions, linked by number through rc_region.link. Every call
 * takes the slab array of the regions' table.
 * ------------------------------------------------------------------- */

struct rc_region_list {
	uint32_t first, last;
};

#define RC_REGION_LIST_INIT { RC_NO_REGION, RC_NO_REGION }

static inline void rc_region_list_init(struct rc_region_list *l)
{
	l->first = l->last = RC_NO_REGION;
}

static inline bool rc_region_list_empty(const struct rc_region_list *l)
{
	return l->first == RC_NO_REGION;
}

static inline struct rc_region *rc_region_list_first(struct rc_region *const *slab,
					      const struct rc_region_list *l)
{
	return l->first == RC_NO_REGION ? NULL : rc_region_at(slab, l->first);
}

static inline struct rc_region *rc_region_list_next(struct rc_region *const *slab,
					     const struct rc_region *r)
{
	return r->link.next == RC_NO_REGION ? NULL
					    : rc_region_at(slab, r->link.next);
}

static inline void rc_region_list_insert_tail(struct rc_region *const *slab,
				       struct rc_region_list *l,
				       struct rc_region *r)
{
	uint32_t n = rc_region_num(r);

	r->link.prev = l->last;
	r->link.next = RC_NO_REGION;
	if (l->last == RC_NO_REGION)
		l->first = n;
	else
		rc_region_at(slab, l->last)->link.next = n;
	l->last = n;
}

static inline void rc_region_list_insert_head(struct rc_region *const *slab,
				       struct rc_region_list *l,
				       struct rc_region *r)
{
	uint32_t n = rc_region_num(r);

	r->link.next = l->first;
	r->link.prev = RC_NO_REGION;
	if (l->first == RC_NO_REGION)
		l->last = n;
	else
		rc_region_at(slab, l->first)->link.prev = n;
	l->first = n;
}

static inline void rc_region_list_remove(struct rc_region *const *slab,
				  struct rc_region_list *l,
				  struct rc_region *r)
{
	if (r->link.prev == RC_NO_REGION)
		l->first = r->link.next;
	else
		rc_region_at(slab, r->link.prev)->link.next = r->link.next;
	if (r->link.next == RC_NO_REGION)
		l->last = r->link.prev;
	else
		rc_region_at(slab, r->link.next)->link.prev = r->link.prev;
}

/* ---------------------------------------------------------------------
 * The pool: type-stable region memory
 * ------------------------------------------------------------------- */

/**
 * struct rc_region_pool - the regions of one cache
 * @tag:   stamped into every region (rc_region.tag_flags), so that a put
 *         can tell a region of another cache cheaply (13 bits: a check for
 *         misuse, not a proof; the 8192nd cache created shares the first
 *         one's tag).
 *
 * @free:  the FREE regions, linked by number.
 * @slabs: every slab, for rc_region_pool_fini().
 * @table: region numbers to regions.
 *
 * Every call named _locked needs the lock the caller guards the pool with
 * (the cache lock); the others take no lock.
 */
struct rc_region_pool {
	uint32_t tag;
	struct rc_region_list free;
	struct rc_slab *slabs;
	struct rc_region_table table;
};

/* An empty pool with numbers for 4 x @max_regions regions (room for dead
 * and pass-through ones that callers hold), at least 2^20 and at most what
 * the index's RC_INDEX_NUM_BITS reach; more are refused
 * (rc_region_slab_add_locked()). 0 or -ENOMEM. The first one of the
 * process registers for membarrier() (region_refs.h); where that fails,
 * every count is an RMW. */
rc_hidden int rc_region_pool_init(struct rc_region_pool *pool,
				  size_t max_regions);
/* Free the pool's memory: every region becomes invalid. */
rc_hidden void rc_region_pool_fini(struct rc_region_pool *pool);

/* A FREE region, or NULL when the pool is empty. */
rc_hidden struct rc_region *rc_region_alloc_locked(struct rc_region_pool *pool);
/* New region memory, allocated without the lock (a malloc may unmap memory,
 * and with userfaultfd the unmapping thread waits for the monitor); NULL
 * when out of memory. Hand it to the pool with rc_region_slab_add_locked(),
 * or free it with rc_region_slab_free() (also without the lock). */
rc_hidden struct rc_slab *rc_region_slab_new(struct rc_region_pool *pool);
rc_hidden void rc_region_slab_free(struct rc_slab *slab);
/* Number the slab's regions and make them FREE; false when the pool holds
 * as many regions as it can number (the slab is not taken). */
rc_hidden bool rc_region_slab_add_locked(struct rc_region_pool *pool,
					 struct rc_slab *slab);
/* Return a region nobody uses (CLAIMED or never made live) to the pool. */
rc_hidden void rc_region_free_locked(struct rc_region_pool *pool,
				     struct rc_region *r);
/*
 * In a forked child, where the registration is the parent's: make @r FREE
 * without deregistering it. One still counted as held (by this thread, or by
 * a parent thread the child does not have) is marked FORGOTTEN and never
 * reused: its counts are not this process's to trust, and a put by this
 * thread must find it inert. Returns true when @r went back to the pool.
 */
rc_hidden bool rc_region_forget_locked(struct rc_region_pool *pool,
				       struct rc_region *r);

#endif /* RC_REGION_POOL_H */
