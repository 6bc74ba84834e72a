/* SPDX-License-Identifier: MIT */
/*
 * The contract between the process-wide monitor (src/monitor_core.c) and its
 * backends (src/monitor/{regcached,bpf,uffd,none}.c).
 *
 * A backend learns from the kernel that pages behind some virtual range have
 * changed (unmap, remap, madvise, ...) and *publishes* that range with
 * rc_monitor_publish(). The core owns the queue, the generation word that
 * every cache's hit path reads, fork detection and the list of subscribers.
 *
 * Only files in src/monitor/ include <linux/userfaultfd.h> or the bpf headers.
 * monitor_core.c branches on the capabilities below, never on the backend's name.
 */
#ifndef RC_MONITOR_BACKEND_H
#define RC_MONITOR_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "../base/compat.h"

struct rc_monitor;

/**
 * struct rc_monitor_caps - what a backend promises; set by ->start()
 * @can_cache:     ->watch() can succeed, so regions may be cached at all.
 * @synchronous:   a range is published before the syscall that changed it
 *                 returns *and* before another thread can map the address
 *                 again (bpf). When false (userfaultfd) there is a window.
 * @validate_hits: every hit must call ->validate() to close that window,
 *                 unless the cache was created with REGCACHE_FLAG_NO_HIT_PROBE.
 */
struct rc_monitor_caps {
	bool can_cache;
	bool synchronous;
	bool validate_hits;
};

/**
 * struct rc_monitor_ops - one backend; kept sorted as it is called
 *
 * Preconditions common to every op: never called from the backend's own
 * thread; never called with a cache lock held except ->validate() and
 * ->pull(), which must therefore never allocate, free, unmap or block on
 * anything the unmapping path may hold.
 *
 * @name:     "regcached", "bpf", "userfaultfd" or "none".
 * @start:    begin monitoring this process. Called once, with the monitor
 *            lock held, before any other op. Sets mon->caps, may point
 *            mon->gen at its own generation word (the hit path reads
 *            *mon->gen with one acquire load; it must move *after* the
 *            ranges that caused it are visible to ->pull()/the queue) and
 *            may set mon->backend. Returns 0, or -errno to let the next
 *            backend try; it must then leave nothing behind and log at info
 *            level why it is unavailable.
 * @watch:    subscribe to [start, end) (page-aligned) *before* the cache pins
 *            it. 0: from now on every change to those pages is published.
 *            -errno: the range cannot be watched (file mapping, SysV shm,
 *            owned by another userfaultfd, ...); the cache serves it
 *            pass-through. Calls nest: watch/unwatch pairs are balanced per
 *            range, and the backend coalesces as it likes. Thread-safe.
 * @unwatch:  the cache has deregistered a region it had watched with the
 *            same range. Thread-safe. NULL when watches need no undoing;
 *            only such a backend may hand over to another
 *            (rc_monitor_fall_back()).
 * @pull:     move events that the kernel queued (e.g. a BPF ring buffer)
 *            into the queue with rc_monitor_publish(). Called with the
 *            monitor lock held, so publishing is single-producer. NULL when
 *            the backend publishes from its own thread.
 * @validate: called on a hit when caps.validate_hits, after the region was
 *            found and referenced. 0: no change to [start, end) can be in
 *            flight. -errno: unknown; the cache invalidates the region and
 *            takes the miss path. Thread-safe, lock-free, must not block.
 * @forked:   called in a child after fork, with the monitor lock held,
 *            before ->start() runs again in the child. Drop what the child
 *            inherited without touching the parent (close fds, unmap), and
 *            never call the kernel in a way that changes the parent's state.
 * @stop:     stop monitoring: unregister, detach, join the thread, close.
 *            Must not hang even if other threads are still unmapping.
 *            Called with the monitor lock held.
 * @wake:     a thread is about to sleep in rc_monitor_wait() (@on), or has
 *            woken (!@on). Arming sets *@fd to a descriptor that becomes
 *            readable when a change is reported without reaching
 *            rc_monitor_publish() (-1: none), and returns 0 once every
 *            change whose report the waiter's next look at the generation
 *            can miss will make *@fd readable; -errno when the backend
 *            cannot wake a sleeper. NULL: every change is published from
 *            the backend's own thread (or never), which wakes the sleeper.
 *            Called with the monitor lock held.
 */
