/* SPDX-License-Identifier: MIT */
/*
 * Internal state of a cache and of its regions, and the cross-file helpers
 * of the cache core (region.c, index.c, evict.c, stats.c).
 */
#ifndef RC_CACHE_H
#define RC_CACHE_H

#include <bsd/sys/tree.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <bsd/sys/queue.h>

#include <regcache.h>

#include "compat.h"
#include "monitor.h"

/* rc_region.flags */
#define RC_REGION_PASSTHROUGH	(1u << 0)	/* not cached: dereg at put */
#define RC_REGION_WATCHED	(1u << 1)	/* unwatch after dereg */
#define RC_REGION_FORGOTTEN	(1u << 2)	/* held across fork: never
						   deregistered or reused */

/* rc_region.seq modulo 4: the state of the current incarnation. */
#define RC_SEQ_LIVE	0u	/* indexed; hits may take it */
#define RC_SEQ_DEAD	1u	/* unlinked, still registered */
#define RC_SEQ_FREE	3u	/* claimed for deregistration, or free */
#define rc_seq_state(seq) ((seq) & 3u)

/**
 * struct rc_region - one registered range
 *
 * The first 64 bytes are what a hit reads and writes. Region memory is
 * type-stable: it returns to its cache's free list, never to malloc, until
 * the cache is destroyed, so a hit may read a stale hint pointer safely.
 *
 * Lifecycle, with seq:
 *   free (odd) -> live: indexed, hintable (even) -> dead (odd) -> claimed,
 *   deregistered -> free. Every incarnation has a distinct even seq.
 *
 * Invariants:
 *   live                 <=> seq even <=> in c->tree and on c->lru
 *   refs(r)              == owner_refs + shared_refs
 *   owner                never changes once set (see region.c:rc_region_alloc),
 *                        so only one thread ever writes owner_refs.
 *
 * Reference counting is biased (Choi et al., PACT 2018): the thread that
 * created the region counts with plain stores, everybody else with atomic
 * RMWs. A killer makes seq odd, then calls membarrier(), then reads both
 * counts; a getter bumps its count, then re-reads seq. membarrier() supplies
 * the store-load fence the owner's hit path leaves out, so one of the two
 * always sees the other (see region.c:rc_region_kill_finish).
 */
struct rc_region {
	_Atomic uint32_t seq;
	_Atomic uint32_t access;
	_Atomic uintptr_t start;
	_Atomic uintptr_t end;
	_Atomic uintptr_t owner;	/* thread pointer of the creator */
	_Atomic uint32_t owner_refs;	/* written by the owner only */
	_Atomic uint32_t shared_refs;	/* everybody else, atomic RMW */
	_Atomic uint16_t last_use;	/* c->clock at the last put */
	_Atomic uint16_t flags;		/* RC_REGION_* */
	union {				/* under c->lock only: */
		uint16_t lru_stamp;	/* live: last_use when queued */
		uint32_t kill_ticket;	/* dead: c->kills at its kill */
	};
	_Atomic uint64_t hits;
	void *handle;

	/* Cold: changed under c->lock only. */
	RB_ENTRY(rc_region) rb;
	TAILQ_ENTRY(rc_region) link;	/* lru, dead list or free list */
};
/* 112 bytes: with one hint slot (8 bytes) a cached region costs 120 bytes.
 * The LRU clock is kept modulo 2^16 here; a region used exactly a multiple
 * of 65536 misses after it was queued looks unused and may be evicted a
 * little early, which costs one re-registration. */

TAILQ_HEAD(rc_region_list, rc_region);
RB_HEAD(rc_tree, rc_region);

/* A registration in flight: sync marks it tainted if a published range
 * overlaps it before it is indexed (design rule 2). */
struct rc_pending {
	uintptr_t start, end;
	bool tainted;
	TAILQ_ENTRY(rc_pending) link;
};
TAILQ_HEAD(rc_pending_list, rc_pending);

/* Free regions are kept per owner thread so that a region is always reused
 * by the thread that owns it (see struct rc_region). */
