/* SPDX-License-Identifier: MIT */
/*
 * The userfaultfd monitor backend: every VMA that holds a cached region is
 * registered in MODE_WP with one process-wide userfaultfd (nothing is ever
 * write-protected, so no fault ever reaches us), and the kernel reports
 * UNMAP, REMOVE and REMAP events for it. A thread reads them and publishes
 * the ranges with rc_monitor_publish(). See docs/monitor-userfaultfd.md.
 *
 * Three pieces of state:
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
 *    start() is done).
 *  - the solo ring: a perf ring in which every clone() of the thread that
 *    started us shows up; while it shows none, that thread is the only
 *    application thread and its hits need no probe (solo_hit()).
 * The thread sleeps on the CPU that the application registers from
 * (follow_app_cpu()).
 * Both tables live under uffd.lock, which the monitor thread never takes:
 * a thread holding it may malloc, and a malloc may unmap watched memory and
 * sleep until the monitor thread reads the event (design rule 1).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
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
#include "backend.h"
#include "ranges.h"
#include "../kernel/vma.h"

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
/* Bounded wait in ->validate() for an event in flight to be published. */
#define RC_UFFD_VALIDATE_SPINS 2000
/* Every "unavailable" line ends with this: the tool explains the
 * machine's settings (sysctls, seccomp, kernel version) in full. */
#define RC_UFFD_SEE_INFO "; regcache-info shows why"

static struct uffd_backend {
	int fd;
	int stop_fd;		/* eventfd: wakes the thread for stop() */
	struct rc_vma_source vmas;	/* for ->watch() */
	bool thread_running;
	pthread_t thread;
	uintptr_t page;
	char *sentinel;		/* one registered page, or NULL */
	/* Probe with UFFDIO_ZEROPAGE (cheaper). The sweep may turn it off
	 * (register_sentinel) while hits read it: relaxed atomics, since
	 * either probe answers correctly. */
	_Atomic bool zeropage_probe;
	bool empty_probe;	/* hits probe an empty range (cheapest) */

	/* One application thread (solo_*): see solo_hit(). */
	_Atomic bool solo;		/* hits of solo_thread may skip the
					   probe; only ever turned off */
	pthread_t solo_thread;
	int solo_fd;			/* perf event on solo_thread, opened
					   by the monitor thread; -1 once
					   mapped or refused */
	pid_t solo_tid;			/* the starting thread's */
	const struct perf_event_mmap_page *solo_ring;
	uint64_t solo_head;		/* solo_thread's only: records seen */
	pid_t thread_tid;		/* the monitor thread's */

	/* Written by the monitor thread only. */
	_Atomic uint64_t gen;		/* the hit path's word; odd from
					   before read() until published */
	_Atomic uint64_t map_gen;	/* UNMAP/REMAP events read so far */
	_Atomic uint64_t events;	/* every message read (statistics) */
	_Atomic int ready;		/* the thread has started */
	/* The CPU of the last watch()/unwatch(), -1 if unknown: where the
	 * thread sleeps (follow_app_cpu). Written under lock, read by the
	 * thread. */
	_Atomic int app_cpu;
	bool follow_cpu;		/* REGCACHE_UFFD_NO_FOLLOW_CPU unset */
	int pinned_cpu;			/* the thread's only: where it sleeps */
	cpu_set_t thread_cpus;		/* the thread's only: where it started */
	_Atomic bool stopping;		/* set by stop() before it wakes the
					   thread */

	/* Under lock. */
	pthread_mutex_t lock;
	uint64_t unreg_gen;		/* our own unregistrations */
	struct rc_range_set areas;	/* gen: registration confirmed at
					   this reg_gen() */
	struct rc_range_count watches;
	size_t unwatch_since_sweep;
	unsigned notes_since_policy;	/* note_app_cpu() */
} uffd = { .fd = -1, .stop_fd = -1, .solo_fd = -1, .vmas = { .maps_fd = -1 },
	   .lock = PTHREAD_MUTEX_INITIALIZER };

/* A fork while another thread holds uffd.lock would leave it locked in the
 * child forever. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&uffd.lock);
}
static void atfork_release(void)
{
	pthread_mutex_unlock(&uffd.lock);
}
static const struct rc_fork_handlers uffd_fork = {
	atfork_prepare, atfork_release, atfork_release
};

/* ---------------------------------------------------------------------
 * The monitor thread
 * ------------------------------------------------------------------- */

static void batch_begin(void);
static void batch_end(void);
static void solo_stop(bool child);
static int solo_open_event(pid_t tid);

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
		rc_fetch_add_relaxed(&uffd.map_gen, 1);
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
		rc_fetch_add_relaxed(&uffd.map_gen, 1);
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
			.start = m->arg.pagefault.address & ~(uffd.page - 1),
			.len = uffd.page,
		};

		ioctl(uffd.fd, UFFDIO_WAKE, &r);
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
	atomic_fetch_add_explicit(&uffd.gen, 1, memory_order_seq_cst);
}

