/* SPDX-License-Identifier: MIT */
/*
 * regcache/monitor.h: the process-wide monitor for caches that regcache does
 * not own.
 *
 * Another registration cache (UCX's ucs_rcache, libfabric's MR cache, a
 * middleware's own) can take its invalidations from regcache's monitor
 * instead of from malloc/mmap hooks. A subscriber reads every range the
 * monitor publishes, in order, exactly once:
 *
 *	regcache_subscriber_create(&sub);
 *	...
 *	regcache_subscriber_watch(sub, buf, len);	// before pinning buf
 *	pin(buf, len);
 *	...
 *	if (!regcache_subscriber_current(sub))		// on every lookup
 *		regcache_subscriber_sync(sub, forget_range, cache);
 *
 * What a subscriber is told holds the same guarantee as regcache's own
 * caches: once a thread's munmap/mremap/madvise (libc, raw syscall or
 * io_uring) of a watched range has returned, regcache_subscriber_current()
 * is false in every thread until a sync has reported that range, provided
 * regcache_subscriber_caps() has REGCACHE_MONITOR_SYNCHRONOUS. Without it
 * (userfaultfd), a range changed by another thread can arrive late; closing
 * that window takes regcache_subscriber_check() on every hit.
 */
#ifndef REGCACHE_MONITOR_H
#define REGCACHE_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <regcache.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One reader of the monitor's invalidations. Opaque. */
struct regcache_subscriber;

/**
 * regcache_changed_fn - called once per changed range by a sync
 * @arg:   the sync's @arg.
 * @start: first byte whose pages may have changed.
 * @end:   one past the last. [0, UINTPTR_MAX) means everything: the
 *         subscriber fell too far behind, or the process forked.
 *
 * Ranges need not be page-aligned and may cover memory the subscriber never
 * watched. Called without any regcache lock held except the subscriber's
 * own, so it may call into the cache it feeds; it must not call
 * regcache_subscriber_sync() on the same subscriber.
 */
typedef void regcache_changed_fn(void *arg, uintptr_t start, uintptr_t end);

/** The monitor can report changes at all (false for "none"). */
#define REGCACHE_MONITOR_CAN_CACHE (1u << 0)
/** A range is published before the syscall that changed it returns, and
 * before another thread can map the address again (bpf). */
#define REGCACHE_MONITOR_SYNCHRONOUS (1u << 1)
/** Hits must call regcache_subscriber_check() to close the cross-thread
 * window of an asynchronous monitor (userfaultfd). */
#define REGCACHE_MONITOR_CHECK_HITS (1u << 2)

/**
 * regcache_subscriber_create - start reading the monitor's invalidations
 * @sub: out: the subscriber, positioned at the present (nothing to sync).
 *
 * The first subscriber or cache in the process starts the monitor
 * ($REGCACHE_MONITOR, default auto: regcached, then bpf, then userfaultfd,
 * then none), which takes up to ~100 ms for bpf.
 *
 * Return: 0; -EINVAL if @sub is NULL; -ENOMEM; or the error that kept the
 * monitor from starting its fork detection (see regcache_create()).
 * Context: thread-safe. May start the monitor thread.
 */
int regcache_subscriber_create(struct regcache_subscriber **sub);

/**
 * regcache_subscriber_destroy - stop reading; the last user stops the monitor
 * @sub: the subscriber; NULL is ignored.
 *
 * Context: must not race with other calls on @sub.
 */
void regcache_subscriber_destroy(struct regcache_subscriber *sub);

/**
 * regcache_subscriber_caps - what the running monitor promises
 * @sub: the subscriber.
 *
 * Return: REGCACHE_MONITOR_* bits; 0 when the monitor is "none" (then
 * nothing will ever be reported, and nothing may be cached on its word).
 * Context: thread-safe, lock-free.
 */
unsigned regcache_subscriber_caps(const struct regcache_subscriber *sub);

/**
 * regcache_subscriber_current - nothing was published since the last sync
 * @sub: the subscriber.
 *
 * The hit check: two acquire loads. When it returns true, every range
 * changed before this call began (by any thread, under a synchronous
 * monitor) has been passed to a sync's callback that has returned.
 *
 * Return: true if there is nothing to sync.
 * Context: thread-safe, lock-free; never blocks or allocates.
 */
bool regcache_subscriber_current(const struct regcache_subscriber *sub);

