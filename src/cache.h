/* SPDX-License-Identifier: MIT */
/*
 * One cache: the index, the LRU and the region pool under one lock, and the
 * monitor cursor. cache.c is the only file that changes them together;
 * stats.c reads them, the registrars set their private data.
 */
#ifndef RC_CACHE_H
#define RC_CACHE_H

#include <bsd/sys/queue.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <regcache.h>

#include "cache_registrar.h"
#include "base/compat.h"
#include "index.h"
#include "lru.h"
#include "monitor_core.h"
#include "region.h"
#include "region_pool.h"
#include "region_refs.h"

/* A registration in flight: sync marks it tainted if a published range
 * overlaps it before it is indexed (docs/design.md). */
struct rc_pending {
	uintptr_t start, end;
	bool tainted;
	TAILQ_ENTRY(rc_pending) link;
};
TAILQ_HEAD(rc_pending_list, rc_pending);

/**
 * struct regcache - one cache
 *
 * Invariants (under lock):
 *   the regions in index   == the regions on lru == the LIVE regions
 *   nr_live                == lru.nr
 *   live_bytes             == sum of (end - start) over live regions
 *   regions on dead_list are DEAD and registered
 *   regions on passthrough are held, registered, never indexed
 */
struct regcache {
	/* Read by every hit: cursor, index hints, flags. */
	struct rc_monitor_cursor cursor;
	struct rc_index index;		/* hint fields first; tree under lock */
	_Atomic bool probe_hits;	/* written under the lock at a sync */
	_Atomic bool never_cache;
	bool explicit_invalidate;
	bool follows_page_tables;	/* rc_registrar.follows_page_tables */
	uint32_t tag;			/* pool.tag, next to what a put reads */

	bool pinned;			/* charged to the budget (budget.h) */
	struct regcache_ops ops;
	void *ctx;
	size_t max_regions;
	size_t max_bytes;
	unsigned flags;
	struct rc_registrar registrar;	/* zeroed for regcache_create() */
	TAILQ_ENTRY(regcache) all_link;	/* cache.c:caches */

	pthread_mutex_t lock __attribute__((aligned(rc_cacheline)));
	struct rc_lru lru;
	struct rc_region_list dead_list;
	struct rc_region_list passthrough;	/* held pass-through regions */
	struct rc_pending_list pending;
	size_t nr_live;
	size_t live_bytes;
	uint64_t hits_retired;		/* hits of regions no longer live */
	_Atomic uint64_t hits_wrapped;	/* 2^16 per wrap of a region's hits */
	uint32_t kills;			/* kills so far: the kill tickets */
	uint64_t mon_incarnation;	/* of the backend at the last re-read
					   of its caps (update_monitor_caps) */
	_Atomic uint32_t fenced_kills;	/* kills before the last completed
					   rc_region_fence_counts() */
	struct rc_region_pool pool;

	/* Statistics updated outside the lock too. */
	_Atomic uint64_t st_misses, st_uncached, st_registrations,
		st_deregistrations, st_invalidations, st_evictions, st_merges,
		st_overflows, st_reg_failures;
	_Atomic uint64_t cur_regions, cur_bytes;
};


#endif /* RC_CACHE_H */