static void batch_end(void)
{
	/* Release: the published ranges before the even value. Pairs with
	 * the acquire in rc_monitor_current() and in uffd_pull(). */
	atomic_fetch_add_explicit(&uffd.gen, 1, memory_order_release);
}

static void drain(struct rc_monitor *mon, struct deferred *d)
{
	struct uffd_msg msgs[RC_UFFD_BATCH];

	for (;;) {
		ssize_t n;

		batch_begin();
		n = read(uffd.fd, msgs, sizeof(msgs));
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
		rc_fetch_add_relaxed(&uffd.events, (size_t)n / sizeof(msgs[0]));
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
	int keep[3] = { uffd.fd, uffd.stop_fd, STDERR_FILENO }, next = 0;

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
		syscall(SYS_close, uffd.fd);
		syscall(SYS_close, uffd.stop_fd);
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
	int cpu = rc_load_relaxed(&uffd.app_cpu);
	cpu_set_t set;

	if (!uffd.follow_cpu || cpu == -1 || cpu == uffd.pinned_cpu ||
	    cpu >= CPU_SETSIZE)
		return;
	uffd.pinned_cpu = cpu;	/* refused or not: not asked again */
	if (cpu == RC_UFFD_CPU_ANY) {
		set = uffd.thread_cpus;
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
			sched_setaffinity(0, sizeof(uffd.thread_cpus),
					  &uffd.thread_cpus);
	}
}

/* Under uffd.lock (watch/unwatch): the CPU the monitor thread follows.
 * sched_getcpu() reads the rseq area (glibc 2.35+), no syscall; the
 * caller's policy (a syscall) is asked when its CPU differs from the last
 * one, and every 64th call, since a thread can turn real-time in place. */
static void note_app_cpu(void)
{
	int cpu = sched_getcpu(), policy;

	if (cpu < 0 || (cpu == rc_load_relaxed(&uffd.app_cpu) &&
			++uffd.notes_since_policy % 64))
		return;
	policy = sched_getscheduler(0);
	if (policy != SCHED_OTHER && policy != SCHED_BATCH &&
	    policy != SCHED_IDLE)
		cpu = RC_UFFD_CPU_ANY;
	rc_store_relaxed(&uffd.app_cpu, cpu);
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
	uffd.solo_fd = solo_open_event(uffd.solo_tid);
	own = own_file_table();

	uffd.thread_tid = (pid_t)syscall(SYS_gettid);
	if (sched_getaffinity(0, sizeof(uffd.thread_cpus), &uffd.thread_cpus))
		uffd.follow_cpu = false;	/* nothing to go back to */
	/* Release: start() returns only after this, so that whatever the C
	 * runtime or a sanitizer maps for a new thread is mapped before the
	 * application can unmap and expect to reuse an address. */
	rc_store_release(&uffd.ready, 1);
	/* Cancellable only inside poll(), where nothing is half done: see
	 * stop_thread(). */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cleanup_push(close_own_fds, &own);
	/* The flag, not the eventfd's POLLIN: once stop() has put the
	 * eventfd under the userfaultfd's number, drain() may read its count
	 * through that number, and the wakeup would be lost. stop() sets the
	 * flag before it writes the eventfd, so whichever read consumed the
	 * count, the next check sees the flag. */
	while (!atomic_load_explicit(&uffd.stopping, memory_order_seq_cst)) {
		struct pollfd p[2] = {
			{ .fd = uffd.fd, .events = POLLIN },
			{ .fd = uffd.stop_fd, .events = POLLIN },
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
	return rc_vma_query(&uffd.vmas, addr, q);
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
	if (q->vma_page_size != uffd.page)
		return "huge pages";
	return NULL;
}

static int uffd_register(uintptr_t start, uintptr_t end)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = end - start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(uffd.fd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}

/*
 * The sentinel is registered in MISSING|WP mode when the kernel allows it,
 * so that ->validate() can probe it with UFFDIO_ZEROPAGE: that ioctl takes
 * only the VMA's own lock (uffd_mfill_lock), not the process-wide mmap
 * lock that UFFDIO_WRITEPROTECT takes, and the populated page answers
 * EEXIST right after the mmap_changing check. Nobody ever touches the
 * page, so MISSING mode never raises a fault.
 */
static int register_sentinel(void)
{
	struct uffdio_register reg = {
		.range = { (uintptr_t)uffd.sentinel, uffd.page },
		.mode = UFFDIO_REGISTER_MODE_WP | UFFDIO_REGISTER_MODE_MISSING,
	};

	if (rc_load_relaxed(&uffd.zeropage_probe) &&
	    !ioctl(uffd.fd, UFFDIO_REGISTER, &reg))
		return 0;
	rc_store_relaxed(&uffd.zeropage_probe, false);
	return uffd_register((uintptr_t)uffd.sentinel,
			     (uintptr_t)uffd.sentinel + uffd.page);
}

/* 0 when no change of a registered VMA is in flight (mmap_changing is 0),
 * -EAGAIN when one is, another -errno when the probe itself failed. */
static int probe(void)
{
	if (rc_load_relaxed(&uffd.zeropage_probe)) {
		struct uffdio_zeropage z = {
			.range = { (uintptr_t)uffd.sentinel, uffd.page },
			.mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE,
		};

		if (!ioctl(uffd.fd, UFFDIO_ZEROPAGE, &z) || errno == EEXIST)
			return 0;
	} else {
		struct uffdio_writeprotect wp = {
			.range = { (uintptr_t)uffd.sentinel, uffd.page },
			.mode = 0,
		};

		if (!ioctl(uffd.fd, UFFDIO_WRITEPROTECT, &wp))
			return 0;
	}
	return -errno;
}

/* ioctl(2) without libc's wrapper, for the hit probe: returns 0 or -errno
 * and writes no errno. A few ns of every hit; the kernel sees the same
 * call (seccomp filters included). */
static inline long ioctl_raw(int fd, unsigned long cmd, void *arg)
{
#if defined(__x86_64__) && !defined(__ILP32__)
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_ioctl), "D"((long)fd), "S"(cmd),
			   "d"(arg)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_ioctl;
	register long x0 __asm__("x0") = fd;
	register long x1 __asm__("x1") = (long)cmd;
	register long x2 __asm__("x2") = (long)arg;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2)
			 : "memory");
	return x0;
#else
	return ioctl(fd, cmd, arg) ? -errno : 0;
#endif
}

