/* SPDX-License-Identifier: MIT */
/*
 * libregcache-ucx.so: UCX's registration cache (ucs_rcache) takes its
 * invalidations from regcache's process-wide monitor instead of from libc
 * hooks. Linked before libucs, or LD_PRELOADed (tools/regcache-run), into an
 * unmodified UCX program. See docs/bridges.md.
 *
 * UCX accepts unmap events from outside: a caller that has declared
 * ucm_set_external_event(UCM_EVENT_VM_UNMAPPED) before the first cache
 * subscribes feeds ranges with ucm_vm_munmap(), which every rcache applies
 * before its next lookup. The bridge
 *  - interposes ucs_rcache_create (every cache is created through the PLT):
 *    the moment UCX is surely loaded, also when it was dlopened late, and
 *    the last moment to declare the event external;
 *  - interposes ucs_rcache_get, which UCX 1.13 reaches through the PLT from
 *    libucp and libuct: before each lookup, if regcache's generation moved,
 *    forward what changed. No window is left;
 *  - on UCX >= 1.14, whose UCP looks up inline, also runs a forwarding
 *    thread; the window it leaves is measured in docs/bridges.md.
 * Symbols of UCX are resolved in the libucs that defines the real
 * ucs_rcache_create, so no second libucm is ever loaded.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <regcache.h>
#include <regcache/monitor.h>

#include "bridge.h"

/* From ucm/api/ucm.h (stable since UCX 1.2): the bridge does not include
 * UCX headers, so one build serves every UCX version. */
#define UCM_EVENT_VM_UNMAPPED (1 << 17)

/* Every ucs_status_t is an int-sized enum; 0 is UCS_OK. */
typedef int ucx_status_t;

static struct {
	pthread_once_t once;
	struct regcache_subscriber *sub;
	unsigned caps;
	bool active;		/* external event declared; we forward */
	bool thread_mode;
	pthread_t thread;
	pid_t thread_pid;	/* the process that started it */
	_Atomic bool stop;
	long poll_ns;		/* 0: the thread sleeps until a change */
	/* How long it keeps polling after a change before it sleeps again: a
	 * woken thread needs the scheduler (in a VM, the host) to run it, a
	 * polling one is running already, so changes that come in bursts
	 * keep the polling window. Nothing is spent once changes stop. */
	int64_t linger_ns;
	void *wake_page;
	uintptr_t page_mask;
	void (*set_external_event)(int events);
	void (*vm_munmap)(void *addr, size_t len);
	_Atomic unsigned long forwarded;	/* ranges, for the tests */
	_Atomic unsigned long watch_epoch;
} ub = { .once = PTHREAD_ONCE_INIT, .wake_page = MAP_FAILED };

static void setup(void);
static void stop_thread(void);

/* The real functions, jumped to by the trampolines below. */
rc_bridge_hidden void *rc_ucx_real_get;
rc_bridge_hidden void *rc_ucx_real_create;

/* ------------------------------------------------------------------------
 * Finding the UCX that is loaded
 * ---------------------------------------------------------------------- */

/* UCP's version, or 0 when libucp is not loaded. */
static unsigned ucp_minor_version(void)
{
	void (*get)(unsigned *, unsigned *, unsigned *) = NULL;
	unsigned major = 0, minor = 0, release = 0;
	void *h = rc_bridge_find_definer("ucp_get_version", (void **)&get);

	if (!h)
		return 0;
	get(&major, &minor, &release);
	dlclose(h);
	return major > 1 ? 1000 : minor;
}

/* ------------------------------------------------------------------------
 * Forwarding
 * ---------------------------------------------------------------------- */

static void forward(void *arg, uintptr_t start, uintptr_t end)
{
	(void)arg;
	if (start == 0 && end == UINTPTR_MAX)
		/* Everything: the whole user address space in any paging
		 * mode, without letting UCX's addr + len wrap. */
		end = (UINTPTR_MAX >> 1) & ~ub.page_mask;
	ub.vm_munmap((void *)start, end - start);
	atomic_fetch_add_explicit(&ub.forwarded, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&ub.watch_epoch, 1, memory_order_release);
}

static void sync_forward(void)
{
	regcache_subscriber_sync(ub.sub, forward, NULL);
}

/*
 * Ranges already watched, so that a hit costs no system call: a slot holds
 * a fingerprint of (start, end, watch epoch). Any forwarded range moves the
 * epoch, so after a change every range is watched again before its next
 * lookup (the subscriber drops the watches a change overlaps).
 */
#define MEMO_SLOTS 4096u
static _Atomic uint64_t memo[MEMO_SLOTS];

static uint64_t fingerprint(uintptr_t start, uintptr_t end, unsigned long ep)
{
	uint64_t h = (start * 0x9e3779b97f4a7c15ull) ^ (end + ep * 0xff51afd7ed558ccdull);

	h ^= h >> 29;
	return (h * 0xbf58476d1ce4e5b9ull) | 1;
}

/* Before UCX looks [addr, addr+len) up in @rcache, on any thread (the
 * trampoline: ucs_rcache_get(rcache, address, length, ...)). */
