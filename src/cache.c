/* SPDX-License-Identifier: MIT */
/*
 * The cache: the one place that knows the index, the LRU and the regions
 * together. It kills regions (unindex, unqueue, mark dead), claims and
 * deregisters them, drains the monitor, and holds the counts; around that,
 * create/destroy, the hit path of get/put, and the miss path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "cache.h"
#include "cache_registrar.h"
#include "base/env.h"
#include "base/fork.h"
#include "base/log.h"

#define RC_DEFAULT_MAX_REGIONS 65536
#define RC_MISS_ATTEMPTS 4

static uintptr_t page_size;

/* Every cache of the process, for eviction across caches when they
 * share the pinned-memory budget (budget.h). Never taken with a cache lock
 * held; taken before one. */
static pthread_mutex_t caches_lock = PTHREAD_MUTEX_INITIALIZER;
static TAILQ_HEAD(, regcache) caches = TAILQ_HEAD_INITIALIZER(caches);

/* A fork while another thread evicts across caches must not leave the
 * child a held caches_lock (fork.h: the outermost lock). */
static void caches_lock_take(void) { pthread_mutex_lock(&caches_lock); }
static void caches_lock_drop(void) { pthread_mutex_unlock(&caches_lock); }
static const struct rc_fork_handlers caches_fork = {
	caches_lock_take, caches_lock_drop, caches_lock_drop
};

/* ---------------------------------------------------------------------
 * Regions: allocation, kills, claims
 * ------------------------------------------------------------------- */

/* What the region lists of @c link through (region_pool.h). */
static inline struct rc_region *const *slabs(const struct regcache *c)
{
	return c->pool.table.slab;
}

/*
 * Regions killed under the lock wait on c->dead_list until the lock is
 * dropped: whether anybody still holds them can only be decided after
 * rc_region_fence_counts(), which must not run under the lock.
 * @killed:   regions this batch killed;
 * @scan_all: scan the dead list even if this batch killed nothing (it also
 *            holds regions whose last put raced with their kill).
 */
struct kill_batch {
	unsigned killed;
	bool scan_all;
};

static inline void kill_batch_init(struct kill_batch *b)
{
	b->killed = 0;
	b->scan_all = false;
}

static inline void kill_batch_scan_all(struct kill_batch *b)
{
	b->scan_all = true;
}

/*
 * Allocation happens outside the cache lock: a malloc can unmap memory, and
 * with userfaultfd the unmapping thread sleeps until the monitor reads the
 * event (docs/design.md, rule 1). So the index gets the nodes its next
 * insert may need here, before the lock is taken to insert.
 */
static bool index_top_up(struct regcache *c, unsigned want)
{
	struct rc_index_node *nodes[RC_INDEX_SPARES_MAX];
	unsigned n = 0;
	bool all;

	while (n < want && n < RC_INDEX_SPARES_MAX &&
	       (nodes[n] = rc_index_node_new()))
		n++;
	all = n == want;
	pthread_mutex_lock(&c->lock);
	while (n)
		rc_index_add_spare(&c->index, nodes[--n]);
	pthread_mutex_unlock(&c->lock);
	return all;
}

static struct rc_region *region_alloc(struct regcache *c)
{
	struct rc_slab *slab;
	struct rc_region *r;
	unsigned want;

	pthread_mutex_lock(&c->lock);
	r = rc_region_alloc_locked(&c->pool);
	want = rc_index_spares_wanted(&c->index);
	pthread_mutex_unlock(&c->lock);
	if (want)
		index_top_up(c, want);
	if (r)
		return r;
	slab = rc_region_slab_new(&c->pool);
	if (!slab)
		return NULL;
	pthread_mutex_lock(&c->lock);
	if (!rc_region_slab_add_locked(&c->pool, slab)) {
		pthread_mutex_unlock(&c->lock);
		rc_region_slab_free(slab);
		return NULL;
	}
	r = rc_region_alloc_locked(&c->pool);
	pthread_mutex_unlock(&c->lock);
	return r;
}

static void region_free(struct regcache *c, struct rc_region *r)
{
	pthread_mutex_lock(&c->lock);
	rc_region_free_locked(&c->pool, r);
	pthread_mutex_unlock(&c->lock);
}

/* Deregister a claimed (or pass-through) region. Never with a lock held. */
static void dereg(struct regcache *c, struct rc_region *r)
{
	uintptr_t start = rc_region_start(r), end = rc_region_end(r);

	c->ops.dereg(c->ctx, r->handle);
	if (c->pinned)
		rc_budget_release(end - start);
	rc_fetch_add_relaxed(&c->st_deregistrations, 1);
	atomic_fetch_sub_explicit(&c->cur_regions, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&c->cur_bytes, end - start,
				  memory_order_relaxed);
	if (rc_region_flags(r) & RC_REGION_WATCHED)
		rc_monitor_unwatch(start, end);
}

/* Index a filled region: it becomes LIVE, hintable and evictable. The
 * index has its spares (rc_index_spares_wanted() is 0): it allocates
 * nothing. */
static void make_live_locked(struct regcache *c, struct rc_region *r)
{
	rc_region_make_live(r);
	rc_index_insert(&c->index, r);
	rc_lru_add(&c->lru, r);
	c->nr_live++;
	c->live_bytes += rc_region_end(r) - rc_region_start(r);
}

/* Unlink a live region. Its registration stays until nobody holds it;
 * claim_killed() decides that after the lock is dropped. */
static void kill_locked(struct regcache *c, struct rc_region *r,
			struct kill_batch *batch)
{
	rc_index_remove(&c->index, r);
	rc_lru_del(&c->lru, r);
	c->nr_live--;
	c->live_bytes -= rc_region_end(r) - rc_region_start(r);
	c->hits_retired += rc_load_relaxed(&r->hits);
	rc_region_mark_dead(r, ++c->kills);
	rc_region_list_insert_tail(slabs(c), &c->dead_list, r);
	batch->killed++;
}

