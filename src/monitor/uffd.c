/* SPDX-License-Identifier: MIT */
/*
 * The userfaultfd monitor backend: every VMA that holds a cached region is
 * registered in MODE_WP with one process-wide userfaultfd (nothing is ever
 * write-protected, so no fault ever reaches us), and the kernel reports
 * UNMAP, REMOVE and REMAP events for it. A thread reads them and publishes
 * the ranges with rc_monitor_publish(). See docs/monitor-userfaultfd.md.
 *
 * Its state (struct rc_uffd, uffd.h):
 *  - the watch table (struct rc_range_count, ranges.h): every [start, end)
 *    the caches watch, with a count (the contract balances watch/unwatch
 *    per range). It says what memory still needs monitoring.
 *  - the area table (struct rc_range_set): sorted, merged ranges this
 *    backend registered, each with the generation at which its
 *    registration was last confirmed. It says what we may unregister, and
 *    lets a miss skip UFFDIO_REGISTER.
 *  - the sentinel: one private page, registered, that start() tests the
 *    kernel with, and that ->validate() probes only on a kernel where the
 *    empty-range probe fails its self-test (otherwise it is unmapped once
 *    start() is done). The probes and ->validate() are uffd_probe.c.
 *  - the solo ring: a perf ring in which every clone() of the thread that
 *    started us shows up; while it shows none, that thread is the only
 *    application thread and its hits need no probe (rc_uffd_solo_hit(),
 *    uffd_solo.c).
 * The thread sleeps on the CPU that the application registers from
 * (follow_app_cpu()).
 * Both tables live under rc_uffd.lock, which the monitor thread never
 * takes: a thread holding it may malloc, and a malloc may unmap watched
 * memory and sleep until the monitor thread reads the event (design
 * rule 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif

#include "../base/clock.h"
#include "../base/env.h"
#include "../base/fork.h"
#include "../base/log.h"
#include "uffd.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1	/* Linux 5.11; not in Debian 12's headers */
#endif

#define RC_UFFD_EVENTS \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | \
	 UFFD_FEATURE_EVENT_REMAP)
/* Messages per read(): each one completes an unmapping thread's wait. */
#define RC_UFFD_BATCH 64
/* REMOVE ranges re-published once the madvise has certainly zapped. */
#define RC_UFFD_DEFERRED 64
#define RC_UFFD_DEFER_MS 2

struct rc_uffd rc_uffd = { .fd = -1, .stop_fd = -1, .solo_fd = -1,
			  .vmas = { .maps_fd = -1 },
			  .lock = PTHREAD_MUTEX_INITIALIZER };

/* A fork while another thread holds rc_uffd.lock would leave it locked in the
 * child forever. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&rc_uffd.lock);
}
static void atfork_release(void)
{
	pthread_mutex_unlock(&rc_uffd.lock);
}
static const struct rc_fork_handlers uffd_fork = {
	atfork_prepare, atfork_release, atfork_release
};

/* ---------------------------------------------------------------------
 * The monitor thread
 * ------------------------------------------------------------------- */

static void batch_begin(void);
static void batch_end(void);

struct deferred {
	uintptr_t start[RC_UFFD_DEFERRED], end[RC_UFFD_DEFERRED];
	unsigned n;
	struct timespec due;	/* when the oldest entry is republished */
};

/* Milliseconds until the deferred ranges are due (0 if overdue), or -1. */
static int ms_until_due(const struct deferred *d)
{
	return d->n ? rc_ms_until(&d->due) : -1;
}

