/* SPDX-License-Identifier: MIT */
/*
 * The reference counts of regions (region.h): biased to every thread at
 * once, each thread counting in slots of its own, made safe by
 * membarrier() and revoked where membarrier() starts failing. The hit and
 * put paths inline the counting; region.c holds the slots' tables.
 */
#ifndef RC_REGION_REFS_H
#define RC_REGION_REFS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/compat.h"
#include "region.h"

/*
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
 */

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
 * revoked, give them up (see above). */
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

#endif /* RC_REGION_REFS_H */