/* After the lock is dropped: deregister the dead regions nobody holds. */
static void claim_killed(struct regcache *c, struct kill_batch *batch)
{
	struct rc_region_list claimed = RC_REGION_LIST_INIT;
	struct rc_region *r, *next;
	uint32_t killed_before;

	if (!batch->killed && !batch->scan_all)
		return;
	/* Only regions killed before our fence may be claimed by this scan:
	 * for one killed after it, an owner's increment may not be visible
	 * to us yet; its own killer's scan will see it. */
	pthread_mutex_lock(&c->lock);
	killed_before = c->kills;
	pthread_mutex_unlock(&c->lock);
	if (!rc_region_fence_counts()) {
		/* Counts cannot be trusted yet (region_refs.h): the
		 * dead stay registered until a later scan or last put. */
		kill_batch_init(batch);
		return;
	}
	/* Every reference taken before these kills is now visible to all:
	 * a later last put of one of them needs no membarrier of its own. */
	rc_store_release(&c->fenced_kills, killed_before);

	pthread_mutex_lock(&c->lock);
	for (r = rc_region_list_first(slabs(c), &c->dead_list); r; r = next) {
		uint32_t seq = rc_load_relaxed(&r->seq);

		next = rc_region_list_next(slabs(c), r);
		if (rc_region_refs(r) ||
		    (int32_t)(rc_load_relaxed(&r->kill_ticket) - killed_before) > 0 ||
		    !rc_region_claim(r, seq))
			continue;
		rc_region_list_remove(slabs(c), &c->dead_list, r);
		rc_region_list_insert_tail(slabs(c), &claimed, r);
	}
	pthread_mutex_unlock(&c->lock);
	kill_batch_init(batch);

	if (rc_region_list_empty(&claimed))
		return;
	/* Nobody else links claimed regions: their links hold still. */
	for (r = rc_region_list_first(slabs(c), &claimed); r;
	     r = rc_region_list_next(slabs(c), r))
		dereg(c, r);
	pthread_mutex_lock(&c->lock);
	while ((r = rc_region_list_first(slabs(c), &claimed))) {
		rc_region_list_remove(slabs(c), &claimed, r);
		rc_region_free_locked(&c->pool, r);
	}
	pthread_mutex_unlock(&c->lock);
}

static void check_fork(struct regcache *c);

/* The last put of a dead region (seq @seq) may have dropped its count to
 * zero: the thread that wins the claim deregisters it. */
static rc_noinline void claim_if_unused(struct regcache *c,
					struct rc_region *r, uint32_t seq)
{
	/* In a child that has not noticed the fork yet, this region and its
	 * registration are the parent's: notice first (the region turns
	 * free, and the claim below fails). */
	check_fork(c);
	/* Order our own count update before reading the others'. A taker's
	 * count may still sit in its store buffer until a membarrier() once
	 * the kill is visible; unless the killer's has run, run our own. */
	if ((int32_t)(rc_load_relaxed(&r->kill_ticket) -
		      rc_load_acquire(&c->fenced_kills)) <= 0)
		rc_fence_seqcst();
	else if (!rc_region_fence_counts())
		return;	/* claimed by a later scan */
	if (rc_region_refs(r) != 0 || !rc_region_claim(r, seq))
		return;
	dereg(c, r);
	pthread_mutex_lock(&c->lock);
	rc_region_list_remove(slabs(c), &c->dead_list, r);
	rc_region_free_locked(&c->pool, r);
	pthread_mutex_unlock(&c->lock);
}

/* After dropping a reference: the last one of a dead region claims it. */
static inline void after_put(struct regcache *c, struct rc_region *r)
{
	/* Acquire: claim_if_unused() reads the kill ticket written before
	 * seq went DEAD, and must not see an older one. */
	uint32_t seq = rc_load_acquire(&r->seq);

	if (rc_unlikely(rc_seq_state(seq) == RC_SEQ_DEAD))
		claim_if_unused(c, r, seq);
}

/* Drop a reference this thread took and still counts. */
static inline void region_put(struct regcache *c, struct rc_region *r)
{
	if (rc_unlikely(!rc_region_count_down_local(r)))
		rc_fetch_sub_seqcst(&r->shared_refs, 1);
	after_put(c, r);
}

/* Take a reference on @r, seen LIVE as @seq; false if it changed since. */
static inline bool region_get(struct regcache *c, struct rc_region *r,
			      uint32_t seq)
{
	if (rc_likely(rc_region_ref(r, seq)))
		return true;
	region_put(c, r);
	return false;
}

/* A hit served on @r: counted in the region, modulo 2^16 (a wrap carries
 * into the cache, once per 65536 hits of one region), which is also what
 * tells the LRU that it was used (lru.h). */
static inline void count_hit(struct regcache *c, struct rc_region *r)
{
	if (rc_unlikely(!rc_bump_relaxed(&r->hits, 1)))
		rc_fetch_add_relaxed(&c->hits_wrapped, (uint64_t)1 << 16);
}

/* Kill every live region that overlaps [start, end); how many. The loop of
 * the kernel's mn_itree_invalidate(): find the next before killing. */
static unsigned kill_overlaps_locked(struct regcache *c, uintptr_t start,
				     uintptr_t end, struct kill_batch *batch)
{
	struct rc_region *r = rc_index_first_overlap(&c->index, start, end);
	unsigned n = 0;

	while (r) {
		struct rc_region *next = rc_index_next_overlap(&c->index, r,
							       end);

		kill_locked(c, r, batch);
		n++;
		r = next;
	}
	return n;
}

/* ---------------------------------------------------------------------
 * Eviction
 * ------------------------------------------------------------------- */

static bool evict_one_locked(struct regcache *c, size_t *freed_bytes,
			     struct kill_batch *batch)
{
	struct rc_region *r = rc_lru_pick_idle(&c->lru);

	if (!r)
		return false;
	*freed_bytes += rc_region_end(r) - rc_region_start(r);
	kill_locked(c, r, batch);
	rc_fetch_add_relaxed(&c->st_evictions, 1);
	return true;
}

static void evict_over_limits_locked(struct regcache *c,
				     struct kill_batch *batch)
{
	size_t freed = 0;

	while ((c->nr_live > c->max_regions || c->live_bytes > c->max_bytes) &&
	       evict_one_locked(c, &freed, batch))
		;
}

