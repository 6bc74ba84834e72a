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
 * see Slabs below). The index, the hint table and the lists hold numbers,
 * not pointers: 4 bytes instead of 8. Number 0 is no region's.
 *
 * Invariants:
 *   seq state LIVE  <=> in the cache's index and on its LRU
 *   refs(r)         == shared_refs + the count of r in every thread's
 *                      reference slots (struct rc_thread_refs), modulo 2^32
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
 * References
 *
 * A reference is counted where it costs its taker least: in the taking
 * thread's own slot for the region, with plain stores (no thread but the
 * owner of a slot writes it), or, where the thread has no free slot for
 * it, in the region's shared_refs with a seq_cst RMW. Every thread pays
 * the same, whoever created the region.
 *
 * A killer makes seq odd, then calls rc_region_fence_counts() (a
 * membarrier() of every thread of the process), then reads the counts; a
 * getter bumps its count, then re-reads seq. membarrier() supplies the
 * store-load fence the getter leaves out, so one of the two always sees
 * the other (the biased counting of Choi et al., PACT 2018, biased to
 * every thread at once). Where membarrier() is unavailable no thread gets
 * slots, and every count is an RMW.
 *
 * Where membarrier() starts failing after threads got slots (a seccomp
 * filter installed later, a forked child's new mm), a local fence is not
 * enough: a getter's count may still sit in its store buffer while its
 * re-read of seq has already seen the region live, and no fence of ours
 * can flush another CPU's store buffer. So the slots are revoked instead:
 * no thread gets new ones, every slot is marked (RC_REF_REVOKED) so that
 * its owner's fast path misses it, and an owner that misses gives its
 * slots up for good with a release RMW, after which it counts only with
 * seq_cst RMWs. Its earlier plain stores come before that RMW, so once
 * every revoked owner has given up (or exited), every count is visible
 * and a fence of the killer's own suffices again. Until then
 * rc_region_fence_counts() returns false and nothing may be claimed: a
 * dead region stays registered (and is claimed later), never deregistered
 * under a reference nobody could see.
 *
 * A put from a thread other than the getter finds no slot for the region
 * and counts down shared_refs: the sum stays right modulo 2^32.
 * ------------------------------------------------------------------- */

#define RC_THREAD_SLOTS	256
/* A slot is (count << 48) | region pointer: user pointers fit in 48 bits
 * (see region.c:rc_region_slab_new). */
#define RC_REF_ONE	((uint64_t)1 << 48)
#define RC_REF_PTR_MASK	(RC_REF_ONE - 1)
#define RC_REF_MAX	((uint64_t)0xffff << 48)
/* Revoked slot: bit 0 of the pointer (regions are 16-aligned), so that no
 * fast path matches it while readers still count it. An empty slot is
 * revoked as RC_REF_MAX | RC_REF_REVOKED, which counts for no region. */
#define RC_REF_REVOKED	((uint64_t)1)
#define rc_ref_region(v) ((uintptr_t)((v) & RC_REF_PTR_MASK & ~RC_REF_REVOKED))

struct rc_thread_refs {
	_Atomic uint64_t slot[RC_THREAD_SLOTS];
};

/* The calling thread's slots; NULL until its first reference. */
extern rc_hidden __thread struct rc_thread_refs *rc_my_refs
	__attribute__((tls_model("initial-exec")));

static inline _Atomic uint64_t *rc_ref_slot(struct rc_thread_refs *t,
					    const struct rc_region *r)
{
	/* Regions are 48 bytes apart in a slab, so r >> 4 steps by 3, which
	 * is prime to RC_THREAD_SLOTS: any RC_THREAD_SLOTS consecutive
	 * regions take distinct slots. */
	return &t->slot[((uintptr_t)r >> 4) % RC_THREAD_SLOTS];
}

/* Count a reference without a slot (registers the thread's slots first,
 * if it has none yet and can have them). */
rc_hidden void rc_region_count_up_shared(struct rc_region *r);
/* A count operation missed the calling thread's slot: if its slots were
 * revoked, give them up (see References). */
rc_hidden void rc_region_slot_missed(struct rc_thread_refs *t);

static inline void rc_region_count_up(struct rc_region *r)
{
	struct rc_thread_refs *t = rc_my_refs;

	if (rc_likely(t)) {
		_Atomic uint64_t *s = rc_ref_slot(t, r);
		uint64_t v = rc_load_relaxed(s), n = v - (uintptr_t)r;

		/* This region's slot, below the maximum count; or a slot
		 * whose region (any) has a count of zero. */
		if (rc_likely(!(n & RC_REF_PTR_MASK) && n < RC_REF_MAX)) {
			rc_store_relaxed(s, v + RC_REF_ONE);
			rc_compiler_fence();
			return;
		}
		if (v < RC_REF_ONE) {
			rc_store_relaxed(s, (uintptr_t)r + RC_REF_ONE);
			rc_compiler_fence();
			return;
		}
	}
	rc_region_count_up_shared(r);
}

/*
 * Drop a reference from the calling thread's slot; false if the slot holds
 * none of @r (the caller then drops it from shared_refs). The release pairs
 * with the acquire of rc_region_refs(): whoever reads zero and deregisters
 * also sees everything the holder did before.
 */
static inline bool rc_region_count_down_local(struct rc_region *r)
{
	struct rc_thread_refs *t = rc_my_refs;

	if (rc_likely(t)) {
		_Atomic uint64_t *s = rc_ref_slot(t, r);
		uint64_t v = rc_load_relaxed(s), n = v - (uintptr_t)r;

		if (rc_likely(!(n & RC_REF_PTR_MASK) && n)) {
			rc_store_release(s, v - RC_REF_ONE);
			rc_compiler_fence();
			return true;
		}
		rc_region_slot_missed(t);
	}
	return false;
}

/* refs(r): every thread's slot for @r plus shared_refs. Not a snapshot:
 * only zero after rc_region_fence_counts() of a dead region means unheld. */
rc_hidden uint32_t rc_region_refs(const struct rc_region *r);
/* The part of refs(r) in thread slots. */
rc_hidden uint32_t rc_region_slot_refs(const struct rc_region *r);

/*
 * Take a reference on a region whose seq was @seq when it was looked up.
 * false: seq moved meanwhile; the reference is still counted and the caller
 * must drop it.
 */
static inline bool rc_region_ref(struct rc_region *r, uint32_t seq)
{
	rc_region_count_up(r);
	return rc_likely(rc_load_relaxed(&r->seq) == seq);
}

/*
 * After a kill (seq made odd with a seq_cst store): make every thread's
 * earlier count update visible to this one, so that a count read next is
 * either complete or its taker will see the kill. A membarrier() where
 * threads count in slots, else a fence. false when that cannot be had
 * (slots revoked, some owner not yet moved off them): then no count may
 * be trusted to be complete, and nothing may be claimed. Never under a
 * lock a hit takes.
 */
rc_hidden bool rc_region_fence_counts(void);

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
 * process registers for membarrier() (see References); where that fails,
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

#endif /* RC_REGION_H */