/**
 * regcache_subscriber_wait - sleep until there is something to sync
 * @sub:        the subscriber.
 * @timeout_ms: how long to wait at most; -1 waits without limit.
 *
 * For a thread that forwards changes to a cache whose lookups it cannot
 * intercept (the UCX bridge on UCX >= 1.14): it sleeps here instead of
 * polling regcache_subscriber_current(), and syncs when this returns 0.
 * A change reported by the monitor wakes it at once (then the woken thread
 * waits for a CPU, which can take milliseconds on a loaded machine or in a
 * VM); while nothing changes it uses no CPU. While a thread sleeps here,
 * the thread that changes memory pays for the wakeup inside its syscall
 * (tens of microseconds measured in a VM): a caller that sees changes in
 * bursts should poll for a while after each one before it sleeps again.
 * One thread of the process sleeps at a time; other callers wait for it,
 * within their own timeout.
 *
 * Return: 0 when @sub is not current (also at once, and after a fork);
 * -ETIMEDOUT when it stayed current for @timeout_ms; -EOPNOTSUPP when the
 * running monitor cannot wake a sleeper (regcached; bpf where membarrier()
 * is denied): poll instead; -EINVAL for a NULL @sub or a @timeout_ms below
 * -1; other -errno from the kernel. Under monitor "none" nothing ever
 * changes: it returns -ETIMEDOUT.
 * Context: thread-safe; blocks. Must not race with
 * regcache_subscriber_destroy() of @sub.
 */
int regcache_subscriber_wait(struct regcache_subscriber *sub, int timeout_ms);

/**
 * regcache_subscriber_sync - report every range published since the last sync
 * @sub: the subscriber.
 * @fn:  called once per range, in publication order.
 * @arg: passed to @fn.
 *
 * Concurrent syncs of one subscriber are serialised; a caller that waited
 * for another's sync still returns only once every range published before
 * its own call has been reported. After a fork, the child's first sync
 * reports everything once.
 *
 * Return: the number of ranges reported (>= 0); -EINVAL if @sub or @fn is
 * NULL.
 * Context: thread-safe; blocks while another thread syncs @sub. Takes the
 * monitor's lock briefly to pull kernel events (bpf).
 */
int regcache_subscriber_sync(struct regcache_subscriber *sub,
			     regcache_changed_fn *fn, void *arg);

/**
 * regcache_subscriber_watch - ask to be told about [addr, addr+len)
 * @sub:  the subscriber.
 * @addr: start of a range the caller is about to pin (rounded out to pages).
 * @len:  its length, > 0.
 *
 * Call before pinning, as regcache's own caches do: some monitors
 * (userfaultfd) report only ranges that were watched. A subscriber watches
 * each range once: watching it again costs a hash lookup. The watch ends
 * at regcache_subscriber_unwatch(), or by itself when a sync reports a
 * change that overlaps the range (its pages are gone, so a cache that
 * registers it again must watch it again first). That suits caches that
 * never say when a registration ends (libfabric 1.17, UCX).
 *
 * Return: 0 when every later change to the range will be published;
 * -EOPNOTSUPP when the monitor cannot prove that for this range (a private
 * file mapping, hugetlbfs, a range owned by another userfaultfd...): the
 * caller must not cache a registration of it; -EINVAL for NULL, zero
 * length or a wrapping range; other -errno from the kernel.
 * Context: thread-safe; makes a system call per mapping in the range.
 */
int regcache_subscriber_watch(struct regcache_subscriber *sub,
			      const void *addr, size_t len);

/**
 * regcache_subscriber_unwatch - the range watched earlier is unpinned
 * @sub:  the subscriber.
 * @addr: as given to regcache_subscriber_watch().
 * @len:  as given to regcache_subscriber_watch().
 *
 * A range that is not watched (any more) is ignored.
 * Context: thread-safe.
 */
void regcache_subscriber_unwatch(struct regcache_subscriber *sub,
				 const void *addr, size_t len);

/**
 * regcache_subscriber_check - probe a cached range on a hit
 * @sub:  the subscriber.
 * @addr: the range that a lookup found cached.
 * @len:  its length, > 0.
 *
 * Only monitors with REGCACHE_MONITOR_CHECK_HITS do work here (~1 us); the
 * others return 0 at once.
 *
 * Return: 0 when no change to the range can be in flight; -ESTALE when
 * one may be: the caller must treat the registration as invalid.
 * Context: thread-safe, lock-free, never blocks on another thread.
 */
int regcache_subscriber_check(const struct regcache_subscriber *sub,
			      const void *addr, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* REGCACHE_MONITOR_H */