/* Evict idle regions until @want_bytes and @want_regions are freed, or
 * none is left; how many. */
static size_t evict_idle_locked(struct regcache *c, size_t want_bytes,
				size_t want_regions, struct kill_batch *batch)
{
	size_t freed = 0, n = 0;

	while ((freed < want_bytes || n < want_regions) && c->nr_live &&
	       evict_one_locked(c, &freed, batch))
		n++;
	return n;
}

static size_t evict_idle(struct regcache *c, size_t want_bytes,
			 size_t want_regions)
{
	struct kill_batch batch;
	size_t n;

	kill_batch_init(&batch);
	pthread_mutex_lock(&c->lock);
	n = evict_idle_locked(c, want_bytes, want_regions, &batch);
	pthread_mutex_unlock(&c->lock);
	claim_killed(c, &batch);
	return n;
}

/* Evict idle regions worth @want_bytes and @want_regions: this cache's
 * first, else the other caches' (they share the budget, and the kernel's
 * limit). How many. Called without locks. */
static size_t make_room(struct regcache *c, size_t want_bytes,
			size_t want_regions)
{
	struct regcache *o;
	size_t n = evict_idle(c, want_bytes, want_regions);

	if (n || !c->pinned)
		return n;
	pthread_mutex_lock(&caches_lock);
	TAILQ_FOREACH(o, &caches, all_link)
		if (o != c && o->pinned &&
		    (n = evict_idle(o, want_bytes, want_regions)))
			break;
	pthread_mutex_unlock(&caches_lock);
	return n;
}

/* ---------------------------------------------------------------------
 * Draining the monitor
 * ------------------------------------------------------------------- */

struct sync_ctx {
	struct regcache *c;
	struct kill_batch *batch;
};

/* Forget [start, end): kill the live regions that overlap it and taint the
 * registrations in flight, which may have pinned the old pages. */
static unsigned invalidate_locked(struct regcache *c, uintptr_t start,
				  uintptr_t end, struct kill_batch *batch)
{
	struct rc_pending *p;
	unsigned n;

	TAILQ_FOREACH(p, &c->pending, link)
		if (p->start < end && start < p->end)
			p->tainted = true;
	n = kill_overlaps_locked(c, start, end, batch);
	if (n)
		rc_fetch_add_relaxed(&c->st_invalidations, n);
	return n;
}

static void invalidate_cb(void *arg, uintptr_t start, uintptr_t end)
{
	struct sync_ctx *s = arg;

	if (start == 0 && end == UINTPTR_MAX)
		rc_fetch_add_relaxed(&s->c->st_overflows, 1);
	invalidate_locked(s->c, start, end, s->batch);
}

/* Under the cache lock (or before the cache is shared), before
 * rc_monitor_cursor_init(): a hit that sees the new epoch (acquire) reads
 * these after it. One snapshot of the active backend: its caps, and the
 * incarnation whose watches this cache may index (get_slow()). */
static void update_monitor_caps(struct regcache *c)
{
	const struct rc_monitor_active *a = rc_monitor_active();
	bool can_cache = a && a->caps.can_cache;
	bool validates = a && a->caps.validate_hits;

	c->mon_incarnation = a ? a->incarnation : 0;
	rc_store_relaxed(&c->never_cache, !can_cache &&
					   !c->explicit_invalidate &&
					   !c->follows_page_tables);
	rc_store_relaxed(&c->probe_hits,
			 !c->follows_page_tables && validates &&
				 !(c->flags & REGCACHE_FLAG_NO_HIT_PROBE));
}

/* In a forked child: the registrations belong to the parent's device
 * context, so drop every region without deregistering it. */
static void forget_all_locked(struct regcache *c)
{
	struct rc_region *r;

	while ((r = rc_index_first_overlap(&c->index, 0, UINTPTR_MAX))) {
		rc_index_remove(&c->index, r);
		rc_lru_del(&c->lru, r);
		c->hits_retired += rc_load_relaxed(&r->hits);
		rc_region_forget_locked(&c->pool, r);
	}
	c->nr_live = 0;
	c->live_bytes = 0;
	while ((r = rc_region_list_first(slabs(c), &c->dead_list))) {
		rc_region_list_remove(slabs(c), &c->dead_list, r);
		rc_region_forget_locked(&c->pool, r);
	}
	while ((r = rc_region_list_first(slabs(c), &c->passthrough))) {
		rc_region_list_remove(slabs(c), &c->passthrough, r);
		rc_region_set_flags(r, rc_region_flags(r) |
					       RC_REGION_FORGOTTEN);
	}
	if (c->pinned)
		rc_budget_release(rc_load_relaxed(&c->cur_bytes));
	atomic_store_explicit(&c->cur_regions, 0, memory_order_relaxed);
	atomic_store_explicit(&c->cur_bytes, 0, memory_order_relaxed);
}

/* Apply every range the monitor published since we last looked. */
static void sync_locked(struct regcache *c, struct kill_batch *batch)
{
	struct sync_ctx s = { .c = c, .batch = batch };

	if (rc_monitor_current(&c->cursor))
		return;
	switch (rc_monitor_sync(&c->cursor, invalidate_cb, &s)) {
	case RC_MONITOR_SYNCED:
		return;
	case RC_MONITOR_FORKED:
		/* The regions are the parent's, and the pending records live
		 * on stacks of threads the child does not have. Forget them
		 * first, then let hits see the new epoch. */
		forget_all_locked(c);
		TAILQ_INIT(&c->pending);
		break;
	case RC_MONITOR_SWITCHED:
		/* Our registrations, but the backend that watched them is
		 * retired: everything changed. They are deregistered as their
		 * references drop; their watches needed no undo. */
		invalidate_cb(&s, 0, UINTPTR_MAX);
		break;
	}
	update_monitor_caps(c);
	rc_monitor_cursor_init(&c->cursor);
}

/* Pass-through paths skip the monitor, but must still notice a fork before
 * they touch a region that may be the parent's. */
static void check_fork(struct regcache *c)
{
	struct kill_batch batch;

	if (rc_likely(rc_load_relaxed(rc_mon.fork_guard) ==
		      rc_load_relaxed(&c->cursor.epoch)))
		return;
	kill_batch_init(&batch);
	pthread_mutex_lock(&c->lock);
	sync_locked(c, &batch);
	pthread_mutex_unlock(&c->lock);
	claim_killed(c, &batch);
}