static void publish_msg(struct rc_monitor *mon, const struct uffd_msg *m,
			struct deferred *d)
{
	switch (m->event) {
	case UFFD_EVENT_UNMAP:
		/* Before the publish: a watch that snapshots map_gen after
		 * this re-registers instead of trusting the area table. */
		rc_fetch_add_relaxed(&rc_uffd.map_gen, 1);
		rc_monitor_publish(mon, m->arg.remove.start, m->arg.remove.end);
		break;
	case UFFD_EVENT_REMOVE:
		rc_monitor_publish(mon, m->arg.remove.start, m->arg.remove.end);
		/* madvise sends REMOVE *before* it zaps the pages (mm/madvise.c
		 * madvise_dontneed_free): a registration made between our read
		 * and the zap pins the old pages. Publish again later. */
		if (!d->n)
			d->due = rc_deadline_ms(CLOCK_MONOTONIC, RC_UFFD_DEFER_MS);
		if (d->n < RC_UFFD_DEFERRED) {
			d->start[d->n] = m->arg.remove.start;
			d->end[d->n++] = m->arg.remove.end;
		} else {
			/* Full: widen the last entry. A larger range only
			 * invalidates more. */
			unsigned l = RC_UFFD_DEFERRED - 1;

			if (m->arg.remove.start < d->start[l])
				d->start[l] = m->arg.remove.start;
			if (m->arg.remove.end > d->end[l])
				d->end[l] = m->arg.remove.end;
		}
		break;
	case UFFD_EVENT_REMAP:
		rc_fetch_add_relaxed(&rc_uffd.map_gen, 1);
		rc_monitor_publish(mon, m->arg.remap.from,
				   m->arg.remap.from + m->arg.remap.len);
		/* The destination's old contents were replaced too. */
		rc_monitor_publish(mon, m->arg.remap.to,
				   m->arg.remap.to + m->arg.remap.len);
		break;
	case UFFD_EVENT_PAGEFAULT: {
		/* Cannot happen in WP mode when nothing is write-protected;
		 * if it does, never leave the faulting thread asleep. */
		struct uffdio_range r = {
			.start = m->arg.pagefault.address & ~(rc_uffd.page - 1),
			.len = rc_uffd.page,
		};

		ioctl(rc_uffd.fd, UFFDIO_WAKE, &r);
		rc_monitor_publish_all(mon);
		break;
	}
	default:
		/* Anything unknown invalidates (design rule 8). */
		rc_monitor_publish_all(mon);
		break;
	}
}

static void publish_deferred(struct rc_monitor *mon, struct deferred *d)
{
	if (!d->n)
		return;
	batch_begin();
	for (unsigned i = 0; i < d->n; i++)
		rc_monitor_publish(mon, d->start[i], d->end[i]);
	batch_end();
	d->n = 0;
}

/* Read every queued message. The generation brackets the read: it turns
 * odd before read() can complete an event (which wakes the unmapping
 * thread) and even once the ranges are published. So the unmapping thread
 * itself always sees it moved when its call returns, and ->validate() and
 * ->pull() wait for an even value before trusting the queue. */
static void batch_begin(void)
{
	/* seq_cst: visible to every thread before read() completes any
	 * event, which is before the unmapper can return or drop
	 * mmap_changing. */
	atomic_fetch_add_explicit(&rc_uffd.gen, 1, memory_order_seq_cst);
}

static void batch_end(void)
{
	/* Release: the published ranges before the even value. Pairs with
	 * the acquire in rc_monitor_current() and in uffd_pull(). */
	atomic_fetch_add_explicit(&rc_uffd.gen, 1, memory_order_release);
}

static void drain(struct rc_monitor *mon, struct deferred *d)
{
	struct uffd_msg msgs[RC_UFFD_BATCH];

	for (;;) {
		ssize_t n;

		batch_begin();
		n = read(rc_uffd.fd, msgs, sizeof(msgs));
		if (n < 0) {
			batch_end();
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				rc_debug("read(userfaultfd): %s", strerror(errno));
			return;
		}
		for (size_t i = 0; i < (size_t)n / sizeof(msgs[0]); i++)
			publish_msg(mon, &msgs[i], d);
		rc_fetch_add_relaxed(&rc_uffd.events,
				     (size_t)n / sizeof(msgs[0]));
		batch_end();
		if ((size_t)n < sizeof(msgs))
			return;
	}
}

/* Close @lo..@hi of this thread's table (no-op for an empty range). */
static void close_fds_between(int lo, int hi)
{
	if (lo <= hi)
		close_range((unsigned)lo, (unsigned)hi, 0);
}

/*
 * Give the thread a file table of its own that holds only the userfaultfd,
 * the eventfd and stderr (for its log lines). Then the application's table
 * is shared by one task fewer; with no other thread, the kernel looks the
 * userfaultfd up without taking a reference on every hit's probe (fdget's
 * single-table path), a few ns of each. CLOSE_RANGE_UNSHARE copies only the
 * descriptors below the first one closed, and the rest is closed at once:
 * the copies of the application's files live for microseconds. Where
 * close_range is missing or denied nothing changes. Returns whether the
 * table is our own.
 */