#define RC_OWNER_BUCKETS 256
struct rc_owner_free {
	uintptr_t owner;
	struct rc_region_list regions;
};

struct rc_slab {
	struct rc_slab *next;
	size_t count;
	struct rc_region regions[];
};

/* Regions killed under the lock go to c->dead_list; the batch remembers
 * that rc_region_kill_finish() must run after the lock is dropped. */
struct rc_kill_batch {
	unsigned killed;
};

/**
 * struct regcache - one cache
 *
 * Invariants (under lock):
 *   nr_live == number of regions in tree == on lru
 *   live_bytes == sum of (end - start) over live regions
 *   regions on dead_list are dead, unclaimed, registered
 *   regions on passthrough are held, registered, never indexed
 */
struct regcache {
	/* Read by every hit. */
	struct rc_monitor_cursor cursor;
	_Atomic(struct rc_region *) *hint;
	uintptr_t hint_mask;		/* hint slots - 1 */
	unsigned hint_bits;		/* log2(hint slots) */
	_Atomic uint32_t clock;		/* bumped by each miss: the LRU's time */
	bool probe_hits;
	bool never_cache;
	bool explicit_invalidate;
	bool biased;			/* membarrier() works: owners count plainly */
	bool stable;			/* RC_CACHE_FLAG_STABLE */

	struct regcache_ops ops;
	void *ctx;
	size_t max_regions;
	size_t max_bytes;
	unsigned flags;
	void *registrar_priv;		/* freed by registrar_destroy */
	void (*registrar_destroy)(void *priv);

	pthread_mutex_t lock __attribute__((aligned(rc_cacheline)));
	struct rc_tree tree;
	struct rc_region_list lru;
	struct rc_region_list dead_list;
	struct rc_region_list passthrough;	/* held pass-through regions */
	struct rc_pending_list pending;
	size_t nr_live;
	size_t live_bytes;
	struct rc_owner_free free_by_owner[RC_OWNER_BUCKETS];
	struct rc_region_list fresh;	/* never owned */
	struct rc_slab *slabs;
	uint64_t hits_retired;		/* hits of regions no longer live */
	uint32_t kills;			/* kills so far: the kill tickets */

	/* Statistics updated outside the lock too. */
	_Atomic uint64_t st_misses, st_uncached, st_registrations,
		st_deregistrations, st_invalidations, st_evictions, st_merges,
		st_overflows, st_reg_failures, st_slow_hits;
	_Atomic uint64_t cur_regions, cur_bytes;
};

static inline uintptr_t rc_self(void)
{
	/* The thread pointer is unique among live threads and costs nothing
	 * to read; a dead thread's successor may inherit it, and with it the
	 * dead thread's (idle) regions, which is harmless. */
	return (uintptr_t)__builtin_thread_pointer();
}

static inline uint32_t rc_region_refs(struct rc_region *r)
{
	/* Acquire pairs with the release of the last put (region.c). */
	return rc_load_acquire(&r->owner_refs) +
	       rc_load_acquire(&r->shared_refs);
}

/* region.c */
rc_hidden struct rc_region *rc_region_alloc(struct regcache *c);
rc_hidden void rc_region_free_locked(struct regcache *c, struct rc_region *r);
rc_hidden void rc_region_publish(struct rc_region *r, uintptr_t start,
				 uintptr_t end, unsigned access, void *handle,
				 uint32_t flags);
rc_hidden void rc_region_try_claim(struct regcache *c, struct rc_region *r,
				   uint32_t seq);
rc_hidden void rc_region_kill_locked(struct regcache *c, struct rc_region *r,
				     struct rc_kill_batch *batch);
rc_hidden void rc_region_kill_finish(struct regcache *c,
				     struct rc_kill_batch *batch);
rc_hidden void rc_region_dereg(struct regcache *c, struct rc_region *r);
rc_hidden void rc_region_forget_all_locked(struct regcache *c);
rc_hidden void rc_region_slabs_free(struct regcache *c);
rc_hidden bool rc_membarrier_init(void);