/* ---------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------- */

static bool out_of_resources(int err)
{
	return err == -ENOMEM || err == -ENOSPC || err == -EAGAIN;
}

/* Keep a registration of @len bytes within the process's budget: -E2BIG
 * at once if it can never fit; else evict idle regions (this cache's,
 * then the others') until it fits or none is left, and let the kernel
 * decide. */
static int fit_budget(struct regcache *c, size_t len)
{
	if (!c->pinned)
		return 0;
	if (len > rc_budget_limit()) {
		rc_warn("registering %zu bytes: larger than the whole pinned-"
			"memory budget, %s; raise RLIMIT_MEMLOCK (ulimit -l) or "
			"$REGCACHE_MAX_BYTES, or register smaller pieces", len,
			rc_budget_source());
		return -E2BIG;
	}
	while (!rc_budget_fits(len) && make_room(c, len, 1))
		;
	return 0;
}

/* ops->reg, evicting idle regions and retrying when the device is out of
 * slots or locked memory: first the least recently used ones worth the
 * request, then all of them (this cache's, else the other caches'). */
static int reg_evicting(struct regcache *c, uintptr_t start, uintptr_t end,
			unsigned access, void **handle)
{
	int ret = fit_budget(c, end - start);

	if (ret)
		return ret;
	for (int attempt = 0;; attempt++) {
		size_t evicted;

		ret = c->ops.reg(c->ctx, (void *)start, end - start, access,
				 handle);
		if (!ret) {
			if (c->pinned)
				rc_budget_charge(end - start);
			rc_fetch_add_relaxed(&c->st_registrations, 1);
			rc_fetch_add_relaxed(&c->cur_regions, 1);
			rc_fetch_add_relaxed(&c->cur_bytes, end - start);
			return 0;
		}
		rc_fetch_add_relaxed(&c->st_reg_failures, 1);
		if (ret > 0 || ret < -4095) {
			rc_error("registrar returned %d, not 0 or -errno; "
				 "treating it as -EIO", ret);
			ret = -EIO;
		}
		if (!out_of_resources(ret) || attempt == 2) {
			rc_warn("registering %p+%zu failed: %s%s", (void *)start,
				(size_t)(end - start), strerror(-ret),
				ret == -EFAULT ? " (is all of it mapped, and "
						 "writable if the device writes "
						 "to it?)"
				: out_of_resources(ret)
					? " even after evicting idle regions "
					  "(raise RLIMIT_MEMLOCK, or put "
					  "regions sooner)"
					: "");
			return ret;
		}
		if (attempt == 0)
			evicted = make_room(c, end - start, 1);
		else
			evicted = make_room(c, SIZE_MAX, SIZE_MAX);
		rc_debug("registration of %zu bytes failed (%s); evicted %zu "
			 "idle regions, retrying", (size_t)(end - start),
			 strerror(-ret), evicted);
		if (!evicted && attempt == 1) {
			rc_warn("registering %p+%zu failed: %s and no idle "
				"region is left to evict; put regions sooner "
				"or raise the device's limits", (void *)start,
				(size_t)(end - start), strerror(-ret));
			return ret;
		}
	}
}

/* Serve a get without caching: register now, deregister at put. */
static int get_passthrough(struct regcache *c, uintptr_t start, uintptr_t end,
			   unsigned access, struct regcache_region **out)
{
	struct rc_region *r = region_alloc(c);
	void *handle;
	int ret;

	if (!r)
		return -ENOMEM;
	ret = reg_evicting(c, start, end, access, &handle);
	if (ret) {
		region_free(c, r);
		return ret;
	}
	/* Filled but never made live: no lookup can find it. */
	rc_region_fill(r, start, end, access, handle, RC_REGION_PASSTHROUGH);
	pthread_mutex_lock(&c->lock);
	rc_region_list_insert_tail(slabs(c), &c->passthrough, r);
	pthread_mutex_unlock(&c->lock);
	rc_fetch_add_relaxed(&c->st_uncached, 1);
	*out = (struct regcache_region *)r;
	return 0;
}

/* @r covers [start, end) with @access. */
static bool covers(const struct rc_region *r, uintptr_t start, uintptr_t end,
		   unsigned access)
{
	return rc_region_start(r) <= start && rc_region_end(r) >= end &&
	       !(access & ~rc_load_relaxed(&r->access));
}

/* The union of [*start, *end) and every live region it overlaps, the
 * lowest of which is @r, so that the new region can replace them all and
 * the index stays non-overlapping. */
static void widen_to_overlaps_locked(struct regcache *c, struct rc_region *r,
				     uintptr_t *start, uintptr_t *end,
				     unsigned *access)
{
	for (; r; r = rc_index_next_overlap(&c->index, r, *end)) {
		if (rc_region_start(r) < *start)
			*start = rc_region_start(r);
		if (rc_region_end(r) > *end)
			*end = rc_region_end(r);
		*access |= rc_load_relaxed(&r->access);
	}
}

/* Under the lock, just before indexing [start, end): replace the regions it
 * covers; false if one reaches beyond it (another thread won a race). */
static bool absorb_overlaps_locked(struct regcache *c, uintptr_t start,
				   uintptr_t end, unsigned access,
				   struct kill_batch *batch)
{
	struct rc_region *first = rc_index_first_overlap(&c->index, start, end);
	struct rc_region *r, *next;

	for (r = first; r; r = rc_index_next_overlap(&c->index, r, end))
		if (rc_region_start(r) < start || rc_region_end(r) > end ||
		    (rc_load_relaxed(&r->access) & ~access))
			return false;
	for (r = first; r; r = next) {
		next = rc_index_next_overlap(&c->index, r, end);
		kill_locked(c, r, batch);
		rc_fetch_add_relaxed(&c->st_merges, 1);
	}
	return true;
}