static bool own_file_table(void)
{
	int keep[3] = { rc_uffd.fd, rc_uffd.stop_fd, STDERR_FILENO }, next = 0;

	/* Sort the three (they may repeat if the application closed fd 2). */
	for (int i = 1; i < 3; i++)
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	if (rc_env_flag(RC_ENV_UFFD_SHARED_FDS) ||
	    close_range((unsigned)keep[2] + 1, ~0u, CLOSE_RANGE_UNSHARE))
		return false;
	for (int i = 0; i < 3; i++) {
		close_fds_between(next, keep[i] - 1);
		if (keep[i] + 1 > next)
			next = keep[i] + 1;
	}
	return true;
}

/* Cancellation (stop_thread) and exit: with a table of our own, its copy of
 * the userfaultfd must go before the thread exits, see uffd_stop(). Raw
 * close(2): ThreadSanitizer models one file table per process and would
 * see this close race with the other table's use of the same numbers. */
static void close_own_fds(void *own)
{
	if (*(bool *)own) {
		syscall(SYS_close, rc_uffd.fd);
		syscall(SYS_close, rc_uffd.stop_fd);
	}
}

/*
 * Sleep on the CPU that the application last registered or released from.
 *
 * A change of a watched range sleeps until this thread has read its
 * event. Woken on another CPU, that is two cross-CPU wakeups per change:
 * the unmapper wakes us, and our read() wakes the unmapper, whose CPU went
 * idle meanwhile. On a virtual machine each is a virtual CPU leaving halt
 * (~20 us); on one CPU neither happens, since the unmapper sleeps right
 * after it woke us (the kernel's sync-wakeup case, which the userfaultfd
 * wakeup does not declare). docs/monitor-userfaultfd.md has the figures.
 * The thread that registers memory is usually the one that frees it, so
 * the thread restricts itself to that thread's CPU before each sleep, and
 * follows it when it moves (one sched_setaffinity() per move, none per
 * event). Only where this thread is *woken* changes; it reads every event
 * as before, so nothing here bears on correctness. A CPU outside our
 * allowed set is refused by the kernel and then left alone.
 *
 * A real-time caller (SCHED_FIFO, RR, DEADLINE) may keep its CPU busy, and
 * a thread pinned behind it would run only in the kernel's real-time
 * throttling gaps: then the thread goes back to the CPUs it started with.
 */
#define RC_UFFD_CPU_ANY (-2)	/* app_cpu: sleep wherever allowed */

static void follow_app_cpu(void)
{
	int cpu = rc_load_relaxed(&rc_uffd.app_cpu);
	cpu_set_t set;

	if (!rc_uffd.follow_cpu || cpu == -1 || cpu == rc_uffd.pinned_cpu ||
	    cpu >= CPU_SETSIZE)
		return;
	rc_uffd.pinned_cpu = cpu;	/* refused or not: not asked again */
	if (cpu == RC_UFFD_CPU_ANY) {
		set = rc_uffd.thread_cpus;
	} else {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
	}
	if (sched_setaffinity(0, sizeof(set), &set)) {
		/* Never stay pinned to the CPU followed before: back to the
		 * CPUs the thread started with (which may fail too, if the
		 * cpuset changed; then the kernel's own choice stands). */
		rc_debug("userfaultfd monitor: cannot follow to CPU %d: %s",
			 cpu, strerror(errno));
		if (cpu != RC_UFFD_CPU_ANY)
			sched_setaffinity(0, sizeof(rc_uffd.thread_cpus),
					  &rc_uffd.thread_cpus);
	}
}

/* Under rc_uffd.lock (watch/unwatch): the CPU the monitor thread follows.
 * sched_getcpu() reads the rseq area (glibc 2.35+), no syscall; the
 * caller's policy (a syscall) is asked when its CPU differs from the last
 * one, and every 64th call, since a thread can turn real-time in place. */
static void note_app_cpu(void)
{
	int cpu = sched_getcpu(), policy;

	if (cpu < 0 || (cpu == rc_load_relaxed(&rc_uffd.app_cpu) &&
			++rc_uffd.notes_since_policy % 64))
		return;
	policy = sched_getscheduler(0);
	if (policy != SCHED_OTHER && policy != SCHED_BATCH &&
	    policy != SCHED_IDLE)
		cpu = RC_UFFD_CPU_ANY;
	rc_store_relaxed(&rc_uffd.app_cpu, cpu);
}

/*
 * The single producer. It never allocates, frees, takes a lock that an
 * unmapping thread may hold, or unmaps anything: with one reader, unmapping
 * watched memory here would wait for itself (docs/kernel-facts.md).
 */