static inline void rc_kill_batch_init(struct rc_kill_batch *b)
{
	b->killed = 0;
}

/* Drop a reference; the last one on a dead region deregisters it. */
static inline void rc_region_unref(struct regcache *c, struct rc_region *r)
{
	uint32_t seq;

	if (rc_load_relaxed(&r->owner) == rc_self()) {
		/* Release (a plain store on x86): whoever reads zero here and
		 * deregisters also sees everything the holder did before. */
		rc_store_release(&r->owner_refs,
				 rc_load_relaxed(&r->owner_refs) - 1);
		rc_compiler_fence();
	} else {
		rc_fetch_sub_seqcst(&r->shared_refs, 1);
	}
	seq = rc_load_relaxed(&r->seq);
	if (rc_unlikely(rc_seq_state(seq) == RC_SEQ_DEAD))
		rc_region_try_claim(c, r, seq);
}

/* Take a reference on a region whose seq was @seq when it was looked up.
 * false: it changed meanwhile, and the reference is already dropped again.
 *
 * The owner's increment is a plain store followed by a compiler fence; the
 * CPU-side store-load fence is supplied by the killer's membarrier()
 * (region.c:rc_region_kill_finish), so either the killer sees our count or
 * we see its odd seq. Everybody else pays a seq_cst RMW. */
static inline bool rc_region_ref(struct regcache *c, struct rc_region *r,
				 uint32_t seq)
{
	if (rc_load_relaxed(&r->owner) == rc_self()) {
		rc_bump_relaxed(&r->owner_refs, 1);
		rc_compiler_fence();
	} else {
		rc_fetch_add_seqcst(&r->shared_refs, 1);
	}
	if (rc_likely(rc_load_relaxed(&r->seq) == seq))
		return true;
	rc_region_unref(c, r);
	return false;
}

/* index.c */
rc_hidden int rc_index_init(struct regcache *c);
rc_hidden void rc_index_fini(struct regcache *c);
rc_hidden struct rc_region *rc_index_first_overlap(struct regcache *c,
						   uintptr_t start,
						   uintptr_t end);
rc_hidden void rc_index_insert(struct regcache *c, struct rc_region *r);
rc_hidden void rc_index_remove(struct regcache *c, struct rc_region *r);
rc_hidden void rc_index_hint(struct regcache *c, uintptr_t addr,
			     struct rc_region *r);
rc_hidden unsigned rc_index_invalidate_locked(struct regcache *c,
					      uintptr_t start, uintptr_t end,
					      struct rc_kill_batch *batch);

static inline size_t rc_hint_slot(const struct regcache *c, uintptr_t addr)
{
	uintptr_t page = addr >> 12;

	/* Neighbouring pages get neighbouring slots (8 per cache line, so a
	 * hot set of nearby buffers touches few lines); folding in the high
	 * bits keeps buffers exactly 2^bits pages apart from colliding. */
	return (size_t)((page ^ (page >> c->hint_bits)) & c->hint_mask);
}

/* evict.c */
rc_hidden void rc_evict_over_limits_locked(struct regcache *c,
					   struct rc_kill_batch *batch);
rc_hidden size_t rc_evict_idle_locked(struct regcache *c, size_t want_bytes,
				      size_t want_regions,
				      struct rc_kill_batch *batch);

/* Internal creation flag (rc_cache_create only): the registrar's registrations
 * follow the page tables (implicit ODP), so they can never go stale: cache
 * under any monitor, never watch, never probe, no byte limit by default. */
#define RC_CACHE_FLAG_STABLE (1u << 31)

/* cache.c */
rc_hidden void rc_cache_sync_locked(struct regcache *c,
				    struct rc_kill_batch *batch);
rc_hidden void rc_cache_check_fork(struct regcache *c);
rc_hidden int rc_cache_create(const struct regcache_params *params,
			      struct regcache **cache);

#endif /* RC_CACHE_H */