/*
 * The hit probe: UFFDIO_WRITEPROTECT of an empty range. The kernel reads
 * mmap_changing before anything else and answers EAGAIN while it is
 * raised; otherwise it copies the argument and rejects the empty range
 * with EINVAL. No lock is taken and nothing is touched, so a hit pays
 * little more than the syscall. Same answers as probe(); the fallback to
 * probe() is for a kernel that checks in another order (empty_probe_works).
 */
static int hit_probe(void)
{
	struct uffdio_writeprotect wp = { .range = { 0, 0 }, .mode = 0 };
	long ret;

	if (!uffd.empty_probe)
		return probe();
	ret = ioctl_raw(uffd.fd, UFFDIO_WRITEPROTECT, &wp);
	if (!ret)
		return -EPROTO;		/* an empty range cannot succeed */
	return ret == -EINVAL ? 0 : (int)ret;
}

struct scratch {
	char *page;
	_Atomic int done;	/* its munmap returned */
};

static void *unmap_scratch(void *arg)
{
	struct scratch *sc = arg;

	munmap(sc->page, uffd.page);
	rc_store_release(&sc->done, 1);
	return NULL;
}

/* Read and drop every queued event until @sc's munmap returned. Only the
 * sentinel and the scratch page are registered yet, and no cache exists
 * to be told; but every change of them waits for a read, whoever made it
 * (an application thread's MAP_FIXED over an address it gave up, say),
 * so reading one message and joining could wait forever. */
static void drain_until_done(struct scratch *sc)
{
	struct pollfd p = { .fd = uffd.fd, .events = POLLIN };
	struct uffd_msg m[4];

	while (!rc_load_acquire(&sc->done))
		if (read(uffd.fd, m, sizeof(m)) < 0 && errno == EAGAIN)
			poll(&p, 1, 10);
	while (read(uffd.fd, m, sizeof(m)) > 0)
		;
}

/*
 * Before the thread starts: watch a scratch page, let another thread unmap
 * it, and require EAGAIN from the empty-range probe while an UNMAP event
 * is queued and unread, and 0 once it was read and the munmap returned.
 * Registered, the page's munmap queues an event and waits for our read,
 * so the reads below always end the wait; every wait is bounded, so a
 * munmap that queues nothing (it failed) only fails the check.
 */
static bool empty_probe_works(void)
{
	struct pollfd p = { .fd = uffd.fd, .events = POLLIN };
	struct scratch sc = { .done = 0 };
	pthread_t t;
	bool ok = false;

	uffd.empty_probe = true;
	sc.page = mmap(NULL, uffd.page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sc.page == MAP_FAILED)
		return false;
	if (hit_probe() || uffd_register((uintptr_t)sc.page,
					 (uintptr_t)sc.page + uffd.page)) {
		munmap(sc.page, uffd.page);
		return false;
	}
	if (pthread_create(&t, NULL, unmap_scratch, &sc)) {
		/* Unregister first: nobody would read its UNMAP event. */
		struct uffdio_range r = { (uintptr_t)sc.page, uffd.page };

		if (!ioctl(uffd.fd, UFFDIO_UNREGISTER, &r))
			munmap(sc.page, uffd.page);
		return false;
	}
	/* The event stays queued until we read it: poll until it is, or
	 * until the munmap returned without one. */
	while (!rc_load_acquire(&sc.done)) {
		if (poll(&p, 1, 10) > 0) {
			ok = hit_probe() == -EAGAIN;
			break;
		}
	}
	drain_until_done(&sc);
	pthread_join(t, NULL);
	return ok && hit_probe() == 0;
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

	if (!ioctl(uffd.fd, UFFDIO_UNREGISTER, &r))
		return 0;
	if (errno != EINVAL)
		return -errno;
	while (addr < end) {
		struct rc_procmap_query q;

		if (vma_query(addr, &q) || q.vma_start >= end)
			break;
		r.start = q.vma_start > addr ? q.vma_start : addr;
		r.len = (q.vma_end < end ? q.vma_end : end) - r.start;
		if (!unwatchable(&q) && ioctl(uffd.fd, UFFDIO_UNREGISTER, &r) &&
		    errno != EINVAL && !ret)
			ret = -errno;
		addr = q.vma_end;
	}
	return ret;
}