static void *monitor_thread(void *arg)
{
	struct rc_monitor *mon = arg;
	struct deferred d = { .n = 0 };
	bool own;

	/* In the process's file table, before own_file_table() gives this
	 * thread a table of its own: the starting thread maps it. */
	rc_uffd.solo_fd = rc_uffd_solo_open_event(rc_uffd.solo_tid);
	own = own_file_table();

	rc_uffd.thread_tid = (pid_t)syscall(SYS_gettid);
	if (sched_getaffinity(0, sizeof(rc_uffd.thread_cpus),
			      &rc_uffd.thread_cpus))
		rc_uffd.follow_cpu = false;	/* nothing to go back to */
	/* Release: start() returns only after this, so that whatever the C
	 * runtime or a sanitizer maps for a new thread is mapped before the
	 * application can unmap and expect to reuse an address. */
	rc_store_release(&rc_uffd.ready, 1);
	/* Cancellable only inside poll(), where nothing is half done: see
	 * stop_thread(). */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cleanup_push(close_own_fds, &own);
	/* The flag, not the eventfd's POLLIN: once stop() has put the
	 * eventfd under the userfaultfd's number, drain() may read its count
	 * through that number, and the wakeup would be lost. stop() sets the
	 * flag before it writes the eventfd, so whichever read consumed the
	 * count, the next check sees the flag. */
	while (!atomic_load_explicit(&rc_uffd.stopping, memory_order_seq_cst)) {
		struct pollfd p[2] = {
			{ .fd = rc_uffd.fd, .events = POLLIN },
			{ .fd = rc_uffd.stop_fd, .events = POLLIN },
		};
		int ret;

		follow_app_cpu();
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		ret = poll(p, 2, ms_until_due(&d));
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);

		if (ret < 0) {
			if (errno == EINTR)
				continue;	/* signals killed monitors in the
						   wild (docs/kernel-facts.md) */
			rc_error("poll(userfaultfd) failed: %s; invalidating "
				 "everything and retrying", strerror(errno));
			rc_monitor_publish_all(mon);
			usleep(1000);
			continue;
		}
		if (ret > 0 && (p[0].revents & (POLLIN | POLLERR)))
			drain(mon, &d);
		/* Due even while events keep coming, so a steady stream of
		 * madvise calls cannot postpone it. */
		if (ms_until_due(&d) == 0)
			publish_deferred(mon, &d);
	}
	/* stop(): everything is unregistered and no event is in flight;
	 * read what is left and go. */
	drain(mon, &d);
	publish_deferred(mon, &d);
	pthread_cleanup_pop(1);
	return NULL;
}

/* ---------------------------------------------------------------------
 * VMAs
 * ------------------------------------------------------------------- */

static int vma_query(uintptr_t addr, struct rc_procmap_query *q)
{
	return rc_vma_query(&rc_uffd.vmas, addr, q);
}

/* Memory that a userfaultfd sees every change of: private, anonymous, base
 * pages. A file or shared mapping can lose pages through the file (memfd or
 * tmpfs hole punch, truncate, another process's MADV_REMOVE), which sends
 * no event; SysV shm and ext4 files cannot even be registered in WP mode. */
static const char *unwatchable(const struct rc_procmap_query *q)
{
	if (q->inode)
		return "file-backed (memfd, tmpfs, SysV shm or a file)";
	if (q->vma_flags & RC_PROCMAP_VMA_SHARED)
		return "a shared mapping";
	if (q->vma_page_size != rc_uffd.page)
		return "huge pages";
	return NULL;
}

/* Unregister [start, end). A range that now also holds a file mapping or
 * another userfaultfd's VMA fails as a whole with EINVAL: then go VMA by
 * VMA and leave those alone (EINVAL for one VMA: it cannot be registered
 * at all). Holes are skipped by the kernel. Returns 0, or the -errno of
 * an unregistration that failed (the range may still be registered). */
static int uffd_unregister(uintptr_t start, uintptr_t end)
{
	struct uffdio_range r = { .start = start, .len = end - start };
	uintptr_t addr = start;
	int ret = 0;

	if (!ioctl(rc_uffd.fd, UFFDIO_UNREGISTER, &r))
		return 0;
	if (errno != EINVAL)
		return -errno;
	while (addr < end) {
		struct rc_procmap_query q;

		if (vma_query(addr, &q) || q.vma_start >= end)
			break;
		r.start = q.vma_start > addr ? q.vma_start : addr;
		r.len = (q.vma_end < end ? q.vma_end : end) - r.start;
		if (!unwatchable(&q) &&
		    ioctl(rc_uffd.fd, UFFDIO_UNREGISTER, &r) &&
		    errno != EINVAL && !ret)
			ret = -errno;
		addr = q.vma_end;
	}
	return ret;
}

