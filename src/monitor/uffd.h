/* SPDX-License-Identifier: MIT */
/*
 * What the three files of the userfaultfd backend share: its state, one
 * struct for the process (rc_uffd), and the calls between them.
 *   uffd.c        the backend's ops but ->validate(), and its thread;
 *   uffd_probe.c  whether a change of a registered VMA is in flight: the
 *                 sentinel, the hit probe and its self-test, ->validate();
 *   uffd_solo.c   single-thread detection: while the process has one
 *                 application thread, its hits skip the probe.
 */
#ifndef RC_MONITOR_UFFD_H
#define RC_MONITOR_UFFD_H

#include <errno.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>

#include "../base/compat.h"
#include "../kernel/vma.h"
#include "backend.h"
#include "ranges.h"

/* Every "unavailable" line ends with this: the tool explains the
 * machine's settings (sysctls, seccomp, kernel version) in full. */
#define RC_UFFD_SEE_INFO "; regcache-info shows why"

struct rc_uffd {
	int fd;
	int stop_fd;		/* eventfd: wakes the thread for stop() */
	struct rc_vma_source vmas;	/* for ->watch() */
	bool thread_running;
	pthread_t thread;
	uintptr_t page;
	char *sentinel;		/* one registered page, or NULL */
	/* Probe with UFFDIO_ZEROPAGE (cheaper). The sweep may turn it off
	 * (rc_uffd_register_sentinel) while hits read it: relaxed atomics,
	 * since either probe answers correctly. */
	_Atomic bool zeropage_probe;
	bool empty_probe;	/* hits probe an empty range (cheapest) */

	/* One application thread (solo_*): see rc_uffd_solo_hit(). */
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
};

extern rc_hidden struct rc_uffd rc_uffd;

/* Register [start, end) in write-protect mode: 0 or -errno. */
static inline int rc_uffd_register(uintptr_t start, uintptr_t end)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = end - start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(rc_uffd.fd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}

/* uffd_probe.c. At start(), before the thread: map and register the
 * sentinel and choose the hit probe (@ioctls: UFFDIO_API's answer); 0, or
 * -errno with the reason logged. */
rc_hidden int rc_uffd_probe_start(uint64_t ioctls);
rc_hidden int rc_uffd_register_sentinel(void);
rc_hidden int rc_uffd_hit_probe(void);
rc_hidden int rc_uffd_validate(struct rc_monitor *mon, uintptr_t start,
			       uintptr_t end);

/* uffd_solo.c */
rc_hidden int rc_uffd_solo_open_event(pid_t tid);
rc_hidden void rc_uffd_solo_start(void);
rc_hidden void rc_uffd_solo_stop(bool child);
rc_hidden bool rc_uffd_solo_recheck(uint64_t head);

/* A hit that may skip the probe: see the proof in uffd_solo.c. */
static inline bool rc_uffd_solo_hit(void)
{
	uint64_t head;

	if (!rc_load_acquire(&rc_uffd.solo) ||
	    !pthread_equal(pthread_self(), rc_uffd.solo_thread))
		return false;
	/* Acquire, as perf's protocol wants before reading records. */
	head = __atomic_load_n(&rc_uffd.solo_ring->data_head, __ATOMIC_ACQUIRE);
	if (head != rc_uffd.solo_head && !rc_uffd_solo_recheck(head))
		return false;
	/* As the probe path: the published state, not a batch half done. */
	return !(atomic_load_explicit(&rc_uffd.gen, memory_order_seq_cst) & 1);
}

#endif /* RC_MONITOR_UFFD_H */
