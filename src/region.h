/* SPDX-License-Identifier: MIT */
/*
 * A region: one registered range, its reference counts and its lifecycle
 * states, and the type-stable pool the regions of one cache come from.
 *
 * This layer knows nothing of the index, the LRU or the cache: the cache
 * (cache.c) decides when a region is killed, claimed and deregistered, and
 * holds the lock that guards the pool.
 */
#ifndef RC_REGION_H
#define RC_REGION_H

#include <bsd/sys/queue.h>
#include <bsd/sys/tree.h>
#include <stdbool.h>
#include <stdint.h>

#include "compat.h"

/* rc_region.flags */
#define RC_REGION_PASSTHROUGH	(1u << 0)	/* not cached: dereg at put */
#define RC_REGION_WATCHED	(1u << 1)	/* unwatch after dereg */
#define RC_REGION_FORGOTTEN	(1u << 2)	/* held across fork: never
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

/**
 * struct rc_region - one registered range
 *
 * The first 64 bytes are what a hit reads and writes. Region memory is
 * type-stable: it returns to its pool, never to malloc, until the cache is
 * destroyed, so a hit may read a stale hint pointer safely.
 *
 * Invariants:
 *   seq state LIVE       <=> in the cache's index and on its LRU
 *   refs(r)              == owner_refs + shared_refs (modulo 2^32)
 *   owner                never changes once set (rc_region_alloc_locked), so
 *                        only one thread ever writes owner_refs.
 *
 * Reference counting is biased (Choi et al., PACT 2018): the thread that
 * created the region counts with plain stores, everybody else with atomic
 * RMWs. A killer makes seq odd, then calls rc_region_fence_counts() (a
 * membarrier()), then reads both counts; a getter bumps its count, then
 * re-reads seq. membarrier() supplies the store-load fence the owner's hit
 * path leaves out, so one of the two always sees the other.
 */
struct rc_region {
	_Atomic uint32_t seq;
	_Atomic uint32_t access;
	_Atomic uintptr_t start;
	_Atomic uintptr_t end;
	_Atomic uintptr_t owner;	/* thread pointer of the creator */
	_Atomic uint32_t owner_refs;	/* written by the owner only */
	_Atomic uint32_t shared_refs;	/* everybody else, atomic RMW */
	_Atomic uint16_t last_use;	/* LRU clock at the last put */
	_Atomic uint16_t flags;		/* RC_REGION_* */
	union {				/* under the cache lock only: */
		uint16_t lru_stamp;	/* live: last_use when queued */
		uint32_t kill_ticket;	/* dead: the cache's kill count */
	};
	_Atomic uint64_t hits;
	void *handle;

	/* Cold: changed under the cache lock only. */
	RB_ENTRY(rc_region) rb;		/* index.c */
	TAILQ_ENTRY(rc_region) link;	/* LRU, dead, pass-through or free */
};
/* 112 bytes: with one hint slot (8 bytes) a cached region costs 120 bytes.
 * The LRU clock is kept modulo 2^16 here; a region used exactly a multiple
 * of 65536 misses after it was queued looks unused and may be evicted a
 * little early, which costs one re-registration. */

TAILQ_HEAD(rc_region_list, rc_region);

static inline uintptr_t rc_region_start(const struct rc_region *r)
{
	return rc_load_relaxed(&r->start);
}

static inline uintptr_t rc_region_end(const struct rc_region *r)
{
	return rc_load_relaxed(&r->end);
}

static inline uintptr_t rc_self(void)
{
	/* The thread pointer is unique among live threads and costs nothing
	 * to read; a dead thread's successor may inherit it, and with it the
	 * dead thread's (idle) regions, which is harmless. */
	return (uintptr_t)__builtin_thread_pointer();
}

/* ---------------------------------------------------------------------
 * References
 * ------------------------------------------------------------------- */

static inline uint32_t rc_region_refs(const struct rc_region *r)
{
	/* Acquire pairs with the release of the last unref. */
	return rc_load_acquire(&r->owner_refs) +
	       rc_load_acquire(&r->shared_refs);
}

/*
 * Take a reference on a region whose seq was @seq when it was looked up.
 * false: seq moved meanwhile; the reference is still counted and the caller
 * must drop it with rc_region_unref().
 *
 * The owner's increment is a plain store followed by a compiler fence; the
 * CPU-side store-load fence is supplied by the killer's
 * rc_region_fence_counts(), so either the killer sees our count or we see
 * its odd seq. Everybody else pays a seq_cst RMW.
 */
static inline bool rc_region_ref(struct rc_region *r, uint32_t seq)
{
	if (rc_load_relaxed(&r->owner) == rc_self()) {
		rc_bump_relaxed(&r->owner_refs, 1);
		rc_compiler_fence();
	} else {
		rc_fetch_add_seqcst(&r->shared_refs, 1);
	}
	return rc_likely(rc_load_relaxed(&r->seq) == seq);
}