/* ---------------------------------------------------------------------
 * The tables (under rc_uffd.lock)
 * ------------------------------------------------------------------- */

static uint64_t reg_gen(void)
{
	/* Acquire pairs with nothing in particular: map_gen only has to be
	 * read before the VMA query that it vouches for. */
	return rc_load_acquire(&rc_uffd.map_gen) + (rc_uffd.unreg_gen << 40);
}

static void sweep_drop(void *arg, uintptr_t start, uintptr_t end)
{
	(void)arg;
	/* A failure leaves the VMA registered: harmless while the thread
	 * reads, and stop() closes the fd after its own attempt. */
	uffd_unregister(start, end);
	/* The address range may now hold other registered VMAs that a merged
	 * area vouched for: trust nothing. */
	rc_uffd.unreg_gen++;
}

/*
 * Unregister every area that no watched range overlaps. Costs O(W log A);
 * called when the last watch goes, and then every max(1024, W) unwatches,
 * so each unwatch pays O(log A) on average. Unregistering in WP mode walks
 * the page tables (~17 ms per populated GiB), which is why it is lazy.
 * Out of memory: nothing is unregistered, the next sweep tries again.
 */
static void sweep_locked(void)
{
	rc_uffd.unwatch_since_sweep = 0;
	/* A watched read-only VMA next to the sentinel may have merged with
	 * it and been unregistered with it: register it again (idempotent). */
	if (rc_range_set_retain_used(&rc_uffd.areas, &rc_uffd.watches,
				     sweep_drop, NULL) > 0 &&
	    !rc_uffd.empty_probe)
		rc_uffd_register_sentinel();
}

/* ---------------------------------------------------------------------
 * Ops
 * ------------------------------------------------------------------- */

/*
 * Register every VMA that overlaps [start, end), whole, so that the number
 * of VMAs does not grow with the number of regions (design rule 6).
 */
static int uffd_watch(struct rc_monitor *mon, uintptr_t start, uintptr_t end)
{
	uintptr_t addr = start;
	int ret = 0;

	(void)mon;
	pthread_mutex_lock(&rc_uffd.lock);
	note_app_cpu();
	/* Off for good: nobody reads the ring any more (solo_off()). */
	if (rc_uffd.solo_ring && !rc_load_acquire(&rc_uffd.solo))
		rc_uffd_solo_stop(false);
	while (addr < end) {
		struct rc_procmap_query q;
		/* Before the query: an UNMAP/REMAP read after this point
		 * makes the areas unconfirmed for the next watch. One read
		 * before is still in flight for this one, and the cache's
		 * pending registration is tainted when it is published. */
		uint64_t gen = reg_gen();
		const char *why;

		ret = vma_query(addr, &q);
		if (ret == -ENOENT) {
			ret = 0;	/* nothing mapped: pinning will fail */
			break;
		}
		if (ret)
			break;
		if (q.vma_start >= end)
			break;
		why = unwatchable(&q);
		if (why) {
			rc_debug("%p-%p is %s: served uncached",
				 (void *)(uintptr_t)q.vma_start,
				 (void *)(uintptr_t)q.vma_end, why);
			ret = -EOPNOTSUPP;
			break;
		}
		if (!rc_range_set_covers(&rc_uffd.areas, q.vma_start, q.vma_end,
					 gen)) {
			ret = rc_uffd_register(q.vma_start, q.vma_end);
			if (ret) {
				rc_debug("UFFDIO_REGISTER %p-%p: %s%s",
					 (void *)(uintptr_t)q.vma_start,
					 (void *)(uintptr_t)q.vma_end,
					 strerror(-ret),
					 ret == -EBUSY ? " (another userfaultfd "
							 "owns it): served "
							 "uncached" : "");
				break;
			}
			ret = rc_range_set_add(&rc_uffd.areas, q.vma_start,
					       q.vma_end, gen);
			if (ret)
				break;
		}
		addr = q.vma_end;
	}
	if (!ret)
		ret = rc_range_count_add(&rc_uffd.watches, start, end);
	/* On failure the VMAs registered above stay in the area table; the
	 * next sweep unregisters them if nothing else needs them. */
	pthread_mutex_unlock(&rc_uffd.lock);
	return ret;
}