rc_bridge_hidden void rc_ucx_before_get(void *rcache, void *addr, size_t len)
{
	uintptr_t start, end;
	uint64_t fp;
	unsigned long ep;

	(void)rcache;
	/* Once set up, an atomic load: and it orders ub's fields after
	 * setup() for every thread (the flag, the function pointers). */
	pthread_once(&ub.once, setup);
	if (rc_bridge_unlikely(!rc_ucx_real_get))
		rc_ucx_resolve();
	/* In thread mode UCX (>= 1.14) looks hits up inline, without us: do
	 * nothing here either, so that a forced thread mode on UCX 1.13
	 * (REGCACHE_UCX_THREAD=1) shows the window newer UCX has. */
	if (!ub.active || ub.thread_mode || !len)
		return;
	start = (uintptr_t)addr & ~ub.page_mask;
	end = ((uintptr_t)addr + len + ub.page_mask) & ~ub.page_mask;
	/* Userfaultfd: wait until no change is in flight, so that the sync
	 * below has every change that returned before this lookup; if one
	 * stays in flight, make the lookup miss. The probe must come first. */
	if ((regcache_subscriber_caps(ub.sub) & REGCACHE_MONITOR_CHECK_HITS) &&
	    regcache_subscriber_check(ub.sub, addr, len))
		ub.vm_munmap((void *)start, end - start);
	if (!regcache_subscriber_current(ub.sub))
		sync_forward();
	ep = atomic_load_explicit(&ub.watch_epoch, memory_order_acquire);
	fp = fingerprint(start, end, ep);
	if (atomic_load_explicit(&memo[fp % MEMO_SLOTS],
				 memory_order_relaxed) != fp) {
		if (regcache_subscriber_watch(ub.sub, addr, len)) {
			/* Not provable (a private file mapping...): make the
			 * lookup miss, so UCX registers the pages now. */
			ub.vm_munmap((void *)start, end - start);
			return;
		}
		atomic_store_explicit(&memo[fp % MEMO_SLOTS], fp,
				      memory_order_relaxed);
	}
}

static int64_t monotonic_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}


/* UCX >= 1.14: UCP's hit path is inline, so a thread forwards. It sleeps
 * until the monitor reports a change, then polls every 20 us while changes
 * keep coming; REGCACHE_UCX_POLL_US, or a monitor that cannot wake it,
 * makes it poll always. */