/*
 * A referenced hit on a monitor without synchronous publication
 * (userfaultfd): ask the monitor whether a change may be in flight. On
 * false the reference is dropped and the caller takes the slow path.
 *
 * ->validate() proves that every change begun before it was *published*,
 * not that this cache applied it: one published after this hit's
 * generation check was missed by it. So re-check the generation, and that
 * no other thread's sync killed the region meanwhile (its seq moved).
 */
static rc_noinline bool probe_hit(struct regcache *c, struct rc_region *r,
				  uint32_t seq)
{
	uintptr_t start = rc_region_start(r), end = rc_region_end(r);

	if (rc_monitor_validate(start, end)) {
		/* Anything unknown invalidates (docs/design.md). */
		regcache_invalidate(c, (void *)start, end - start);
		region_put(c, r);
		return false;
	}
	/* Acquire loads after validate's: pair with the publish in
	 * rc_monitor_publish() and the kill in kill_locked(). */
	if (!rc_monitor_current(&c->cursor) ||
	    rc_load_acquire(&r->seq) != seq) {
		region_put(c, r);
		return false;
	}
	return true;
}

/*
 * A miss registers in four steps, the pattern of the kernel's
 * mmu_interval_read_begin()/mmu_interval_read_retry() (design rule 2):
 *
 *   miss_read_begin()  under the lock, just after a sync: subscribe the
 *                      range, so that every change the cache applies from
 *                      here on taints the registration;
 *   miss_pin()         without the lock: watch the range with the monitor,
 *                      then pin it (ops->reg);
 *   miss_read_retry()  under the lock again: apply what was published
 *                      while we pinned, unsubscribe, and say whether what
 *                      was pinned may be stale;
 *   miss_publish_locked()  if not, index it.
 *
 * struct miss is one registration in flight between those steps.
 */
struct miss {
	struct rc_pending pending;	/* on c->pending from begin to retry */
	unsigned access;		/* of the registration */
	struct rc_monitor_ticket ticket;
	bool watched;			/* the monitor took a watch */
	bool unwatchable;		/* and nothing else sees a change */
};

/* Under the lock, after sync_locked() looked up [pstart, pend) and found
 * @first the lowest live region it overlaps, or none: the range and
 * access to register. @merge: the union of the request with every region
 * it overlaps, so that one region replaces them all and the index stays
 * non-overlapping; else, or when the union is too long for one region,
 * the request alone. */
static void miss_span_locked(struct regcache *c, struct miss *m,
			     struct rc_region *first, bool merge,
			     uintptr_t pstart, uintptr_t pend, unsigned access)
{
	uintptr_t start = pstart, end = pend;
	unsigned uaccess = access;

	if (merge)
		widen_to_overlaps_locked(c, first, &start, &end, &uaccess);
	if (end - start > RC_REGION_MAX_LEN) {
		start = pstart;
		end = pend;
		uaccess = access;
	}
	*m = (struct miss){ .pending = { .start = start, .end = end },
			    .access = uaccess };
}

/* Under the lock, with the monitor just drained (sync_locked()): subscribe
 * before pinning (design rule 2). From here on any published change to
 * the range that sync_locked() applies marks m->pending tainted
 * (invalidate_locked()). Drops the lock and claims what the sync killed. */
static void miss_read_begin(struct regcache *c, struct miss *m,
			    struct kill_batch *batch)
{
	TAILQ_INSERT_TAIL(&c->pending, &m->pending, link);
	pthread_mutex_unlock(&c->lock);
	claim_killed(c, batch);
}

/* Between begin and retry, without the lock: watch the range with the
 * monitor, then pin it. 0 and *handle, or the registrar's error;
 * -EOPNOTSUPP if nothing would see a change to it (m->unwatchable). */
static int miss_pin(struct regcache *c, struct miss *m, void **handle)
{
	uintptr_t start = m->pending.start, end = m->pending.end;

	m->watched = !c->follows_page_tables &&
		     rc_monitor_watch(start, end, &m->ticket) == 0;
	m->unwatchable = !m->watched && !c->explicit_invalidate &&
			 !c->follows_page_tables;
	if (m->unwatchable)
		return -EOPNOTSUPP;
	return reg_evicting(c, start, end, m->access, handle);
}

/* Leave the subscription without pinning (begin, then a failure before
 * miss_pin()). Takes and drops the lock. */
static void miss_abandon(struct regcache *c, struct miss *m)
{
	pthread_mutex_lock(&c->lock);
	TAILQ_REMOVE(&c->pending, &m->pending, link);
	pthread_mutex_unlock(&c->lock);
}

/*
 * After miss_pin(): take the lock, apply everything published while the
 * range was pinned and unsubscribe. True if the registration may be stale
 * and must not be indexed. Returns with the lock held; @batch holds what
 * the sync killed. @pinned: miss_pin() succeeded, so the insert will need
 * index nodes.
 */
static bool miss_read_retry(struct regcache *c, struct miss *m, bool pinned,
			    struct kill_batch *batch)
{
	kill_batch_init(batch);
	pthread_mutex_lock(&c->lock);
	/* Other misses may have used the spares region_alloc() left;
	 * the pending record still catches any change meanwhile. */
	while (pinned && !m->pending.tainted &&
	       rc_index_spares_wanted(&c->index)) {
		unsigned want = rc_index_spares_wanted(&c->index);
		bool room;

		pthread_mutex_unlock(&c->lock);
		room = index_top_up(c, want);
		pthread_mutex_lock(&c->lock);
		if (!room)
			m->pending.tainted = true;	/* out of memory */
	}
	/* Drain what was published while we pinned before leaving the
	 * pending list, so that such a change taints this registration.
	 * (No fork can be detected here: the thread in a get is not the one
	 * that forked.) */
	sync_locked(c, batch);
	/* Watched by another backend than the one this cache synced to (a
	 * switch, cf. rc_monitor_fall_back()): a retired one publishes
	 * nothing more, and an unsynced cache would hit without the new
	 * one's probes. */
	if (m->watched && m->ticket.incarnation != c->mon_incarnation)
		m->pending.tainted = true;
	TAILQ_REMOVE(&c->pending, &m->pending, link);
	return m->pending.tainted;
}

/* Undo miss_pin()'s watch, for a registration that is not kept. Without
 * the lock. */