/* ---------------------------------------------------------------------
 * The tables (under uffd.lock)
 * ------------------------------------------------------------------- */

static uint64_t reg_gen(void)
{
	/* Acquire pairs with nothing in particular: map_gen only has to be
	 * read before the VMA query that it vouches for. */
	return rc_load_acquire(&uffd.map_gen) + (uffd.unreg_gen << 40);
}

static void sweep_drop(void *arg, uintptr_t start, uintptr_t end)
{
	(void)arg;
	/* A failure leaves the VMA registered: harmless while the thread
	 * reads, and stop() closes the fd after its own attempt. */
	uffd_unregister(start, end);
	/* The address range may now hold other registered VMAs that a merged
	 * area vouched for: trust nothing. */
	uffd.unreg_gen++;
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
	uffd.unwatch_since_sweep = 0;
	/* A watched read-only VMA next to the sentinel may have merged with
	 * it and been unregistered with it: register it again (idempotent). */
	if (rc_range_set_retain_used(&uffd.areas, &uffd.watches, sweep_drop,
				     NULL) > 0 && !uffd.empty_probe)
		register_sentinel();
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
	pthread_mutex_lock(&uffd.lock);
	note_app_cpu();
	/* Off for good: nobody reads the ring any more (solo_off()). */
	if (uffd.solo_ring && !rc_load_acquire(&uffd.solo))
		solo_stop(false);
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
		if (!rc_range_set_covers(&uffd.areas, q.vma_start, q.vma_end,
					 gen)) {
			ret = uffd_register(q.vma_start, q.vma_end);
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
			ret = rc_range_set_add(&uffd.areas, q.vma_start,
					       q.vma_end, gen);
			if (ret)
				break;
		}
		addr = q.vma_end;
	}
	if (!ret)
		ret = rc_range_count_add(&uffd.watches, start, end);
	/* On failure the VMAs registered above stay in the area table; the
	 * next sweep unregisters them if nothing else needs them. */
	pthread_mutex_unlock(&uffd.lock);
	return ret;
}

static void uffd_unwatch(struct rc_monitor *mon, uintptr_t start,
			 uintptr_t end)
{
	int64_t left;

	(void)mon;
	pthread_mutex_lock(&uffd.lock);
	note_app_cpu();
	left = rc_range_count_remove(&uffd.watches, start, end);
	if (left < 0) {
		rc_error("unwatch of %p-%p that is not watched (bug)",
			 (void *)start, (void *)end);
	} else if (left == 0) {
		size_t n = uffd.watches.n;

		if (!n || ++uffd.unwatch_since_sweep >= (n > 1024 ? n : 1024))
			sweep_locked();
	}
	pthread_mutex_unlock(&uffd.lock);
}

/* ---------------------------------------------------------------------
 * One application thread: hits without a syscall
 * ------------------------------------------------------------------- */

