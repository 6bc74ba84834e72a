/* SPDX-License-Identifier: MIT */
/*
 * The core of the process-wide monitor (monitor_core.c), whatever the
 * backend, as the caches see it: subscribe before pinning, check one
 * generation word per hit, drain published ranges when it moved. The
 * public subscriber API, include/regcache/monitor.h, is built on it
 * (subscriber.c).
 */
#ifndef RC_MONITOR_CORE_H
#define RC_MONITOR_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/compat.h"
#include "monitor/backend.h"

extern rc_hidden struct rc_monitor rc_mon;

/**
 * struct rc_monitor_cursor - how far one cache has read the monitor
 * @gen_seen: *rc_mon.gen when the cache last drained.
 * @pos:      queue index of the next range to read.
 * @epoch:    rc_mon.epoch at the last drain; differs after a fork or a
 *            backend switch (and then from *rc_mon.fork_guard, which the
 *            hit path checks).
 */
struct rc_monitor_cursor {
	_Atomic uint64_t gen_seen;	/* read by the hit path of any thread */
	uint64_t pos;
	_Atomic uint64_t epoch;		/* read by the hit path of any thread */
};

/* Called for each published range; [0, UINTPTR_MAX) means everything. */
typedef void rc_invalidate_fn(void *arg, uintptr_t start, uintptr_t end);

/* One cache more (the first one starts a backend) / one less (the last stops
 * it). acquire returns 0 or -errno; it never fails for lack of a backend. */
rc_hidden int rc_monitor_acquire(void);
rc_hidden void rc_monitor_release(void);

/**
 * rc_monitor_current - the hit path's check: nothing published since the
 * cache last drained, and this is not a forked child.
 *
 * The acquire load pairs with the backend's publish-then-bump (the queue
 * slot, or the BPF ring record, is written before the generation moves), so
 * a cache that sees the old value has missed no range that changed before
 * this thread's own later mmap could return the same address.
 */
static inline bool rc_monitor_current(const struct rc_monitor_cursor *cur)
{
	/* The guard word holds the monitor's epoch: zero in a child that has
	 * not recovered yet, and a new value once one cache has recovered, so
	 * every other cache of the child notices too. */
	return rc_load_acquire(rc_load_relaxed(&rc_mon.gen)) == rc_load_acquire(&cur->gen_seen) &&
	       rc_load_relaxed(rc_mon.fork_guard) ==
		       rc_load_acquire(&cur->epoch);
}

/* What rc_monitor_sync() found. */
enum rc_monitor_sync_result {
	RC_MONITOR_SYNCED,	/* ranges applied, cursor advanced */
	RC_MONITOR_FORKED,	/* a fork since the cursor's last sync */
	RC_MONITOR_SWITCHED,	/* another backend took over (no fork) */
};

/**
 * rc_monitor_sync - apply every range published since @cur last looked
 *
 * Calls @fn for each range (or once with everything after an overflow) and
 * advances @cur. Without touching @cur it returns
 *  - RC_MONITOR_FORKED when the process forked since the last sync: the
 *    caller must forget every region *without* deregistering it (the
 *    registrations belong to the parent);
 *  - RC_MONITOR_SWITCHED when another backend took over (rc_monitor_fall_
 *    back()): the caller must treat everything as changed, kill every
 *    region (deregistering them as usual) and re-read the caps;
 * and only then call rc_monitor_cursor_init(@cur).
 * Called with the cache lock held; takes the monitor lock only to pull.
 */
rc_hidden enum rc_monitor_sync_result
rc_monitor_sync(struct rc_monitor_cursor *cur, rc_invalidate_fn *fn, void *arg);

/* Start a cursor at the present (nothing to drain yet); publishes it to
 * the hit path. */
rc_hidden void rc_monitor_cursor_init(struct rc_monitor_cursor *cur);

/**
 * struct rc_monitor_active - a started backend as its callers see it
 * @ops:         its ops, optional ones filled with stubs (first: rc_mon.ops
 *               points here);
 * @caps:        what it promised at ->start();
 * @incarnation: a number no other start or switch of this process had;
 * @backend:     its ops as registered.
 * Never written while rc_mon.ops points at it, so a reader that loaded
 * rc_mon.ops with acquire reads one consistent backend.
 */
struct rc_monitor_active {
	struct rc_monitor_ops ops;
	struct rc_monitor_caps caps;
	uint64_t incarnation;
	const struct rc_monitor_ops *backend;
};

/* The active backend, or NULL when none is started. */
static inline const struct rc_monitor_active *rc_monitor_active(void)
{
	return (const struct rc_monitor_active *)atomic_load_explicit(
		&rc_mon.ops, memory_order_acquire);
}

static inline bool rc_monitor_validates_hits(void)
{
	const struct rc_monitor_active *a = rc_monitor_active();

	return a && a->caps.validate_hits;
}

/**
 * struct rc_monitor_ticket - who took a watch
 * @incarnation: the incarnation of the backend that took it;
 * @undo:        it must be undone with rc_monitor_unwatch(). False for a
 *               backend without ->unwatch, which is the only kind that may
 *               ever hand over to another (rc_monitor_fall_back()): so an
 *               unwatch always reaches the backend that took the watch.
 */
struct rc_monitor_ticket {
	uint64_t incarnation;
	bool undo;
};

/* Thin wrappers over the backend ops; see monitor/backend.h. On 0,
 * rc_monitor_watch() fills @ticket. */
rc_hidden int rc_monitor_watch(uintptr_t start, uintptr_t end,
			       struct rc_monitor_ticket *ticket);
rc_hidden void rc_monitor_unwatch(uintptr_t start, uintptr_t end);
rc_hidden int rc_monitor_validate(uintptr_t start, uintptr_t end);

#endif /* RC_MONITOR_CORE_H */