static void miss_unwatch(const struct miss *m)
{
	if (m->watched && m->ticket.undo)
		rc_monitor_unwatch(m->pending.start, m->pending.end);
}

/* Under the lock, after miss_read_retry() found @nr, filled with @m's
 * range, fresh: index it in place of the regions it covers and hint
 * @start to it. False if a region reaches beyond it (another thread won a
 * race). */
static bool miss_publish_locked(struct regcache *c, const struct miss *m,
				struct rc_region *nr, uintptr_t start,
				struct kill_batch *batch)
{
	if (!absorb_overlaps_locked(c, m->pending.start, m->pending.end,
				    m->access, batch))
		return false;
	make_live_locked(c, nr);
	rc_index_hint_set(&c->index, start, nr);
	evict_over_limits_locked(c, batch);
	return true;
}

/* Under the lock, @r covering the request: take a reference, then drop the
 * lock. False if the probe rejected it (the reference is dropped). */
static bool hit_locked(struct regcache *c, struct rc_region *r,
		       uintptr_t start, struct kill_batch *batch)
{
	uint32_t seq = rc_load_relaxed(&r->seq);

	rc_index_hint_set(&c->index, start, r);
	/* Under the lock nobody can kill it: the ref holds. */
	region_get(c, r, seq);
	pthread_mutex_unlock(&c->lock);
	claim_killed(c, batch);
	if (rc_load_relaxed(&c->probe_hits) && !probe_hit(c, r, seq))
		return false;
	/* Counted once served: a rejected probe is no hit. */
	count_hit(c, r);
	return true;
}

/* Hit under the lock (the hint missed) or a miss that registers. */
static rc_noinline int get_slow(struct regcache *c, const void *addr,
				size_t len, unsigned access,
				struct regcache_region **out)
{
	uintptr_t start = (uintptr_t)addr, end = start + len;
	uintptr_t pstart = start & ~(page_size - 1);
	uintptr_t pend = (end + page_size - 1) & ~(page_size - 1);
	bool merge = true;
	int attempt = 0;

	if (!c || !addr || !out || !len || end < start || pend < end) {
		rc_warn("regcache_get(cache=%p, addr=%p, len=%zu, region=%p): "
			"%s; pass a cache, a buffer, a non-zero length and a "
			"range that does not wrap", (void *)c, addr, len,
			(void *)out,
			!c || !addr || !out ? "NULL argument" :
			!len ? "zero length" : "range wraps around");
		return -EINVAL;
	}
	*out = NULL;
	if (pend - pstart > RC_REGION_MAX_LEN) {
		rc_warn("regcache_get(cache=%p, addr=%p, len=%zu): longer than "
			"a region can be (%zu bytes); register smaller pieces",
			(void *)c, addr, len, (size_t)RC_REGION_MAX_LEN);
		return -E2BIG;
	}
	/* Memory the index cannot hold (above 2^48, only where asked for)
	 * is served uncached. */
	if (rc_load_relaxed(&c->never_cache) || pend > RC_INDEX_ADDR_LIMIT) {
		check_fork(c);
		return get_passthrough(c, pstart, pend, access, out);
	}

	/* Each pass that finds the range changed, or a rejected hit, is one
	 * attempt; retrying the request without its union is not. */
	while (attempt < RC_MISS_ATTEMPTS) {
		struct kill_batch batch;
		struct rc_region *r, *nr;
		struct miss m;
		void *handle;
		bool stale, indexed;
		int ret;

		kill_batch_init(&batch);
		pthread_mutex_lock(&c->lock);
		sync_locked(c, &batch);
		/* Regions are whole pages: one that covers [start, end) is
		 * the only one that overlaps its pages. */
		r = rc_index_first_overlap(&c->index, pstart, pend);
		if (r && covers(r, start, end, access)) {
			if (hit_locked(c, r, start, &batch)) {
				*out = (struct regcache_region *)r;
				return 0;
			}
			attempt++;
			continue;
		}
		miss_span_locked(c, &m, r, merge, pstart, pend, access);

		miss_read_begin(c, &m, &batch);
		nr = region_alloc(c);
		if (!nr) {
			miss_abandon(c, &m);
			return -ENOMEM;
		}
		ret = miss_pin(c, &m, &handle);
		stale = miss_read_retry(c, &m, ret == 0, &batch);
		if (ret) {
			rc_region_free_locked(&c->pool, nr);
			pthread_mutex_unlock(&c->lock);
			miss_unwatch(&m);
			if (m.pending.start != pstart || m.pending.end != pend) {
				/* The union may reach memory the request does
				 * not, or that the monitor cannot watch: try
				 * the request alone. */
				merge = false;
				continue;
			}
			if (m.unwatchable)
				/* The monitor cannot watch this memory. */
				return get_passthrough(c, pstart, pend, access,
						       out);
			return ret;
		}
		rc_region_fill(nr, m.pending.start, m.pending.end, m.access,
			       handle,
			       m.watched && m.ticket.undo ? RC_REGION_WATCHED
							  : 0);
		indexed = !stale &&
			  miss_publish_locked(c, &m, nr, start, &batch);
		pthread_mutex_unlock(&c->lock);
		claim_killed(c, &batch);
		if (indexed) {
			rc_fetch_add_relaxed(&c->st_misses, 1);
			*out = (struct regcache_region *)nr;
			return 0;
		}
		/* The range changed while we pinned it, or another thread
		 * indexed an overlapping region: start over. */
		dereg(c, nr);
		region_free(c, nr);
		attempt++;
	}
	rc_info("range %p+%zu keeps changing while it is registered; serving "
		"it uncached", addr, len);
	return get_passthrough(c, pstart, pend, access, out);
}

/* ---------------------------------------------------------------------
 * The hit path
 * ------------------------------------------------------------------- */