static void uffd_unwatch(struct rc_monitor *mon, uintptr_t start,
			 uintptr_t end)
{
	int64_t left;

	(void)mon;
	pthread_mutex_lock(&rc_uffd.lock);
	note_app_cpu();
	left = rc_range_count_remove(&rc_uffd.watches, start, end);
	if (left < 0) {
		rc_error("unwatch of %p-%p that is not watched (bug)",
			 (void *)start, (void *)end);
	} else if (left == 0) {
		size_t n = rc_uffd.watches.n;

		if (!n ||
		    ++rc_uffd.unwatch_since_sweep >= (n > 1024 ? n : 1024))
			sweep_locked();
	}
	pthread_mutex_unlock(&rc_uffd.lock);
}

/*
 * Called by a cache's sync (monitor lock and cache lock held) after it read
 * the generation: the queue is complete up to that generation once the
 * thread has finished the batch it may be in. The thread takes no lock and
 * never blocks inside a batch, so this wait is short and cannot deadlock.
 */
static void uffd_pull(struct rc_monitor *mon)
{
	(void)mon;
	while (rc_load_acquire(&rc_uffd.gen) & 1)
		sched_yield();
}

static void close_fds(void)
{
	if (rc_uffd.fd >= 0)
		close(rc_uffd.fd);
	if (rc_uffd.stop_fd >= 0)
		close(rc_uffd.stop_fd);
	rc_vma_source_close(&rc_uffd.vmas);
	rc_uffd.fd = rc_uffd.stop_fd = -1;
}

static void reset_tables(void)
{
	rc_range_set_free(&rc_uffd.areas);
	rc_range_count_free(&rc_uffd.watches);
	rc_uffd.unwatch_since_sweep = 0;
}

static int open_uffd(void)
{
	int fd = (int)syscall(SYS_userfaultfd,
			      O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	int ret = fd < 0 ? -errno : 0;

	if (fd < 0 && errno == EINVAL) {
		/* Before 5.11 UFFD_USER_MODE_ONLY is EINVAL. Without it the
		 * descriptor would also take faults raised in kernel mode,
		 * which only MODE_MISSING delivers: in write-protect mode,
		 * with nothing protected, it is the same monitor. It needs
		 * CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1. */
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0)
			rc_info("userfaultfd: no UFFD_USER_MODE_ONLY (Linux < "
				"5.11): opened without it");
		ret = fd < 0 ? -errno : 0;
	}
	if (fd < 0) {
		/* With vm.unprivileged_userfaultfd=0 the syscall may be
		 * EPERM; /dev/userfaultfd (6.1+) is governed by its file
		 * mode. */
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW,
				   O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
			if (fd < 0)
				fd = ioctl(dev, USERFAULTFD_IOC_NEW,
					   O_CLOEXEC | O_NONBLOCK);
			close(dev);
		}
		if (fd < 0) {
			rc_info("userfaultfd monitor unavailable: syscall: %s, "
				"/dev/userfaultfd: %s" RC_UFFD_SEE_INFO,
				strerror(-ret), strerror(errno));
			return ret;
		}
	}
	return fd;
}

/* valgrind runs one thread at a time and does not treat munmap as a
 * blocking syscall: the unmapping thread would sleep in the kernel holding
 * valgrind's lock, waiting for our thread, which can never run. */
static bool under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");

#ifdef RUNNING_ON_VALGRIND
	if (RUNNING_ON_VALGRIND)
		return true;
#endif
	return pre && strstr(pre, "vgpreload");
}

