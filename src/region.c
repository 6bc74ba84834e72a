/* SPDX-License-Identifier: MIT */
/*
 * Region lifecycle: type-stable allocation, biased reference counts, killing,
 * claiming and deregistering outside the cache lock (design rules 1 and 3).
 */
#include <errno.h>
#include <string.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache.h"
#include "log.h"

#define RC_SLAB_REGIONS 1024

/* Registering for the expedited private command is per process and
 * idempotent. Where it fails (old kernel, seccomp, valgrind) every thread
 * counts with atomic RMWs instead, which is correct but slower. */
bool rc_membarrier_init(void)
{
	long ret = syscall(SYS_membarrier,
			   MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);

	if (ret) {
		rc_info("membarrier unavailable (%s): hits use atomic "
			"reference counts", strerror(errno));
		return false;
	}
	return true;
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

static struct rc_owner_free *owner_bucket(struct regcache *c, uintptr_t owner,
					  bool create)
{
	size_t h = (size_t)((owner >> 12) * 0x9e3779b97f4a7c15ull) >> 58;

	for (size_t i = 0; i < RC_OWNER_BUCKETS; i++) {
		struct rc_owner_free *b =
			&c->free_by_owner[(h + i) % RC_OWNER_BUCKETS];

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

static struct rc_region *pop_locked(struct regcache *c, uintptr_t self)
{
	struct rc_owner_free *b = c->biased ? owner_bucket(c, self, true) : NULL;
	struct rc_region *r = NULL;

	if (b && !TAILQ_EMPTY(&b->regions)) {
		r = TAILQ_FIRST(&b->regions);
		TAILQ_REMOVE(&b->regions, r, link);
	} else if (!TAILQ_EMPTY(&c->fresh)) {
		r = TAILQ_FIRST(&c->fresh);
		TAILQ_REMOVE(&c->fresh, r, link);
		/* An owned region keeps its owner for good, so only one thread
		 * ever stores to its owner_refs. A region in "fresh" has no
		 * owner: every thread counted it with RMWs, so giving it one
		 * now races with nobody. Without a bucket (more owner threads
		 * than buckets) it stays unowned, and returns to "fresh". */
		rc_store_relaxed(&r->owner, b ? self : 0);
	}
	return r;
}

/*
 * Allocation happens outside the cache lock: a malloc can unmap memory, and
 * with userfaultfd the unmapping thread sleeps until the monitor reads the
 * event (design rule 1).
 */
struct rc_region *rc_region_alloc(struct regcache *c)
{
	uintptr_t self = rc_self();
	struct rc_slab *slab;
	struct rc_region *r;

	pthread_mutex_lock(&c->lock);
	r = pop_locked(c, self);
	pthread_mutex_unlock(&c->lock);
	if (r)
		return r;

	slab = calloc(1, sizeof(*slab) + RC_SLAB_REGIONS * sizeof(*r));
	if (!slab)
		return NULL;
	slab->count = RC_SLAB_REGIONS;
	for (size_t i = 0; i < RC_SLAB_REGIONS; i++)
		rc_store_relaxed(&slab->regions[i].seq, RC_SEQ_FREE);

	pthread_mutex_lock(&c->lock);
	slab->next = c->slabs;
	c->slabs = slab;
	for (size_t i = 0; i < RC_SLAB_REGIONS; i++)
		TAILQ_INSERT_TAIL(&c->fresh, &slab->regions[i], link);
	r = pop_locked(c, self);
	pthread_mutex_unlock(&c->lock);
	return r;
}

void rc_region_free_locked(struct regcache *c, struct rc_region *r)
{
	uintptr_t owner = rc_load_relaxed(&r->owner);
	struct rc_owner_free *b;

	if (!owner) {
		TAILQ_INSERT_HEAD(&c->fresh, r, link);
		return;
	}
	/* The bucket was made when the owner allocated the region. */
	b = owner_bucket(c, owner, false);
	TAILQ_INSERT_HEAD(&b->regions, r, link);
}

/* Fill in a free region and make it live (or leave it free-looking for a
 * pass-through region, which no hit may find). The caller holds one
 * reference when this returns. */
void rc_region_publish(struct rc_region *r, uintptr_t start, uintptr_t end,
		       unsigned access, void *handle, uint32_t flags)
{
	uint32_t seq = rc_load_relaxed(&r->seq);

	rc_store_relaxed(&r->start, start);
	rc_store_relaxed(&r->end, end);
	rc_store_relaxed(&r->access, access);
	rc_store_relaxed(&r->flags, (uint16_t)flags);
	rc_store_relaxed(&r->hits, 0);
	r->handle = handle;
	/* A pass-through region is never visible to another get: no count. */
	if (flags & RC_REGION_PASSTHROUGH)
		return;
	if (rc_load_relaxed(&r->owner) == rc_self())
		rc_bump_relaxed(&r->owner_refs, 1);
	else
		rc_fetch_add_seqcst(&r->shared_refs, 1);
	/* Release pairs with the acquire of seq in regcache_get(): a hit that
	 * sees the new even value sees the fields above. */
	rc_store_release(&r->seq, (seq | 3u) + 1);
}

/* Try to claim a dead region whose count may have reached zero; the winner
 * deregisters it and returns it to the free list. Cold path of
 * rc_region_unref(). */
void rc_region_try_claim(struct regcache *c, struct rc_region *r, uint32_t seq)
{
	uintptr_t owner = rc_load_relaxed(&r->owner);

	/* In a child that has not noticed the fork yet, this region and its
	 * registration are the parent's: notice first (the region turns
	 * free, and the CAS below fails). */
	rc_cache_check_fork(c);
	/* Order our own count update before reading the other count. If the
	 * owner is another thread, its plain increment may still sit in its
	 * store buffer, and only a barrier on its CPU makes it visible (the
	 * store-buffering pattern); rare: a non-owner's last put of a dead
	 * region. */
	if (owner && owner != rc_self())
		barrier_all_threads();
	else
		rc_fence_seqcst();
	if (rc_region_refs(r) != 0)
		return;
	if (!atomic_compare_exchange_strong(&r->seq, &seq, seq + 2))
		return;
	rc_region_dereg(c, r);
	pthread_mutex_lock(&c->lock);
	TAILQ_REMOVE(&c->dead_list, r, link);
	rc_region_free_locked(c, r);
	pthread_mutex_unlock(&c->lock);
}

/* Unlink a live region. Its registration stays until nobody holds it;
 * rc_region_kill_finish() decides that after the lock is dropped. */
void rc_region_kill_locked(struct regcache *c, struct rc_region *r,
			   struct rc_kill_batch *batch)
{
	uint32_t seq = rc_load_relaxed(&r->seq);

	rc_index_remove(c, r);
	c->hits_retired += rc_load_relaxed(&r->hits);
	/* seq_cst store: ordered before the membarrier()/fence that precedes
	 * our reading of the reference counts. */
	atomic_store_explicit(&r->seq, seq + 1, memory_order_seq_cst);
	r->kill_ticket = ++c->kills;
	TAILQ_INSERT_TAIL(&c->dead_list, r, link);
	batch->killed++;
}

void rc_region_kill_finish(struct regcache *c, struct rc_kill_batch *batch)
{
	struct rc_region_list claimed = TAILQ_HEAD_INITIALIZER(claimed);
	struct rc_region *r, *next;

	uint32_t killed_before;

	if (!batch->killed)
		return;
	/* Only regions killed before our barrier may be claimed by this
	 * scan: for one killed after it, an owner's increment may not be
	 * visible to us yet; its own killer's scan will see it. */
	pthread_mutex_lock(&c->lock);
	killed_before = c->kills;
	pthread_mutex_unlock(&c->lock);
	if (c->biased)
		barrier_all_threads();
	else
		rc_fence_seqcst();

	pthread_mutex_lock(&c->lock);
	TAILQ_FOREACH_SAFE(r, &c->dead_list, link, next) {
		uint32_t seq = rc_load_relaxed(&r->seq);

		if (rc_seq_state(seq) != RC_SEQ_DEAD || rc_region_refs(r) ||
		    (int32_t)(r->kill_ticket - killed_before) > 0)
			continue;
		if (!atomic_compare_exchange_strong(&r->seq, &seq, seq + 2))
			continue;
		TAILQ_REMOVE(&c->dead_list, r, link);
		TAILQ_INSERT_TAIL(&claimed, r, link);
	}
	pthread_mutex_unlock(&c->lock);

	if (TAILQ_EMPTY(&claimed))
		return;
	TAILQ_FOREACH(r, &claimed, link)
		rc_region_dereg(c, r);
	pthread_mutex_lock(&c->lock);
	while ((r = TAILQ_FIRST(&claimed))) {
		TAILQ_REMOVE(&claimed, r, link);
		rc_region_free_locked(c, r);
	}
	pthread_mutex_unlock(&c->lock);
	batch->killed = 0;
}

/* Deregister a claimed (or pass-through) region. Never with a lock held. */
void rc_region_dereg(struct regcache *c, struct rc_region *r)
{
	uintptr_t start = rc_load_relaxed(&r->start);
	uintptr_t end = rc_load_relaxed(&r->end);

	c->ops.dereg(c->ctx, r->handle);
	rc_fetch_add_relaxed(&c->st_deregistrations, 1);
	atomic_fetch_sub_explicit(&c->cur_regions, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&c->cur_bytes, end - start,
				  memory_order_relaxed);
	if (rc_load_relaxed(&r->flags) & RC_REGION_WATCHED)
		rc_monitor_unwatch(start, end);
}

/* A region of the parent, in the child: make it free without deregistering
 * it. One still counted as held (by this thread, or by a parent thread the
 * child does not have) is never reused: its reference counts are not this
 * process's to trust, and a put by this thread must find it inert. */
static void forget_locked(struct regcache *c, struct rc_region *r)
{
	rc_store_relaxed(&r->seq, rc_load_relaxed(&r->seq) | RC_SEQ_FREE);
	if (rc_region_refs(r))
		rc_store_relaxed(&r->flags,
				 (uint16_t)(rc_load_relaxed(&r->flags) |
					    RC_REGION_FORGOTTEN));
	else
		rc_region_free_locked(c, r);
}

/* In a forked child: the registrations belong to the parent's device
 * context, so drop every region without deregistering it. */
void rc_region_forget_all_locked(struct regcache *c)
{
	struct rc_region *r;

	while ((r = TAILQ_FIRST(&c->lru))) {
		c->hits_retired += rc_load_relaxed(&r->hits);
		rc_index_remove(c, r);
		forget_locked(c, r);
	}
	while ((r = TAILQ_FIRST(&c->dead_list))) {
		TAILQ_REMOVE(&c->dead_list, r, link);
		forget_locked(c, r);
	}
	while ((r = TAILQ_FIRST(&c->passthrough))) {
		TAILQ_REMOVE(&c->passthrough, r, link);
		rc_store_relaxed(&r->flags,
				 (uint16_t)(rc_load_relaxed(&r->flags) |
					    RC_REGION_FORGOTTEN));
	}
	atomic_store_explicit(&c->cur_regions, 0, memory_order_relaxed);
	atomic_store_explicit(&c->cur_bytes, 0, memory_order_relaxed);
}

void rc_region_slabs_free(struct regcache *c)
{
	struct rc_slab *slab;

	while ((slab = c->slabs)) {
		c->slabs = slab->next;
		free(slab);
	}
}