/*
 * The probe closes a window that needs two application threads: thread A
 * unmaps X and is between dropping the mmap lock and the monitor's read(),
 * while thread B maps X again and hits. The thread that made a change
 * itself cannot hit stale: its munmap/mremap/madvise returns only after our
 * read(), which batch_begin() preceded, so its next hit sees the generation
 * moved and syncs (see "The generation word" in the docs).
 *
 * So while the process has one application thread T, T's hits need no
 * probe. solo_hit() proves that T is alone with no syscall:
 *
 *  1. At start, after the monitor thread exists, /proc/self/task lists T,
 *     the monitor thread and io_uring workers only (solo_start()). Nobody
 *     else can create a thread meanwhile: T is here, the monitor thread
 *     never does, io_uring workers create only workers.
 *  2. A perf event on T alone (software "dummy", task records, nothing
 *     sampled; inherit off) makes the kernel append a FORK record to a ring
 *     mapped read-only into our memory *inside* every clone() that T makes,
 *     before clone() returns: threads, processes, vfork and
 *     clone(CLONE_VM) children alike. Read-only means overwrite mode: the
 *     kernel never refuses a record for lack of room and moves data_head
 *     for every one (it overwrites the oldest; more than a page of new
 *     records turns the shortcut off).
 *  3. Every thread other than T, the monitor thread and workers would have
 *     to be created after step 1 by T (the others create none), so its
 *     record is in the ring before T can run another instruction, and
 *     before anything T does afterwards (such as a hit). A hit of T that
 *     reads data_head unchanged since step 1 therefore runs in a process
 *     whose only threads that can unmap are T and io_uring workers.
 *  4. Workers only run T's io_uring requests; the only one that changes a
 *     mapping is IORING_OP_MADVISE, and T learns it is done from its
 *     completion, which comes after the madvise returned: after our read().
 *     A hit of T while its own madvise of that memory is still in flight
 *     uses memory it is discarding: the application's race, the same with
 *     the probe. So solo_recheck() accepts a record of a new worker
 *     (PF_IO_WORKER in /proc/self/task/<tid>/stat; the kernel sets the
 *     flag, the application cannot) and turns the shortcut off for good on
 *     any other record: another thread, any child process, a worker that
 *     already exited (its tid could not be checked), a full ring.
 *  5. Other processes: a debugger's ptrace stops T; process_madvise() from
 *     another process cannot discard our pages (6.18 takes only advice
 *     that keeps the contents from a remote caller).
 *
 * Not covered: a process that shares our memory without being a thread
 * (clone(CLONE_VM) without CLONE_THREAD) and was created *before* the
 * monitor started: it is not in /proc/self/task, and its creation predates
 * the ring; and an io_uring SQPOLL ring of ours whose submission queue
 * another process also maps (a child forked before the monitor started,
 * or one that received the ring's fd): its SQPOLL thread is one of our
 * io_uring workers and runs that process's IORING_OP_MADVISE in our
 * memory. REGCACHE_UFFD_ALWAYS_PROBE=1 keeps the probe on every hit for
 * such a program. The event is owned by the monitor thread, not T, so
 * T's prctl(PR_TASK_PERF_EVENTS_DISABLE) cannot silence it. Any child
 * process, even one with its own memory (fork(), system()), turns the
 * shortcut off for good. The shortcut also needs perf_event_open() for our own
 * thread (kernel.perf_event_paranoid <= 2, or CAP_PERFMON); where it is
 * refused (Debian's default of 3 for an ordinary user, a seccomp filter),
 * every hit probes.
 */
enum task_kind { TASK_GONE, TASK_EXITING, TASK_IO_WORKER, TASK_OTHER };

/* What thread @tid of this process is, from /proc/self/task/<tid>/stat.
 * No allocation (validate's rules): a stack buffer and hand parsing. */
static enum task_kind task_kind(pid_t tid)
{
	char path[64], buf[512];
	unsigned long long flags = 0;
	const char *p;
	ssize_t n;
	int fd, field = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return TASK_GONE;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return TASK_GONE;
	buf[n] = 0;
	/* "tid (comm) state ppid pgrp session tty tpgid flags ...": comm
	 * may hold anything, so count from its last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return TASK_OTHER;
	if (p[2] == 'Z' || p[2] == 'X' || p[2] == 'x')
		return TASK_EXITING;
	for (p += 2; *p && field < 6; p++)
		if (*p == ' ')
			field++;
	if (field < 6 || *p < '0' || *p > '9')
		return TASK_OTHER;
	for (; *p >= '0' && *p <= '9'; p++)
		flags = flags * 10 + (unsigned)(*p - '0');
	return (flags & 0x10) ? TASK_IO_WORKER : TASK_OTHER;	/* PF_IO_WORKER */
}

/* Only ever false -> true in start(), then true -> false. Release: the
 * solo thread's last look at the ring comes before the solo_stop() of a
 * watch() that saw the flag off (acquire). */
static void solo_off(void)
{
	rc_store_release(&uffd.solo, false);
}

/*
 * T only: the ring moved. Accept records of new io_uring workers of this
 * process (step 4 above), turn the shortcut off on anything else. Only T
 * makes records, and T is here: nothing writes the ring meanwhile.
 */
static rc_noinline bool solo_recheck(uint64_t head)
{
	const char *data = (const char *)uffd.solo_ring + uffd.page;
	pid_t self = getpid();

	if (head - uffd.solo_head > uffd.page) {
		solo_off();		/* records were overwritten */
		return false;
	}
	while (uffd.solo_head < head) {
		struct perf_event_header h;
		struct { uint32_t pid, ppid, tid, ptid; } f;
		uint64_t o = uffd.solo_head % uffd.page;

		/* One data page; a record may wrap around its end. */
		for (size_t i = 0; i < sizeof(h); i++)
			((char *)&h)[i] = data[(o + i) % uffd.page];
		for (size_t i = 0; i < sizeof(f); i++)
			((char *)&f)[i] = data[(o + sizeof(h) + i) % uffd.page];
		if (h.type != PERF_RECORD_FORK || h.size < sizeof(h) + sizeof(f) ||
		    (pid_t)f.pid != self ||
		    task_kind((pid_t)f.tid) != TASK_IO_WORKER) {
			rc_debug("userfaultfd monitor: a thread or process was "
				 "created (record %u, pid %u, tid %u): every hit "
				 "probes from now on", h.type, f.pid, f.tid);
			solo_off();
			return false;
		}
		uffd.solo_head += h.size;
	}
	return true;
}