static void *forward_thread(void *arg)
{
	struct timespec ts = { 0, ub.poll_ns ? ub.poll_ns : 20000 };
	int64_t last_change = 0;

	(void)arg;
	prctl(PR_SET_NAME, "rc-ucx-forward");
	/* The default 50 us timer slack would more than double the window. */
	prctl(PR_SET_TIMERSLACK, 1000ul);
	while (!atomic_load_explicit(&ub.stop, memory_order_relaxed)) {
		int ret;

		if (!regcache_subscriber_current(ub.sub)) {
			sync_forward();
			last_change = monotonic_ns();
			continue;
		}
		if (ub.poll_ns || monotonic_ns() - last_change < ub.linger_ns) {
			nanosleep(&ts, NULL);
			continue;
		}
		/* The timeout only bounds how late a lost stop is seen. */
		ret = regcache_subscriber_wait(ub.sub, 250);
		if (ret && ret != -ETIMEDOUT) {
			rc_bridge_log("regcache-ucx: cannot sleep until the "
				      "monitor reports a change (%s); polling "
				      "every 20 us instead", strerror(-ret));
			ub.poll_ns = ts.tv_nsec;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * Setup: once, at the first UCX cache or in the constructor
 * ---------------------------------------------------------------------- */

static void setup(void)
{
	const char *hook_mode = getenv("UCX_MEM_MMAP_HOOK_MODE");
	const char *force = getenv("REGCACHE_UCX_THREAD");
	unsigned minor = ucp_minor_version();
	void *h;
	int ret;

	ub.page_mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
	h = rc_bridge_find_definer("ucs_rcache_create", &rc_ucx_real_create);
	if (!h) {
		rc_bridge_log("regcache-ucx: no libucs found in this process");
		return;
	}
	rc_ucx_real_get = dlsym(h, "ucs_rcache_get");
	/* dlsym on a handle searches its dependencies: the libucm that this
	 * libucs uses, never another copy. */
	ub.set_external_event = (void (*)(int))dlsym(h, "ucm_set_external_event");
	ub.vm_munmap = (void (*)(void *, size_t))dlsym(h, "ucm_vm_munmap");
	if (!rc_ucx_real_get || !ub.set_external_event || !ub.vm_munmap) {
		rc_bridge_log("regcache-ucx: this libucs lacks ucs_rcache_get or "
			      "libucm's external events; UCX keeps its own hooks");
		return;
	}
	ret = regcache_subscriber_create(&ub.sub);
	if (ret) {
		rc_bridge_log("regcache-ucx: no regcache monitor (%s); UCX keeps "
			      "its own hooks", strerror(-ret));
		return;
	}
	ub.caps = regcache_subscriber_caps(ub.sub);
	ub.thread_mode = (force && *force == '1') || minor >= 14;
	if (!(ub.caps & REGCACHE_MONITOR_CAN_CACHE) ||
	    (ub.thread_mode && !(ub.caps & REGCACHE_MONITOR_SYNCHRONOUS))) {
		/* Never remove protection we cannot replace. */
		rc_bridge_log("regcache-ucx: regcache monitor \"%s\" %s; UCX "
			      "keeps its own memory hooks%s",
			      regcache_monitor_name(),
			      ub.caps & REGCACHE_MONITOR_CAN_CACHE ?
				      "cannot feed UCX's inline lookups in time" :
				      "reports nothing",
			      hook_mode && !strcmp(hook_mode, "none") ?
				      " (with UCX_MEM_MMAP_HOOK_MODE=none UCX "
				      "runs without its registration cache)" : "");
		regcache_subscriber_destroy(ub.sub);
		ub.sub = NULL;
		return;
	}
	ub.set_external_event(UCM_EVENT_VM_UNMAPPED);
	ub.active = true;
	if (ub.thread_mode) {
		const char *poll = getenv("REGCACHE_UCX_POLL_US");
		const char *linger = getenv("REGCACHE_UCX_LINGER_US");

		/* 0: sleep in regcache_subscriber_wait(). */
		ub.poll_ns = poll ? atol(poll) * 1000 : 0;
		if (poll && (ub.poll_ns <= 0 || ub.poll_ns >= 1000000000))
			ub.poll_ns = 20000;
		ub.linger_ns = (linger ? atol(linger) : 2000) * 1000;
		/* Unmapped at exit: a change that wakes the thread. */
		ub.wake_page = mmap(NULL, ub.page_mask + 1, PROT_NONE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pthread_create(&ub.thread, NULL, forward_thread, NULL)) {
			/* Forward from the lookups that reach us after all:
			 * every one on 1.13, the misses on newer UCX. */
			ub.thread_mode = false;
			rc_bridge_log("regcache-ucx: cannot start the forwarding "
				      "thread; forwarding only from the lookups "
				      "that reach ucs_rcache_get");
		} else {
			ub.thread_pid = getpid();
			atexit(stop_thread);
		}
	}
	rc_bridge_info("regcache-ucx: UCX unmap events come from regcache "
		       "monitor \"%s\" (%s%s)", regcache_monitor_name(),
		       ub.thread_mode ? "forwarding thread" : "before every lookup",
		       hook_mode && !strcmp(hook_mode, "none") ?
			       ", UCX's libc hooks off" : ", UCX's libc hooks also on");
}

rc_bridge_hidden void rc_ucx_resolve(void)
{
	pthread_once(&ub.once, setup);
	if (!rc_ucx_real_get || !rc_ucx_real_create) {
		fprintf(stderr, "regcache-ucx: a UCX call reached the bridge "
			"but no libucs defines it; aborting\n");
		abort();
	}
}

/* Before UCX creates a cache: the first one declares the event external. */
rc_bridge_hidden void rc_ucx_before_create(void)
{
	pthread_once(&ub.once, setup);
	if (!rc_ucx_real_create)
		rc_ucx_resolve();
}

/* Linked or preloaded into a program that already has UCX: declare the
 * event external before anything can create a cache. A UCX dlopened later
 * is set up at its first ucs_rcache_create. */
__attribute__((constructor)) static void ucx_bridge_init(void)
{
	void *p;
	void *h = rc_bridge_find_definer("ucs_rcache_create", &p);

	if (h) {
		dlclose(h);
		pthread_once(&ub.once, setup);
	}
}

/* From atexit(), which runs before any library's destructor: the thread
 * must not call into a libucm that is being torn down. */
static void stop_thread(void)
{
	/* A forked child has no such thread: joining it would wait forever. */
	if (getpid() != ub.thread_pid)
		return;
	atomic_store_explicit(&ub.stop, true, memory_order_relaxed);
	/* Wake a thread asleep in regcache_subscriber_wait() now rather
	 * than at its timeout. */
	if (ub.wake_page != MAP_FAILED)
		munmap(ub.wake_page, ub.page_mask + 1);
	pthread_join(ub.thread, NULL);
}

/**
 * regcache_ucx_bridge_forwarded - ranges forwarded to UCX so far
 *
 * Return: the count, or -1 when the bridge is not forwarding (no UCX, or
 * the monitor cannot replace UCX's hooks). For tests and diagnostics.
 */
rc_bridge_export long regcache_ucx_bridge_forwarded(void)
{
	return ub.active ? (long)atomic_load_explicit(&ub.forwarded,
						      memory_order_relaxed) : -1;
}

/* ------------------------------------------------------------------------
 * The interposers: save the argument registers, call the hook, restore
 * them and jump to the real function. Signature-agnostic (UCX 1.14 added
 * an alignment argument after length), so one build serves every UCX.
 * ---------------------------------------------------------------------- */

RC_BRIDGE_TRAMPOLINE(ucs_rcache_get, rc_ucx_before_get, rc_ucx_real_get);
RC_BRIDGE_TRAMPOLINE(ucs_rcache_create, rc_ucx_before_create, rc_ucx_real_create);