int regcache_get(struct regcache *c, const void *addr, size_t len,
		 unsigned access, struct regcache_region **out)
{
	uintptr_t start = (uintptr_t)addr, end = start + len, rstart;
	struct rc_region *r;
	uint32_t seq;

	if (rc_unlikely(!c || !out || !len || end < start ||
			!rc_monitor_current(&c->cursor)))
		return get_slow(c, addr, len, access, out);
	r = rc_index_hint(&c->index, start);
	seq = rc_load_acquire(&r->seq);
	rstart = rc_load_relaxed(&r->start);
	if (rc_unlikely(rc_seq_state(seq) != RC_SEQ_LIVE || start < rstart ||
			end - rstart > rc_region_len(r) ||
			(access & ~rc_load_relaxed(&r->access))))
		return get_slow(c, addr, len, access, out);
	if (rc_unlikely(!region_get(c, r, seq)))
		return get_slow(c, addr, len, access, out);
	if (rc_unlikely(rc_load_relaxed(&c->probe_hits)) &&
	    !probe_hit(c, r, seq))
		return get_slow(c, addr, len, access, out);
	count_hit(c, r);
	*out = (struct regcache_region *)r;
	return 0;
}

static rc_noinline void put_passthrough(struct regcache *c,
					struct rc_region *r)
{
	/* Held across fork: the registration is the parent's. */
	check_fork(c);
	if (rc_region_flags(r) & RC_REGION_FORGOTTEN)
		return;
	dereg(c, r);
	pthread_mutex_lock(&c->lock);
	rc_region_list_remove(slabs(c), &c->passthrough, r);
	rc_region_free_locked(&c->pool, r);
	pthread_mutex_unlock(&c->lock);
}

/*
 * A put that this thread's slots do not count: from a thread other than the
 * getter, of a get that found its slot taken, or a second put. Only a second
 * put can find no reference at all. Reading shared_refs first makes every
 * slot count whose hand-off put it includes visible to the slot scan; equal
 * values around the scan make the sum one state of the counts. A false
 * "second put" would leave a reference behind (a leak, reported by
 * regcache_destroy()), never drop one too many.
 */
static rc_noinline bool put_shared(struct regcache *c, struct rc_region *r)
{
	for (int tries = 0; tries < 3; tries++) {
		uint32_t before = atomic_load(&r->shared_refs);
		uint32_t slots = rc_region_slot_refs(r);

		if (atomic_load(&r->shared_refs) != before)
			continue;
		if (slots + before == 0) {
			rc_warn("regcache_put(cache=%p, region=%p): nobody holds "
				"this region (a second put?); ignored",
				(void *)c, (void *)r);
			return false;
		}
		break;
	}
	rc_fetch_sub_seqcst(&r->shared_refs, 1);
	return true;
}

/* Pass-through, forgotten across fork, or not a held region of @c. */
static rc_noinline void put_unusual(struct regcache *c, struct rc_region *r)
{
	uint16_t tag_flags = rc_load_relaxed(&r->tag_flags);
	unsigned flags = tag_flags & ~RC_REGION_TAG_MASK;

	if ((tag_flags & RC_REGION_TAG_MASK) != c->tag) {
		rc_warn("regcache_put(cache=%p, region=%p): the region belongs "
			"to another cache; ignored", (void *)c, (void *)r);
		return;
	}
	/* Held across fork: inert, never deregistered or reused. */
	if (flags & RC_REGION_FORGOTTEN)
		return;
	if (flags & RC_REGION_PASSTHROUGH) {
		put_passthrough(c, r);
		return;
	}
	rc_warn("regcache_put(cache=%p, region=%p): the region is not held "
		"(already put and deregistered?); ignored", (void *)c,
		(void *)r);
}

void regcache_put(struct regcache *c, struct regcache_region *region)
{
	struct rc_region *r = (struct rc_region *)region;

	if (rc_unlikely(!c || !r)) {
		if (r)
			rc_warn("regcache_put(NULL, %p): pass the cache the "
				"region came from", (void *)r);
		return;
	}
	/* A held cached region of this cache is LIVE or DEAD: nobody can
	 * claim it while it is held. */
	if (rc_unlikely((rc_load_relaxed(&r->tag_flags) & ~RC_REGION_WATCHED) !=
			c->tag ||
			rc_seq_state(rc_load_relaxed(&r->seq)) > RC_SEQ_DEAD)) {
		put_unusual(c, r);
		return;
	}
	if (rc_unlikely(!rc_region_count_down_local(r)) && !put_shared(c, r))
		return;
	after_put(c, r);
}

/* ---------------------------------------------------------------------
 * Region accessors
 * ------------------------------------------------------------------- */

void *regcache_region_handle(const struct regcache_region *region)
{
	return region ? ((const struct rc_region *)region)->handle : NULL;
}

void *regcache_region_addr(const struct regcache_region *region)
{
	struct rc_region *r = (struct rc_region *)region;

	return r ? (void *)rc_load_relaxed(&r->start) : NULL;
}

size_t regcache_region_len(const struct regcache_region *region)
{
	struct rc_region *r = (struct rc_region *)region;

	return r ? rc_region_len(r) : 0;
}

/* ---------------------------------------------------------------------
 * Control
 * ------------------------------------------------------------------- */

int regcache_invalidate(struct regcache *c, const void *addr, size_t len)
{
	uintptr_t start = (uintptr_t)addr, end = start + len;
	struct kill_batch batch;
	unsigned n;

	if (!c || !len || end < start) {
		rc_warn("regcache_invalidate(cache=%p, addr=%p, len=%zu): %s",
			(void *)c, addr, len,
			!c ? "NULL cache" : !len ? "zero length" :
						   "range wraps around");
		return -EINVAL;
	}
	kill_batch_init(&batch);
	pthread_mutex_lock(&c->lock);
	sync_locked(c, &batch);
	n = invalidate_locked(c, start, end, &batch);
	pthread_mutex_unlock(&c->lock);
	claim_killed(c, &batch);
	return (int)n;
}

void regcache_flush(struct regcache *c)
{
	struct kill_batch batch;
	struct rc_region *r, *next;
	struct rc_pending *p;

	if (!c)
		return;
	kill_batch_init(&batch);
	pthread_mutex_lock(&c->lock);
	sync_locked(c, &batch);
	/* A registration in flight may be of memory the caller is about to
	 * reuse: do not index it. */
	TAILQ_FOREACH(p, &c->pending, link)
		p->tainted = true;
	for (r = rc_index_first_overlap(&c->index, 0, UINTPTR_MAX); r; r = next) {
		next = rc_index_next_overlap(&c->index, r, UINTPTR_MAX);
		if (!rc_region_refs(r))
			kill_locked(c, r, &batch);
	}
	pthread_mutex_unlock(&c->lock);
	/* Also collects dead regions whose last put raced with their kill. */
	kill_batch_scan_all(&batch);
	claim_killed(c, &batch);
}