static int uffd_start(struct rc_monitor *mon)
{
	struct uffdio_api api = { .api = UFFD_API, .features = RC_UFFD_EVENTS };
	pthread_attr_t attr;
	sigset_t all, old;
	int ret;

	if (under_valgrind()) {
		rc_info("userfaultfd monitor unavailable under valgrind (an "
			"unmapping thread would wait for a monitor thread "
			"that valgrind never schedules)" RC_UFFD_SEE_INFO);
		return -EOPNOTSUPP;
	}
	rc_fork_enable(RC_FORK_UFFD, &uffd_fork);
	rc_uffd.page = (uintptr_t)sysconf(_SC_PAGESIZE);
	rc_uffd.fd = open_uffd();
	if (rc_uffd.fd < 0) {
		ret = rc_uffd.fd;
		rc_uffd.fd = -1;
		return ret;
	}
	if (ioctl(rc_uffd.fd, UFFDIO_API, &api)) {
		ret = -errno;
		rc_info("userfaultfd monitor unavailable: UFFDIO_API with the "
			"UNMAP, REMOVE and REMAP events failed: %s (Linux 4.11+ "
			"needed)" RC_UFFD_SEE_INFO, strerror(-ret));
		goto fail;
	}
	if (!(api.ioctls & (1ull << _UFFDIO_REGISTER)) ||
	    !(api.ioctls & (1ull << _UFFDIO_UNREGISTER))) {
		ret = -EOPNOTSUPP;
		rc_info("userfaultfd monitor unavailable: no UFFDIO_REGISTER"
			RC_UFFD_SEE_INFO);
		goto fail;
	}
	rc_uffd.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rc_uffd.stop_fd < 0) {
		ret = -errno;
		rc_info("userfaultfd monitor unavailable: eventfd: %s"
			RC_UFFD_SEE_INFO, strerror(-ret));
		goto fail;
	}
	rc_vma_source_open(&rc_uffd.vmas, RC_ENV_UFFD_NO_PROCMAP_QUERY);

	ret = rc_uffd_probe_start(api.ioctls);
	if (ret)
		goto fail;

	atomic_store_explicit(&rc_uffd.gen, 0, memory_order_relaxed);
	atomic_store_explicit(&rc_uffd.ready, 0, memory_order_relaxed);
	atomic_store_explicit(&rc_uffd.stopping, false, memory_order_relaxed);
	atomic_store_explicit(&rc_uffd.map_gen, 1, memory_order_relaxed);
	atomic_store_explicit(&rc_uffd.app_cpu, -1, memory_order_relaxed);
	rc_uffd.follow_cpu = !rc_env_flag(RC_ENV_UFFD_NO_FOLLOW_CPU);
	rc_uffd.pinned_cpu = -1;
	rc_uffd.solo_tid = (pid_t)syscall(SYS_gettid);
	rc_uffd.solo_fd = -1;
	rc_uffd.unreg_gen = 0;
	/* Signals go to the application's threads, never to ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	ret = -pthread_create(&rc_uffd.thread, &attr, monitor_thread, mon);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		rc_info("userfaultfd monitor unavailable: cannot start its "
			"thread: %s" RC_UFFD_SEE_INFO, strerror(-ret));
		goto fail;
	}
	rc_uffd.thread_running = true;
	while (!rc_load_acquire(&rc_uffd.ready))
		sched_yield();
	rc_uffd_solo_start();
	mon->caps = (struct rc_monitor_caps){
		.can_cache = true,
		.synchronous = false,
		.validate_hits = true,
	};
	mon->backend = &rc_uffd;
	/* From here the hit path reads our word (see drain()). */
	mon->gen = &rc_uffd.gen;
	return 0;
fail:
	/* No thread reads: close first (releasing the context unregisters
	 * the sentinel), then unmap. */
	close_fds();
	if (rc_uffd.sentinel)
		munmap(rc_uffd.sentinel, rc_uffd.page);
	rc_uffd.sentinel = NULL;
	return ret;
}

/* Unregister every private anonymous VMA: the area table misses VMAs that
 * mremap moved elsewhere, and a child holding a copy of the fd would keep
 * them registered after we close it, so that our later munmap of them
 * would sleep until the child dies (docs/kernel-facts.md). */
static int unregister_all(void)
{
	uintptr_t addr = 0;
	int ret = 0, err;

	for (size_t a = 0; a < rc_uffd.areas.n; a++) {
		err = uffd_unregister(rc_uffd.areas.r[a].start,
				      rc_uffd.areas.r[a].end);
		if (err && !ret)
			ret = err;
	}
	for (;;) {
		struct rc_procmap_query q;
		struct uffdio_range r;

		if (vma_query(addr, &q))
			break;
		r.start = q.vma_start;
		r.len = q.vma_end - q.vma_start;
		/* EINVAL: a VMA that cannot be registered ([vvar], ...). */
		if (!unwatchable(&q) &&
		    r.start != (uintptr_t)rc_uffd.sentinel &&
		    ioctl(rc_uffd.fd, UFFDIO_UNREGISTER, &r) &&
		    errno != EINVAL && !ret)
			ret = -errno;
		addr = q.vma_end;
	}
	return ret;
}

/*
 * Stop and join the thread. The eventfd wakes it; should even that write
 * fail (a seccomp filter), cancel it instead: its only enabled
 * cancellation point is poll(), between batches, where the generation is
 * even and nothing is half done.
 */