/*
 * Drop a reference. Returns seq as read after the drop: when its state is
 * RC_SEQ_DEAD the count may have reached zero, and the caller must try to
 * claim the region (see cache.c:claim_if_unused).
 */
static inline uint32_t rc_region_unref(struct rc_region *r)
{
	if (rc_load_relaxed(&r->owner) == rc_self()) {
		/* Release (a plain store on x86): whoever reads zero here and
		 * deregisters also sees everything the holder did before. */
		rc_store_release(&r->owner_refs,
				 rc_load_relaxed(&r->owner_refs) - 1);
		rc_compiler_fence();
	} else {
		rc_fetch_sub_seqcst(&r->shared_refs, 1);
	}
	return rc_load_relaxed(&r->seq);
}

/*
 * After a kill (seq made odd with a seq_cst store): make every thread's
 * earlier count update visible to this one, so that a count read next is
 * either complete or its taker will see the kill. @biased: the pool counts
 * owners plainly (a membarrier() of every thread), else a fence suffices.
 */
rc_hidden void rc_region_fence_counts(bool biased);

/* The same, for one region whose count this thread has just dropped: only
 * another owner thread's plain store can hide from us. */
rc_hidden void rc_region_fence_counts_of(const struct rc_region *r);

/* ---------------------------------------------------------------------
 * Lifecycle
 * ------------------------------------------------------------------- */

/* Fill in a region taken from the pool; it stays FREE to lookups. */
static inline void rc_region_fill(struct rc_region *r, uintptr_t start,
				  uintptr_t end, unsigned access, void *handle,
				  uint32_t flags)
{
	rc_store_relaxed(&r->start, start);
	rc_store_relaxed(&r->end, end);
	rc_store_relaxed(&r->access, access);
	rc_store_relaxed(&r->flags, (uint16_t)flags);
	rc_store_relaxed(&r->hits, 0);
	r->handle = handle;
}

/* Make a filled region LIVE, holding one reference for the caller. */
rc_hidden void rc_region_make_live(struct rc_region *r);

/* LIVE -> DEAD. The seq_cst store orders the kill before the
 * rc_region_fence_counts() that precedes reading the counts. */
static inline void rc_region_mark_dead(struct rc_region *r, uint32_t ticket)
{
	uint32_t seq = rc_load_relaxed(&r->seq);

	atomic_store_explicit(&r->seq, seq + 1, memory_order_seq_cst);
	r->kill_ticket = ticket;
}

/* DEAD (as @seq) -> CLAIMED; true for the one caller that wins. The caller
 * has seen the counts at zero after a fence, so nobody holds it. */
static inline bool rc_region_claim(struct rc_region *r, uint32_t seq)
{
	return rc_seq_state(seq) == RC_SEQ_DEAD &&
	       atomic_compare_exchange_strong(&r->seq, &seq, seq + 1);
}

/* ---------------------------------------------------------------------
 * The pool: type-stable region memory, free lists per owner thread
 * ------------------------------------------------------------------- */

/* Free regions are kept per owner thread so that a region is always reused
 * by the thread that owns it (see struct rc_region). */
#define RC_OWNER_BUCKETS 256
struct rc_owner_free {
	uintptr_t owner;
	struct rc_region_list regions;
};

struct rc_slab;

/**
 * struct rc_region_pool - the regions of one cache
 * @biased:  membarrier() works, so owners count with plain stores;
 *           otherwise every region stays unowned and counts with RMWs.
 *
 * Every call named _locked needs the lock the caller guards the pool with
 * (the cache lock); the others take no lock.
 */
struct rc_region_pool {
	bool biased;
	struct rc_owner_free free_by_owner[RC_OWNER_BUCKETS];
	struct rc_region_list fresh;	/* never owned */
	struct rc_slab *slabs;
};

/* Register for biased counting (membarrier); false where unavailable. */
rc_hidden bool rc_region_pool_init(struct rc_region_pool *pool);
/* Free the pool's memory: every region becomes invalid. */
rc_hidden void rc_region_pool_fini(struct rc_region_pool *pool);

/* A FREE region for the calling thread, or NULL when the pool is empty. */
rc_hidden struct rc_region *rc_region_alloc_locked(struct rc_region_pool *pool);
/* New region memory, allocated without the lock (a malloc may unmap memory,
 * and with userfaultfd the unmapping thread waits for the monitor); NULL
 * when out of memory. Hand it to the pool with rc_region_slab_add_locked(). */
rc_hidden struct rc_slab *rc_region_slab_new(void);
rc_hidden void rc_region_slab_add_locked(struct rc_region_pool *pool,
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

#endif /* RC_REGION_H */