/* ---------------------------------------------------------------------
 * Lifetime
 * ------------------------------------------------------------------- */

int rc_cache_create(const struct regcache_params *params,
		    const struct rc_registrar *reg, struct regcache **cache)
{
	struct regcache *c;
	struct rc_region *r;
	int ret;

	if (!params || !params->ops || !params->ops->reg ||
	    !params->ops->dereg || !cache ||
	    (params->flags & ~(REGCACHE_FLAG_EXPLICIT_INVALIDATE |
			       REGCACHE_FLAG_NO_HIT_PROBE))) {
		rc_warn("regcache_create: %s",
			!params || !cache ? "params and cache must not be NULL"
			: !params->ops || !params->ops->reg ||
					!params->ops->dereg
				? "params->ops with both reg and dereg is required"
				: "unknown bits in params->flags");
		return -EINVAL;
	}
	if (!page_size)
		page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	rc_fork_enable(RC_FORK_CACHES, &caches_fork);
	c = aligned_alloc(rc_cacheline, (sizeof(*c) + rc_cacheline - 1) &
						~(size_t)(rc_cacheline - 1));
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->ops = *params->ops;
	c->ctx = params->ctx;
	c->flags = params->flags;
	c->explicit_invalidate =
		!!(params->flags & REGCACHE_FLAG_EXPLICIT_INVALIDATE);
	if (reg)
		c->registrar = *reg;
	c->follows_page_tables = c->registrar.follows_page_tables;
	c->pinned = !c->follows_page_tables;
	c->max_regions = params->max_regions ? params->max_regions
					     : rc_env_size(RC_ENV_MAX_REGIONS);
	if (!c->max_regions)
		c->max_regions = RC_DEFAULT_MAX_REGIONS;
	/* Without a limit of its own, a cache is bounded by the process's
	 * budget, which every cache shares (budget.h). */
	c->max_bytes = params->max_bytes ? params->max_bytes : SIZE_MAX;
	pthread_mutex_init(&c->lock, NULL);
	rc_region_list_init(&c->dead_list);
	rc_region_list_init(&c->passthrough);
	TAILQ_INIT(&c->pending);
	ret = rc_region_pool_init(&c->pool, c->max_regions);
	if (ret)
		goto err_free;
	rc_lru_init(&c->lru, slabs(c));
	c->tag = c->pool.tag;
	ret = rc_index_init(&c->index, c->max_regions, &c->pool.table);
	if (ret)
		goto err_pool;
	/* The first slab of regions now, not at the first miss: a miss of a
	 * small cache then maps nothing of ours, so an address the caller
	 * has just unmapped cannot come back as our memory before the
	 * registrar looks at it. */
	r = region_alloc(c);
	if (!r) {
		ret = -ENOMEM;
		goto err_index;
	}
	region_free(c, r);
	ret = rc_monitor_acquire();
	if (ret)
		goto err_index;
	rc_monitor_cursor_init(&c->cursor);
	update_monitor_caps(c);
	if (c->registrar.max_regions &&
	    c->max_regions > c->registrar.max_regions)
		c->max_regions = c->registrar.max_regions;
	rc_info("cache %p: monitor %s, max %zu regions%s; pinned-memory "
		"budget of the process %s%s", (void *)c,
		rc_monitor_active() ? rc_monitor_active()->ops.name : "none",
		c->max_regions,
		c->max_bytes != SIZE_MAX ? ", limit of its own" : "",
		c->pinned ? rc_budget_source() : "not charged (not pinned)",
		rc_load_relaxed(&c->never_cache) ? ", pass-through" : "");
	pthread_mutex_lock(&caches_lock);
	TAILQ_INSERT_TAIL(&caches, c, all_link);
	pthread_mutex_unlock(&caches_lock);
	*cache = c;
	return 0;

err_index:
	rc_index_fini(&c->index);
err_pool:
	rc_region_pool_fini(&c->pool);
err_free:
	pthread_mutex_destroy(&c->lock);
	free(c);
	return ret;
}

int regcache_create(const struct regcache_params *params,
		    struct regcache **cache)
{
	return rc_cache_create(params, NULL, cache);
}

void *rc_cache_registrar_priv(const struct regcache *c,
			      void (*destroy)(void *priv))
{
	return c && destroy && c->registrar.destroy == destroy ?
		       c->registrar.priv : NULL;
}

void regcache_destroy(struct regcache *c)
{
	struct kill_batch batch;
	struct rc_region *r;
	size_t held = 0;

	if (!c)
		return;
	pthread_mutex_lock(&caches_lock);
	TAILQ_REMOVE(&caches, c, all_link);
	pthread_mutex_unlock(&caches_lock);
	kill_batch_init(&batch);
	pthread_mutex_lock(&c->lock);
	sync_locked(c, &batch);
	kill_overlaps_locked(c, 0, UINTPTR_MAX, &batch);
	pthread_mutex_unlock(&c->lock);
	kill_batch_scan_all(&batch);
	claim_killed(c, &batch);

	/* What is left is held by callers: report, then deregister anyway. */
	while ((r = rc_region_list_first(slabs(c), &c->dead_list))) {
		rc_region_list_remove(slabs(c), &c->dead_list, r);
		held++;
		dereg(c, r);
	}
	while ((r = rc_region_list_first(slabs(c), &c->passthrough))) {
		rc_region_list_remove(slabs(c), &c->passthrough, r);
		held++;
		dereg(c, r);
	}
	if (held)
		rc_warn("cache %p destroyed while %zu regions were still held "
			"(missing regcache_put); they were deregistered and "
			"their pointers are now invalid", (void *)c, held);
	rc_monitor_release();
	rc_index_fini(&c->index);
	rc_region_pool_fini(&c->pool);
	if (c->registrar.destroy)
		c->registrar.destroy(c->registrar.priv);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