/* A hit that may skip the probe: see the proof above. */
static inline bool solo_hit(void)
{
	uint64_t head;

	if (!rc_load_acquire(&uffd.solo) ||
	    !pthread_equal(pthread_self(), uffd.solo_thread))
		return false;
	/* Acquire, as perf's protocol wants before reading records. */
	head = __atomic_load_n(&uffd.solo_ring->data_head, __ATOMIC_ACQUIRE);
	if (head != uffd.solo_head && !solo_recheck(head))
		return false;
	/* As the probe path: the published state, not a batch half done. */
	return !(atomic_load_explicit(&uffd.gen, memory_order_seq_cst) & 1);
}

/* Whether /proc/self/task holds only us, the monitor thread and io_uring
 * workers. Bounded by the threads listed; no lock. */
static bool only_us_in_task_list(void)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool alone = d != NULL;

	while (alone && (e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		/* A thread that is exiting, or gone by now, does nothing
		 * more; one it created before is listed too. */
		if (tid > 0 && tid != self && tid != uffd.thread_tid &&
		    task_kind(tid) == TASK_OTHER)
			alone = false;
	}
	if (d)
		closedir(d);
	return alone;
}

/*
 * In the monitor thread, before start() goes on: a perf event on the
 * starting thread @tid, or -1. The monitor thread opens it so that it, not
 * the application's thread, owns the event: prctl(PR_TASK_PERF_EVENTS_DISABLE)
 * disables the events the calling thread owns, and a disabled event would
 * record no clone() while the ring head stays still (step 2).
 */
static int solo_open_event(pid_t tid)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.task = 1,
		.exclude_kernel = 1,	/* perf_event_paranoid 2 allows this */
		.exclude_hv = 1,
	};

	if (rc_env_flag(RC_ENV_UFFD_ALWAYS_PROBE))
		return -1;
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

/* After the monitor thread started (its own FORK record is not ours to
 * see) and opened the event: the ring first, then the task list (steps 1
 * and 2). The fd is closed once the ring is mapped (the mapping keeps the
 * event), so no fork or close_range() of the application can touch it. */