struct rc_monitor_ops {
	const char *name;
	int (*start)(struct rc_monitor *mon);
	int (*watch)(struct rc_monitor *mon, uintptr_t start, uintptr_t end);
	void (*unwatch)(struct rc_monitor *mon, uintptr_t start, uintptr_t end);
	void (*pull)(struct rc_monitor *mon);
	int (*validate)(struct rc_monitor *mon, uintptr_t start, uintptr_t end);
	void (*forked)(struct rc_monitor *mon);
	void (*stop)(struct rc_monitor *mon);
	int (*wake)(struct rc_monitor *mon, bool on, int *fd);
};

/* Queue of published ranges; a power of two. A subscriber that falls more
 * than this far behind invalidates everything (design rule 5). */
#define RC_QUEUE_SIZE 4096u

struct rc_queue_slot {
	_Atomic uint64_t seq;	/* index + 1 once written; 0 while writing */
	_Atomic uintptr_t start;
	_Atomic uintptr_t end;
};

/**
 * struct rc_monitor - the process-wide monitor (the library's only global)
 *
 * Invariants:
 *   queue_head == number of ranges ever published in this epoch
 *   *gen moves after every publish (gen == &queue_head unless a backend
 *   supplies its own word)
 *   *fork_guard == epoch, except in a forked child that has not recovered
 *   yet, where the kernel zeroed it (MADV_WIPEONFORK), and while
 *   rc_monitor_fall_back() runs (it moves both twice)
 */
struct rc_monitor {
	/* Read on every hit, written rarely: keep on its own line. gen is
	 * re-pointed when a backend starts (and after fork) while other
	 * threads may read it: an atomic pointer, read relaxed (the word it
	 * points to is read with acquire). */
	_Atomic(_Atomic uint64_t *) gen;
	_Atomic uint64_t *fork_guard;
	_Atomic uint64_t epoch;
	struct rc_monitor_caps caps;	/* written by ->start() only */
	/* The active backend's ops inside its struct rc_monitor_active
	 * (../monitor_core.h); re-pointed at a switch while others read it. */
	const struct rc_monitor_ops *_Atomic ops;
	void *backend;

	_Atomic uint64_t queue_head __attribute__((aligned(rc_cacheline)));
	struct rc_queue_slot queue[RC_QUEUE_SIZE];
};

/**
 * rc_monitor_publish - tell every cache that [start, end) changed
 *
 * Single producer: call it from the backend's thread or from ->pull() only.
 * Never allocates, locks or blocks. The range need not be page-aligned;
 * [0, UINTPTR_MAX) means "everything" (use it for overflows and drops).
 */
rc_hidden void rc_monitor_publish(struct rc_monitor *mon, uintptr_t start,
				  uintptr_t end);

/** rc_monitor_publish_all - publish "everything changed" (drop, overflow) */
rc_hidden void rc_monitor_publish_all(struct rc_monitor *mon);

/**
 * rc_monitor_fall_back - the active backend @from gives up for good
 * @why: for the log line ("the daemon is gone for 5000 ms", ...).
 *
 * Starts the next backend of the default order that works and can cache
 * ("none" is never taken) and makes it the active one; @from is retired
 * (stopped at the last release, or dropped in a forked child). Returns
 * true then, and every cache and subscriber notices RC_MONITOR_SWITCHED
 * at its next sync; false if nothing changed, or if no such backend
 * starts, in which case @from stays active (and may ask again later).
 * Only a backend without ->unwatch and without a thread of its own (it
 * publishes from ->pull only) may ask.
 * Does nothing if @from is no longer the active backend. Takes the monitor
 * lock and starts a backend: call it with no cache lock and none of the
 * backend's own locks held (a subscriber's lock is taken before the
 * monitor lock anyway).
 */
rc_hidden bool rc_monitor_fall_back(const struct rc_monitor_ops *from,
				    const char *why);

struct rc_monitor_cursor;

/**
 * rc_monitor_wait - sleep until @cur is not current, or @timeout_ms (-1:
 * no limit) passed. 0, -ETIMEDOUT, -EOPNOTSUPP when the backend cannot
 * wake a sleeper, or another -errno. For regcache_subscriber_wait().
 */
rc_hidden int rc_monitor_wait(const struct rc_monitor_cursor *cur,
			      int timeout_ms);

extern rc_hidden const struct rc_monitor_ops rc_monitor_none_ops;
extern rc_hidden const struct rc_monitor_ops rc_monitor_uffd_ops;
extern rc_hidden const struct rc_monitor_ops rc_monitor_bpf_ops;
extern rc_hidden const struct rc_monitor_ops rc_monitor_regcached_ops;

#endif /* RC_MONITOR_BACKEND_H */
