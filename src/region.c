/* SPDX-License-Identifier: MIT */
/*
 * Regions: type-stable allocation with free lists per owner thread, and the
 * fences of the biased reference counts (see region.h).
 */
#include <errno.h>
#include <string.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "region.h"

#define RC_SLAB_REGIONS 1024

struct rc_slab {
	struct rc_slab *next;
	struct rc_region regions[RC_SLAB_REGIONS];
};

/* Registering for the expedited private command is per process and
 * idempotent. Where it fails (old kernel, seccomp, valgrind) every thread
 * counts with atomic RMWs instead, which is correct but slower. */
bool rc_region_pool_init(struct rc_region_pool *pool)
{
	long ret = syscall(SYS_membarrier,
			   MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);

	memset(pool, 0, sizeof(*pool));
	TAILQ_INIT(&pool->fresh);
	pool->biased = ret == 0;
	if (ret)
		rc_info("membarrier unavailable (%s): hits use atomic "
			"reference counts", strerror(errno));
	return pool->biased;
}

void rc_region_pool_fini(struct rc_region_pool *pool)
{
	struct rc_slab *slab;

	while ((slab = pool->slabs)) {
		pool->slabs = slab->next;
		free(slab);
	}
}

/* Pairs with the owner's plain owner_refs store + compiler fence in
 * rc_region_ref()/rc_region_unref(): after this returns, every owner's
 * earlier store is visible here, or that owner's later load of seq sees the
 * kill. */
static void barrier_all_threads(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		rc_fence_seqcst(); /* unreachable once registered */
}

void rc_region_fence_counts(bool biased)
{
	if (biased)
		barrier_all_threads();
	else
		rc_fence_seqcst();
}

void rc_region_fence_counts_of(const struct rc_region *r)
{
	uintptr_t owner = rc_load_relaxed(&r->owner);

	/* Order our own count update before reading the other count. If the
	 * owner is another thread, its plain increment may still sit in its
	 * store buffer, and only a barrier on its CPU makes it visible (the
	 * store-buffering pattern); rare: a non-owner's last put of a dead
	 * region. */
	if (owner && owner != rc_self())
		barrier_all_threads();
	else
		rc_fence_seqcst();
}

void rc_region_make_live(struct rc_region *r)
{
	uint32_t seq = rc_load_relaxed(&r->seq);

	if (rc_load_relaxed(&r->owner) == rc_self())
		rc_bump_relaxed(&r->owner_refs, 1);
	else
		rc_fetch_add_seqcst(&r->shared_refs, 1);
	/* Release pairs with the acquire of seq in regcache_get(): a hit that
	 * sees the new LIVE value sees the fields rc_region_fill() wrote. */
	rc_store_release(&r->seq, (seq | 3u) + 1);
}

static struct rc_owner_free *owner_bucket(struct rc_region_pool *pool,
					  uintptr_t owner, bool create)
{
	size_t h = (size_t)((owner >> 12) * 0x9e3779b97f4a7c15ull) >> 58;

	for (size_t i = 0; i < RC_OWNER_BUCKETS; i++) {
		struct rc_owner_free *b =
			&pool->free_by_owner[(h + i) % RC_OWNER_BUCKETS];

		if (b->owner == owner)
			return b;
		if (!b->owner) {
			if (!create)
				return NULL;
			b->owner = owner;
			TAILQ_INIT(&b->regions);
			return b;
		}
	}
	return NULL;
}

struct rc_region *rc_region_alloc_locked(struct rc_region_pool *pool)
{
	uintptr_t self = rc_self();
	struct rc_owner_free *b =
		pool->biased ? owner_bucket(pool, self, true) : NULL;
	struct rc_region *r = NULL;

	if (b && !TAILQ_EMPTY(&b->regions)) {
		r = TAILQ_FIRST(&b->regions);
		TAILQ_REMOVE(&b->regions, r, link);
	} else if (!TAILQ_EMPTY(&pool->fresh)) {
		r = TAILQ_FIRST(&pool->fresh);
		TAILQ_REMOVE(&pool->fresh, r, link);
		/* An owned region keeps its owner for good, so only one thread
		 * ever stores to its owner_refs. A region in "fresh" has no
		 * owner: every thread counted it with RMWs, so giving it one
		 * now races with nobody. Without a bucket (more owner threads
		 * than buckets) it stays unowned, and returns to "fresh". */
		rc_store_relaxed(&r->owner, b ? self : 0);
	}
	return r;
}

struct rc_slab *rc_region_slab_new(void)
{
	struct rc_slab *slab = calloc(1, sizeof(*slab));

	if (!slab)
		return NULL;
	for (size_t i = 0; i < RC_SLAB_REGIONS; i++)
		rc_store_relaxed(&slab->regions[i].seq, RC_SEQ_FREE);
	return slab;
}

void rc_region_slab_add_locked(struct rc_region_pool *pool,
			       struct rc_slab *slab)
{
	slab->next = pool->slabs;
	pool->slabs = slab;
	for (size_t i = 0; i < RC_SLAB_REGIONS; i++)
		TAILQ_INSERT_TAIL(&pool->fresh, &slab->regions[i], link);
}

void rc_region_free_locked(struct rc_region_pool *pool, struct rc_region *r)
{
	uintptr_t owner = rc_load_relaxed(&r->owner);
	struct rc_owner_free *b;

	rc_store_relaxed(&r->seq, rc_load_relaxed(&r->seq) | RC_SEQ_FREE);
	if (!owner) {
		TAILQ_INSERT_HEAD(&pool->fresh, r, link);
		return;
	}
	/* The bucket was made when the owner allocated the region. */
	b = owner_bucket(pool, owner, false);
	rc_assert(b);
	TAILQ_INSERT_HEAD(&b->regions, r, link);
}

bool rc_region_forget_locked(struct rc_region_pool *pool, struct rc_region *r)
{
	rc_store_relaxed(&r->seq, rc_load_relaxed(&r->seq) | RC_SEQ_FREE);
	if (rc_region_refs(r)) {
		rc_store_relaxed(&r->flags,
				 (uint16_t)(rc_load_relaxed(&r->flags) |
					    RC_REGION_FORGOTTEN));
		return false;
	}
	rc_region_free_locked(pool, r);
	return true;
}