static void solo_start(void)
{
	int fd = uffd.solo_fd;
	void *ring;

	uffd.solo_fd = -1;
	uffd.solo_ring = NULL;
	if (fd < 0) {
		if (!rc_env_flag(RC_ENV_UFFD_ALWAYS_PROBE))
			rc_debug("userfaultfd monitor: perf_event_open refused: "
				 "every hit probes");
		return;
	}
	/* Read-only: overwrite mode, data_head moves for every record. */
	ring = mmap(NULL, 2 * uffd.page, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (ring == MAP_FAILED) {
		rc_debug("userfaultfd monitor: mmap of the perf ring: %s: every "
			 "hit probes", strerror(errno));
		return;
	}
	uffd.solo_ring = ring;
	uffd.solo_thread = pthread_self();
	uffd.solo_head = __atomic_load_n(&uffd.solo_ring->data_head,
					 __ATOMIC_ACQUIRE);
	if (!only_us_in_task_list()) {
		rc_debug("userfaultfd monitor: other threads exist: every hit "
			 "probes");
		solo_stop(false);
		return;
	}
	rc_debug("userfaultfd monitor: one application thread: its hits "
		 "skip the probe until it creates a thread or process");
	rc_store_release(&uffd.solo, true);
}

/* @child: in a forked child, where the ring is not mapped (perf maps it
 * VM_DONTCOPY) and the fd is our copy. Also once the shortcut is off for
 * good (uffd_watch()): the event would only cost the solo thread's
 * context switches. */
static void solo_stop(bool child)
{
	solo_off();
	if (uffd.solo_ring && !child)
		munmap((void *)uffd.solo_ring, 2 * uffd.page);
	uffd.solo_ring = NULL;
}

/*
 * Close the window between an unmap and the monitor's read of its event
 * (docs/kernel-facts.md): another thread may map the same address again
 * and hit.
 *
 * Every UNMAP, REMAP and REMOVE of a registered VMA raises the context's
 * mmap_changing *before* the pages change, and drops it only after our
 * read() returned the event. hit_probe() answers EAGAIN while it is raised
 * and touches nothing of the region, so its cost does not depend on the
 * region's size. A zero answer proves that every change that began before
 * it was read; an even
 * generation afterwards proves it was also published, and the cache
 * re-checks its generation after this returns (cache.c:probe_hit).
 */
static int uffd_validate(struct rc_monitor *mon, uintptr_t start,
			 uintptr_t end)
{
	(void)mon, (void)start, (void)end;
	if (solo_hit())
		return 0;
	for (int i = 0; i < RC_UFFD_VALIDATE_SPINS; i++) {
		int ret = hit_probe();

		if (!ret) {
			/* The kernel's load of mmap_changing before our load
			 * of the generation (free on x86). */
			atomic_thread_fence(memory_order_acquire);
			/* Pairs with batch_begin(): the read that let
			 * mmap_changing drop came after it. */
			if (!(atomic_load_explicit(&uffd.gen,
						   memory_order_seq_cst) & 1))
				return 0;
		} else if (ret != -EAGAIN) {
			return ret;
		}
		/* An event is in flight: the monitor thread reads it within
		 * microseconds. Waiting beats invalidating a region that
		 * the event most likely does not touch. */
		sched_yield();
	}
	return -EAGAIN;
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
	while (rc_load_acquire(&uffd.gen) & 1)
		sched_yield();
}

static void close_fds(void)
{
	if (uffd.fd >= 0)
		close(uffd.fd);
	if (uffd.stop_fd >= 0)
		close(uffd.stop_fd);
	rc_vma_source_close(&uffd.vmas);
	uffd.fd = uffd.stop_fd = -1;
}

static void reset_tables(void)
{
	rc_range_set_free(&uffd.areas);
	rc_range_count_free(&uffd.watches);
	uffd.unwatch_since_sweep = 0;
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

/* With the empty probe nothing needs the sentinel any more: a page of ours
 * that stays registered is one more page whose loss (an application's
 * MAP_FIXED over an address it does not own) we would have to survive. No
 * thread reads yet: unregister before the unmap, and keep the page mapped
 * if that fails (closing the fd unregisters it). */
static void drop_sentinel(void)
{
	struct uffdio_range r = { (uintptr_t)uffd.sentinel, uffd.page };

	if (ioctl(uffd.fd, UFFDIO_UNREGISTER, &r))
		return;
	munmap(uffd.sentinel, uffd.page);
	uffd.sentinel = NULL;
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
	uffd.page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uffd.fd = open_uffd();
	if (uffd.fd < 0) {
		ret = uffd.fd;
		uffd.fd = -1;
		return ret;
	}
	if (ioctl(uffd.fd, UFFDIO_API, &api)) {
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
	uffd.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (uffd.stop_fd < 0) {
		ret = -errno;
		rc_info("userfaultfd monitor unavailable: eventfd: %s"
			RC_UFFD_SEE_INFO, strerror(-ret));
		goto fail;
	}
	rc_vma_source_open(&uffd.vmas, RC_ENV_UFFD_NO_PROCMAP_QUERY);

	/* The sentinel proves that WP registration works (Linux 5.7+ for
	 * anonymous memory) and is what ->validate() probes. */
	/* PROT_READ: its VMA flags differ from every read-write mapping, so
	 * the kernel never merges it into a watched VMA that a sweep could
	 * later unregister together with it. */
	uffd.sentinel = mmap(NULL, uffd.page, PROT_READ,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (uffd.sentinel == MAP_FAILED) {
		ret = -errno;
		uffd.sentinel = NULL;
		rc_info("userfaultfd monitor unavailable: mmap of its sentinel "
			"page: %s" RC_UFFD_SEE_INFO, strerror(-ret));
		goto fail;
	}
	rc_store_relaxed(&uffd.zeropage_probe,
			 (api.ioctls & (1ull << _UFFDIO_ZEROPAGE)) &&
				 !rc_env_flag(RC_ENV_UFFD_WP_PROBE));
	ret = register_sentinel();
	if (!ret)
		ret = probe();
	if (ret) {
		rc_info("userfaultfd monitor unavailable: write-protect mode on "
			"anonymous memory does not work here: %s (Linux 5.7+ "
			"needed)" RC_UFFD_SEE_INFO, strerror(-ret));
		goto fail;
	}
	uffd.empty_probe = !rc_env_flag(RC_ENV_UFFD_SENTINEL_PROBE) &&
			   empty_probe_works();
	if (!uffd.empty_probe)
		rc_debug("hits probe the sentinel page (%s)",
			 rc_load_relaxed(&uffd.zeropage_probe) ?
				 "UFFDIO_ZEROPAGE" :
					       "UFFDIO_WRITEPROTECT");
	else
		drop_sentinel();

	atomic_store_explicit(&uffd.gen, 0, memory_order_relaxed);
	atomic_store_explicit(&uffd.ready, 0, memory_order_relaxed);
	atomic_store_explicit(&uffd.stopping, false, memory_order_relaxed);
	atomic_store_explicit(&uffd.map_gen, 1, memory_order_relaxed);
	atomic_store_explicit(&uffd.app_cpu, -1, memory_order_relaxed);
	uffd.follow_cpu = !rc_env_flag(RC_ENV_UFFD_NO_FOLLOW_CPU);
	uffd.pinned_cpu = -1;
	uffd.solo_tid = (pid_t)syscall(SYS_gettid);
	uffd.solo_fd = -1;
	uffd.unreg_gen = 0;
	/* Signals go to the application's threads, never to ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	ret = -pthread_create(&uffd.thread, &attr, monitor_thread, mon);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		rc_info("userfaultfd monitor unavailable: cannot start its "
			"thread: %s" RC_UFFD_SEE_INFO, strerror(-ret));
		goto fail;
	}
	uffd.thread_running = true;
	while (!rc_load_acquire(&uffd.ready))
		sched_yield();
	solo_start();
	mon->caps = (struct rc_monitor_caps){
		.can_cache = true,
		.synchronous = false,
		.validate_hits = true,
	};
	mon->backend = &uffd;
	/* From here the hit path reads our word (see drain()). */
	mon->gen = &uffd.gen;
	return 0;
fail:
	/* No thread reads: close first (releasing the context unregisters
	 * the sentinel), then unmap. */
	close_fds();
	if (uffd.sentinel)
		munmap(uffd.sentinel, uffd.page);
	uffd.sentinel = NULL;
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

	for (size_t a = 0; a < uffd.areas.n; a++) {
		err = uffd_unregister(uffd.areas.r[a].start,
				      uffd.areas.r[a].end);
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
		if (!unwatchable(&q) && r.start != (uintptr_t)uffd.sentinel &&
		    ioctl(uffd.fd, UFFDIO_UNREGISTER, &r) && errno != EINVAL &&
		    !ret)
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

	if (!uffd.thread_running)
		return;
	atomic_store_explicit(&uffd.stopping, true, memory_order_seq_cst);
	while ((n = write(uffd.stop_fd, &one, sizeof(one))) < 0 &&
	       errno == EINTR)
		;
	if (n < 0) {
		rc_error("userfaultfd monitor: cannot wake its thread (%s): "
			 "cancelling it", strerror(errno));
		pthread_cancel(uffd.thread);
	}
	pthread_join(uffd.thread, NULL);
	uffd.thread_running = false;
}

static void uffd_stop(struct rc_monitor *mon)
{
	struct uffdio_range sr = { (uintptr_t)uffd.sentinel, uffd.page };
	bool sentinel_registered = false;
	int ret;

	solo_stop(false);
	/* The thread keeps reading while we unregister, so threads that
	 * are unmapping now never wait for a reader that is gone. No cache
	 * is left to call watch/unwatch, so uffd.lock is not taken: fork's
	 * prepare handlers take uffd.lock before the monitor lock, which we
	 * hold here. */
	ret = unregister_all();
	reset_tables();
	/* Changes begun before the unregistration raised mmap_changing;
	 * once the probe succeeds the thread has read them all, and
	 * nothing registered is left to raise it again. */
	while (hit_probe() == -EAGAIN)
		sched_yield();
	if (uffd.sentinel) {
		sentinel_registered = ioctl(uffd.fd, UFFDIO_UNREGISTER, &sr);
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
	if (dup3(uffd.stop_fd, uffd.fd, O_CLOEXEC) < 0)
		rc_error("userfaultfd monitor: dup3: %s", strerror(errno));
	stop_thread();
	/* Before any unmap, for the same reason. */
	close_fds();
	/* A forked child may still hold a copy of the fd and keep the
	 * context alive: then a sentinel we could not unregister stays
	 * mapped (one page) rather than risk a munmap that never returns. */
	if (uffd.sentinel && !sentinel_registered)
		munmap(uffd.sentinel, uffd.page);
	uffd.sentinel = NULL;
	mon->gen = &mon->queue_head;
	rc_debug("userfaultfd monitor stopped after %llu events",
		 (unsigned long long)rc_load_relaxed(&uffd.events));
}

/* In a forked child: the thread does not exist here, and the child's VMAs
 * lost their registration at fork (no EVENT_FORK). Only close our copies of
 * the fds: the parent's copy keeps its context alive, and any ioctl through
 * the inherited fd (unregister, read) would act on the parent's context. */
static void uffd_forked(struct rc_monitor *mon)
{
	/* Another thread of the child may still read uffd.gen: it is static
	 * memory, so leaving it behind is harmless. */
	mon->gen = &mon->queue_head;
	solo_stop(true);
	close_fds();
	if (uffd.sentinel)
		munmap(uffd.sentinel, uffd.page);	/* the child's copy */
	uffd.sentinel = NULL;
	uffd.thread_running = false;
	reset_tables();
}

const struct rc_monitor_ops rc_monitor_uffd_ops = {
	.name = "userfaultfd",
	.start = uffd_start,
	.watch = uffd_watch,
	.unwatch = uffd_unwatch,
	.pull = uffd_pull,
	.validate = uffd_validate,
	.forked = uffd_forked,
	.stop = uffd_stop,
};
