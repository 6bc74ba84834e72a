/* SPDX-License-Identifier: MIT */
/*
 * A region: one registered range, its fields and its lifecycle states.
 * Its reference counts are region_refs.h; the type-stable pool the regions
 * of one cache come from, with their numbers and the lists that link them
 * by number, is region_pool.h.
 *
 * This layer knows nothing of the index, the LRU or the cache: the cache
 * (cache.c) decides when a region is killed, claimed and deregistered, and
 * holds the lock that guards the pool.
 */
#ifndef RC_REGION_H
#define RC_REGION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/compat.h"

/* rc_region.tag_flags: the cache's tag in the low 13 bits, flags above. */
#define RC_REGION_TAG_MASK	0x1fffu
#define RC_REGION_PASSTHROUGH	(1u << 13)	/* not cached: dereg at put */
#define RC_REGION_WATCHED	(1u << 14)	/* unwatch after dereg */
#define RC_REGION_FORGOTTEN	(1u << 15)	/* held across fork: never
						   deregistered or reused */

/*
 * rc_region.seq modulo 4: the state of the current incarnation.
 *
 *   FREE --make_live--> LIVE --mark_dead--> DEAD --claim--> CLAIMED --free--> FREE
 *
 * make_live moves seq to the next multiple of 4, so every incarnation has a
 * distinct LIVE value, and a hit that saw LIVE seq s knows the region is the
 * one it looked up as long as seq still reads s. A pass-through region is
 * filled but never made live: it stays FREE to every lookup.
 */
#define RC_SEQ_LIVE	0u	/* indexed; hits may take it */
#define RC_SEQ_DEAD	1u	/* unindexed, still registered, maybe held */
#define RC_SEQ_CLAIMED	2u	/* unused; one thread is deregistering it */
#define RC_SEQ_FREE	3u	/* on a free list, or pass-through */
#define rc_seq_state(seq) ((seq) & 3u)

/* Regions are whole pages of at least 4 KiB: a region keeps its length in
 * these units, so it spans at most RC_REGION_MAX_LEN bytes (16 TiB). */
#define RC_REGION_UNIT_SHIFT	12
#define RC_REGION_MAX_LEN	((uintptr_t)UINT32_MAX << RC_REGION_UNIT_SHIFT)

/**
 * struct rc_region - one registered range
 *
 * 48 bytes, 16-aligned: the first 32 are what hits and puts read and
 * write (the first 16, seq and range, never cross a cache line). Region
 * memory is type-stable: it returns to its pool, never to the system,
 * until the cache is destroyed, so a hit may read a stale hint safely.
 *
 * A region has a number in its pool, fixed while the pool lives:
 * rc_region_num() and rc_region_at() convert (through the slab it sits in,
 * see region_pool.h). The index, the hint table and the lists hold numbers,
 * not pointers: 4 bytes instead of 8. Number 0 is no region's.
 *
 * Invariants:
 *   seq state LIVE  <=> in the cache's index and on its LRU
 *   refs(r)         == shared_refs + the count of r in every thread's
 *                      reference slots (region_refs.h), modulo 2^32
 *   tag_flags & RC_REGION_TAG_MASK == the tag of the cache whose pool
 *                      holds it
 *   start and the end are multiples of 2^RC_REGION_UNIT_SHIFT (also for
 *                      pass-through regions)
 *   rc_region_at(pool->table.slab, rc_region_num(r)) == r
 */
struct rc_region {
	_Atomic uint32_t seq;
	_Atomic uint32_t units;		/* length >> RC_REGION_UNIT_SHIFT */
	_Atomic uintptr_t start;
	_Atomic uint32_t access;
	_Atomic uint16_t hits;		/* modulo 2^16: see regcache_get() */
	_Atomic uint16_t tag_flags;	/* cache tag | RC_REGION_* */
	void *handle;
	_Atomic uint32_t shared_refs;	/* references no thread slot holds */
	union {				/* written under the cache lock: */
		_Atomic uint16_t lru_stamp;	/* live: hits when queued */
		_Atomic uint32_t kill_ticket;	/* dead: the cache's kill count */
	};

	/* Changed under the cache lock only: region numbers, or
	 * RC_NO_REGION. */
	struct {
		uint32_t prev, next;
	} link;				/* LRU, dead, pass-through or free */
} __attribute__((aligned(16)));
/* With one hint slot (4 bytes) and its index entry (8 bytes in a full
 * leaf) a cached region costs about 61 bytes.
 * The LRU sees a region as used since it was queued when its hit count
 * moved, modulo 2^16: one hit exactly a multiple of 65536 hits after it
 * was queued looks unused and may be evicted a little early, which costs
 * one re-registration. */

static inline unsigned rc_region_flags(const struct rc_region *r)
{
	return rc_load_relaxed(&r->tag_flags) & ~RC_REGION_TAG_MASK;
}

/* Under the cache lock, or before anyone else can see @r. */
static inline void rc_region_set_flags(struct rc_region *r, unsigned flags)
{
	uint16_t tag = rc_load_relaxed(&r->tag_flags) & RC_REGION_TAG_MASK;

	rc_store_relaxed(&r->tag_flags, (uint16_t)(tag | flags));
}

static inline uintptr_t rc_region_start(const struct rc_region *r)
{
	return rc_load_relaxed(&r->start);
}

static inline uintptr_t rc_region_len(const struct rc_region *r)
{
	return (uintptr_t)rc_load_relaxed(&r->units) << RC_REGION_UNIT_SHIFT;
}

static inline uintptr_t rc_region_end(const struct rc_region *r)
{
	return rc_load_relaxed(&r->start) +
	       ((uintptr_t)rc_load_relaxed(&r->units) << RC_REGION_UNIT_SHIFT);
}

/* ---------------------------------------------------------------------
 * Lifecycle
 * ------------------------------------------------------------------- */

/* Fill in a region taken from the pool; it stays FREE to lookups. @start
 * and @end are multiples of 2^RC_REGION_UNIT_SHIFT, at most
 * RC_REGION_MAX_LEN apart. */
static inline void rc_region_fill(struct rc_region *r, uintptr_t start,
				  uintptr_t end, unsigned access, void *handle,
				  uint32_t flags)
{
	rc_store_relaxed(&r->start, start);
	rc_store_relaxed(&r->units,
			 (uint32_t)((end - start) >> RC_REGION_UNIT_SHIFT));
	rc_store_relaxed(&r->access, access);
	rc_region_set_flags(r, flags);
	rc_store_relaxed(&r->hits, 0);
	r->handle = handle;
}

/* Make a filled region LIVE, holding one reference for the caller. */
rc_hidden void rc_region_make_live(struct rc_region *r);

/* LIVE -> DEAD, as the cache's kill number @ticket. The seq_cst store
 * orders the kill before the rc_region_fence_counts() that precedes reading
 * the counts, and publishes the ticket to whoever sees the DEAD seq. */
static inline void rc_region_mark_dead(struct rc_region *r, uint32_t ticket)
{
	uint32_t seq = rc_load_relaxed(&r->seq);

	rc_store_relaxed(&r->kill_ticket, ticket);
	atomic_store_explicit(&r->seq, seq + 1, memory_order_seq_cst);
}

/* DEAD (as @seq) -> CLAIMED; true for the one caller that wins. The caller
 * has seen the counts at zero after a fence, so nobody holds it. */
static inline bool rc_region_claim(struct rc_region *r, uint32_t seq)
{
	return rc_seq_state(seq) == RC_SEQ_DEAD &&
	       atomic_compare_exchange_strong(&r->seq, &seq, seq + 1);
}

#endif /* RC_REGION_H */