static void stop_thread(void)
{
	uint64_t one = 1;
	ssize_t n;

	if (!rc_uffd.thread_running)
		return;
	atomic_store_explicit(&rc_uffd.stopping, true, memory_order_seq_cst);
	while ((n = write(rc_uffd.stop_fd, &one, sizeof(one))) < 0 &&
	       errno == EINTR)
		;
	if (n < 0) {
		rc_error("userfaultfd monitor: cannot wake its thread (%s): "
			 "cancelling it", strerror(errno));
		pthread_cancel(rc_uffd.thread);
	}
	pthread_join(rc_uffd.thread, NULL);
	rc_uffd.thread_running = false;
}

static void uffd_stop(struct rc_monitor *mon)
{
	struct uffdio_range sr = { (uintptr_t)rc_uffd.sentinel, rc_uffd.page };
	bool sentinel_registered = false;
	int ret;

	rc_uffd_solo_stop(false);
	/* The thread keeps reading while we unregister, so threads that
	 * are unmapping now never wait for a reader that is gone. No cache
	 * is left to call watch/unwatch, so rc_uffd.lock is not taken: fork's
	 * prepare handlers take rc_uffd.lock before the monitor lock, which we
	 * hold here. */
	ret = unregister_all();
	reset_tables();
	/* Changes begun before the unregistration raised mmap_changing;
	 * once the probe succeeds the thread has read them all, and
	 * nothing registered is left to raise it again. */
	while (rc_uffd_hit_probe() == -EAGAIN)
		sched_yield();
	if (rc_uffd.sentinel) {
		sentinel_registered = ioctl(rc_uffd.fd, UFFDIO_UNREGISTER, &sr);
		if (sentinel_registered && !ret)
			ret = -errno;
	}
	if (ret)
		rc_error("userfaultfd monitor: UFFDIO_UNREGISTER failed (%s): "
			 "closing the userfaultfd unregisters what is left",
			 strerror(-ret));
	/* No reader is needed from here on, and a page still registered
	 * would make its munmap wait forever for one, even the thread's
	 * own exit (which may unmap its stack or a sanitizer's per-thread
	 * memory). So drop the fd table's reference to the userfaultfd
	 * before the thread exits: dup3 puts the eventfd under the same
	 * number, which the thread may still poll and read (it reads no
	 * event from it). The context is released when the thread's poll()
	 * lets go of its reference, or, when the thread has a file table of
	 * its own, when it closes its copy before it returns; either
	 * unregisters every VMA and wakes every waiter. */
	if (dup3(rc_uffd.stop_fd, rc_uffd.fd, O_CLOEXEC) < 0)
		rc_error("userfaultfd monitor: dup3: %s", strerror(errno));
	stop_thread();
	/* Before any unmap, for the same reason. */
	close_fds();
	/* A forked child may still hold a copy of the fd and keep the
	 * context alive: then a sentinel we could not unregister stays
	 * mapped (one page) rather than risk a munmap that never returns. */
	if (rc_uffd.sentinel && !sentinel_registered)
		munmap(rc_uffd.sentinel, rc_uffd.page);
	rc_uffd.sentinel = NULL;
	mon->gen = &mon->queue_head;
	rc_debug("userfaultfd monitor stopped after %llu events",
		 (unsigned long long)rc_load_relaxed(&rc_uffd.events));
}

/* In a forked child: the thread does not exist here, and the child's VMAs
 * lost their registration at fork (no EVENT_FORK). Only close our copies of
 * the fds: the parent's copy keeps its context alive, and any ioctl through
 * the inherited fd (unregister, read) would act on the parent's context. */
static void uffd_forked(struct rc_monitor *mon)
{
	/* Another thread of the child may still read rc_uffd.gen: it is static
	 * memory, so leaving it behind is harmless. */
	mon->gen = &mon->queue_head;
	rc_uffd_solo_stop(true);
	close_fds();
	if (rc_uffd.sentinel)
		munmap(rc_uffd.sentinel, rc_uffd.page);	/* the child's copy */
	rc_uffd.sentinel = NULL;
	rc_uffd.thread_running = false;
	reset_tables();
}

const struct rc_monitor_ops rc_monitor_uffd_ops = {
	.name = "userfaultfd",
	.start = uffd_start,
	.watch = uffd_watch,
	.unwatch = uffd_unwatch,
	.pull = uffd_pull,
	.validate = rc_uffd_validate,
	.forked = uffd_forked,
	.stop = uffd_stop,
};
