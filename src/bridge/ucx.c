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
 * before its next lookup. So the bridge forwards what changed at the start
 * of every lookup, in the looking thread, and a lookup that starts after a
 * change returned cannot hit the old registration. It interposes
 *  - ucs_rcache_create (every cache is created through the PLT): the moment
 *    UCX is surely loaded, also when it was dlopened late, and the last
 *    moment to declare the event external;
 *  - ucs_rcache_get, which UCP's and UCT's lookups reach through the PLT
 *    (all of them on UCX 1.13; the misses on UCX >= 1.14);
 *  - ucs_pgtable_lookup, the one call that UCP >= 1.14's inline lookup
 *    (ucs_rcache_lookup_unsafe) makes through the PLT, after it has found
 *    the invalidation queue empty: when something changed, the bridge
 *    forwards it and answers "not found", so UCP takes the slow path,
 *    which applies the queue.
 * The bridge replaces UCX's libc hooks only when it has checked that every
 * lookup reaches it (the relocations of the loaded libucp) and regcache-run
 * turned the hooks off; otherwise UCX keeps its hooks and the bridge adds
 * what they miss, from the lookups it reaches and from a thread.
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

/* The head of ucm_global_config_t and the hook modes, from ucm/api/ucm.h
 * (the same from UCX 1.2 to 1.22): "can be safely modified before using
 * UCM functions", which is how UCX's hooks are put back. */
struct ucm_global_config_head {
	int log_level;
	int enable_events;
	int mmap_hook_mode;
};
#define UCM_MMAP_HOOK_NONE 0
#define UCM_MMAP_HOOK_BISTRO 2	/* UCX's default on x86_64 */

/* ucs_pgt_region_t (ucs/datastruct/pgtable.h, unchanged since 1.2). */
struct ucs_pgt_region_head {
	uintptr_t start, end;
};

/* How the bridge stands towards UCX, decided once in setup(). */
enum ucx_bridge_mode {
	UCX_ALONE,		/* no monitor that can cache: UCX's hooks */
	UCX_REPLACED,		/* every lookup reaches us; hooks off */
	UCX_BESIDE_HOOKS,	/* UCX's hooks on; we add what they miss */
	UCX_THREAD_ONLY,	/* REGCACHE_UCX_THREAD=1: only a thread forwards */
};

static struct {
	pthread_once_t once;
	struct regcache_subscriber *sub;
	unsigned caps;
	enum ucx_bridge_mode mode;
	bool active;		/* we forward (any mode but UCX_ALONE) */
	bool thread_mode;	/* a forwarding thread runs */
	/* UCP's inline lookups reach ucs_pgtable_lookup; set last, with
	 * release, once every field the interposer reads is. */
	_Atomic bool inline_forward;
	uintptr_t ucp_text_start, ucp_text_end;	/* libucp's code */
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
extern char rc_own_ucs_rcache_get[] rc_bridge_hidden;
rc_bridge_hidden void *rc_ucx_pgtable_lookup(const void *pgtable,
					      uintptr_t address);
static void *_Atomic real_pgtable_lookup;

/* A call into ucs_pgtable_lookup before setup (libucs's own, during its
 * start): the real one, in the libucs that defines it. */
static void *resolve_pgtable_lookup(void)
{
	void *p = NULL, *h = rc_bridge_find_definer("ucs_pgtable_lookup", &p);

	if (!h) {
		fprintf(stderr, "regcache-ucx: ucs_pgtable_lookup reached the "
			"bridge but no libucs defines it; aborting\n");
		abort();
	}
	atomic_store_explicit(&real_pgtable_lookup, p, memory_order_release);
	return p;
}

/* ------------------------------------------------------------------------
 * Finding the UCX that is loaded
 * ---------------------------------------------------------------------- */

/* UCP's version (major * 1000 + minor) from the libucp behind @ucp. */
static unsigned ucp_version(void *ucp)
{
	void (*get)(unsigned *, unsigned *, unsigned *);
	unsigned major = 0, minor = 0, release = 0;

	get = (void (*)(unsigned *, unsigned *, unsigned *))dlsym(ucp, "ucp_get_version");
	if (get)
		get(&major, &minor, &release);
	return major * 1000 + minor;
}

/* Whether @object's calls to @sym reach the bridge's definition @ours: it
 * binds @sym at run time and the process's global scope (where preloaded
 * and earlier-linked objects come first) resolves @sym to us. */
static bool call_reaches_us(void *object, const char *sym, void *ours)
{
	return (!object || rc_bridge_imports(object, sym)) &&
	       dlsym(RTLD_DEFAULT, sym) == ours;
}

/*
 * Whether every registration lookup of this UCX reaches the bridge before
 * it can hit: UCP's and UCT's misses and UCX 1.13's hits through
 * ucs_rcache_get, and UCP >= 1.14's inline hits through
 * ucs_pgtable_lookup. NULL, or the reason why not.
 */
static const char *lookups_reach_us(void *ucp, unsigned version)
{
	if (!call_reaches_us(NULL, "ucs_rcache_get", (void *)rc_own_ucs_rcache_get))
		return "ucs_rcache_get resolves to libucs, not to the bridge "
		       "(preload it, or link it before libucs)";
	if (!ucp || version < 1014)
		return NULL;
	if (!call_reaches_us(ucp, "ucs_pgtable_lookup", (void *)rc_ucx_pgtable_lookup))
		return "libucp's inline lookups do not call ucs_pgtable_lookup "
		       "through the PLT";
	if (!rc_bridge_text(ucp, &ub.ucp_text_start, &ub.ucp_text_end))
		return "libucp's code segment was not found";
	return NULL;
}

/* Put UCX's libc hooks back where regcache-run turned them off: the
 * bridge never removes protection it cannot replace. Before the first
 * cache subscribes, which is when UCM installs them. */
static void keep_ucx_hooks(void *ucs)
{
	const char *mode = getenv("UCX_MEM_MMAP_HOOK_MODE");
	struct ucm_global_config_head *opts;

	if (!mode || strcmp(mode, "none"))
		return;
	opts = dlsym(ucs, "ucm_global_opts");
	if (opts && opts->mmap_hook_mode == UCM_MMAP_HOOK_NONE)
		opts->mmap_hook_mode = UCM_MMAP_HOOK_BISTRO;
	else if (!opts)
		rc_bridge_log("regcache-ucx: ucm_global_opts not found: UCX's "
			      "hooks stay off (UCX_MEM_MMAP_HOOK_MODE=none)");
}

/* ------------------------------------------------------------------------
 * Forwarding
 * ---------------------------------------------------------------------- */

#define RC_UCX_ALL_END ((uintptr_t)1 << 57)

static void forward(void *arg, uintptr_t start, uintptr_t end)
{
	(void)arg;
	if (start == 0 && end == UINTPTR_MAX)
		/* Everything: the whole user address space in any paging
		 * mode (x86_64's 5-level paging ends below 2^56, arm64's
		 * below 2^52). No larger: UCX (>= 1.12) sums the sizes of
		 * the queued ranges in a size_t and asserts that it never
		 * wraps; at 2^57 each, that takes 128 of them. */
		end = RC_UCX_ALL_END;
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
	/* REGCACHE_UCX_THREAD=1 leaves every lookup to the thread: that
	 * shows the window a forwarding thread alone would leave. */
	if (!ub.active || ub.mode == UCX_THREAD_ONLY || !len)
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

/*
 * ucs_pgtable_lookup, interposed: UCP >= 1.14's inline lookup calls it
 * after finding the invalidation queue empty, so a change forwarded now
 * would be too late for this lookup: when something changed, forward it
 * and answer "not found" (UCP then takes the slow path, through
 * ucs_rcache_get, which applies the queue). Only UCP's calls are checked:
 * libucs's own lookups run under its locks and behind ucs_rcache_get,
 * and other caches (memory types, IPC) keep their own rules.
 */
rc_bridge_hidden void *rc_ucx_pgtable_lookup(const void *pgtable,
					      uintptr_t address)
{
	void *(*real)(const void *, uintptr_t) = atomic_load_explicit(
		&real_pgtable_lookup, memory_order_acquire);
	uintptr_t caller = (uintptr_t)__builtin_return_address(0);
	struct ucs_pgt_region_head *r;

	if (rc_bridge_unlikely(!real))
		real = resolve_pgtable_lookup();
	if (!atomic_load_explicit(&ub.inline_forward, memory_order_acquire) ||
	    caller - ub.ucp_text_start >= ub.ucp_text_end - ub.ucp_text_start)
		return real(pgtable, address);
	if (!regcache_subscriber_current(ub.sub)) {
		sync_forward();
		return NULL;
	}
	r = real(pgtable, address);
	/* Userfaultfd: a change to the region may be read but not yet
	 * published; the probe waits for it (as in rc_ucx_before_get). The
	 * monitor's caps are read now, not at setup: a process whose
	 * regcached went away continues on userfaultfd. */
	if (r && (regcache_subscriber_caps(ub.sub) &
		  REGCACHE_MONITOR_CHECK_HITS) &&
	    regcache_subscriber_check(ub.sub, (void *)r->start, r->end - r->start)) {
		ub.vm_munmap((void *)r->start, r->end - r->start);
		return NULL;
	}
	if (r && !regcache_subscriber_current(ub.sub)) {
		sync_forward();
		return NULL;
	}
	return r;
}
extern __typeof__(rc_ucx_pgtable_lookup) ucs_pgtable_lookup
	__attribute__((alias("rc_ucx_pgtable_lookup"), visibility("default")));

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

/* Monitor and UCX are known: how the bridge stands (see the enum). */
static enum ucx_bridge_mode choose_mode(const char *unreached, bool forced)
{
	if (!(ub.caps & REGCACHE_MONITOR_CAN_CACHE))
		return UCX_ALONE;
	if (forced)
		return UCX_THREAD_ONLY;
	if (unreached)
		return UCX_BESIDE_HOOKS;
	return UCX_REPLACED;
}

static void start_thread(void)
{
	bool poll;
	long long poll_us = rc_env_time(RC_ENV_UCX_POLL_US, &poll);

	/* 0: sleep in regcache_subscriber_wait(). */
	ub.poll_ns = poll ? poll_us * 1000 : 0;
	if (poll && (ub.poll_ns <= 0 || ub.poll_ns >= 1000000000))
		ub.poll_ns = 20000;
	ub.linger_ns = rc_env_time(RC_ENV_UCX_LINGER_US, NULL) * 1000;
	/* Unmapped at exit: a change that wakes the thread. */
	ub.wake_page = mmap(NULL, ub.page_mask + 1, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pthread_create(&ub.thread, NULL, forward_thread, NULL)) {
		/* Forward from the lookups that reach us after all. */
		ub.thread_mode = false;
		rc_bridge_log("regcache-ucx: cannot start the forwarding thread; "
			      "forwarding only from the lookups that reach the "
			      "bridge");
		return;
	}
	ub.thread_pid = getpid();
	atexit(stop_thread);
}

static void setup(void)
{
	const char *hook_mode = getenv("UCX_MEM_MMAP_HOOK_MODE");
	bool hooks_off = hook_mode && !strcmp(hook_mode, "none");
	const char *unreached;
	unsigned version = 0;
	void *h, *ucp, *p;
	int ret;

	ub.page_mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
	h = rc_bridge_find_definer("ucs_rcache_create", &rc_ucx_real_create);
	if (!h) {
		rc_bridge_log("regcache-ucx: no libucs found in this process");
		return;
	}
	rc_ucx_real_get = dlsym(h, "ucs_rcache_get");
	if (!atomic_load(&real_pgtable_lookup) && dlsym(h, "ucs_pgtable_lookup"))
		resolve_pgtable_lookup();
	/* dlsym on a handle searches its dependencies: the libucm that this
	 * libucs uses, never another copy. */
	ub.set_external_event = (void (*)(int))dlsym(h, "ucm_set_external_event");
	ub.vm_munmap = (void (*)(void *, size_t))dlsym(h, "ucm_vm_munmap");
	if (!rc_ucx_real_get || !ub.set_external_event || !ub.vm_munmap ||
	    !atomic_load(&real_pgtable_lookup)) {
		rc_bridge_log("regcache-ucx: this libucs lacks ucs_rcache_get, "
			      "ucs_pgtable_lookup or libucm's external events; "
			      "UCX keeps its own hooks");
		keep_ucx_hooks(h);
		return;
	}
	ucp = rc_bridge_find_definer("ucp_get_version", &p);
	if (ucp)
		version = ucp_version(ucp);
	unreached = lookups_reach_us(ucp, version);
	if (ucp)
		dlclose(ucp);	/* still loaded: only our reference goes */
	ret = regcache_subscriber_create(&ub.sub);
	if (ret) {
		rc_bridge_log("regcache-ucx: no regcache monitor (%s); UCX keeps "
			      "its own hooks", strerror(-ret));
		keep_ucx_hooks(h);
		return;
	}
	ub.caps = regcache_subscriber_caps(ub.sub);
	ub.mode = choose_mode(unreached, rc_env_bool(RC_ENV_UCX_THREAD));
	switch (ub.mode) {
	case UCX_ALONE:
		rc_bridge_log("regcache-ucx: regcache monitor \"%s\" reports "
			      "nothing; UCX keeps its own memory hooks",
			      regcache_monitor_name());
		regcache_subscriber_destroy(ub.sub);
		ub.sub = NULL;
		keep_ucx_hooks(h);
		return;
	case UCX_BESIDE_HOOKS:
		if (hooks_off)
			rc_bridge_log("regcache-ucx: %s; UCX keeps its own "
				      "memory hooks and the bridge adds what they "
				      "miss", unreached);
		keep_ucx_hooks(h);
		ub.thread_mode = true;
		break;
	case UCX_REPLACED:
		/* Hooks that the user kept stay on: the event stays theirs
		 * too, and the bridge only adds. */
		if (hooks_off)
			ub.set_external_event(UCM_EVENT_VM_UNMAPPED);
		break;
	case UCX_THREAD_ONLY:
		if (hooks_off)
			ub.set_external_event(UCM_EVENT_VM_UNMAPPED);
		ub.thread_mode = true;
		break;
	}
	ub.active = true;
	if (ub.thread_mode)
		start_thread();
	/* The thread-only demonstration leaves every lookup to the thread. */
	if (ub.mode != UCX_THREAD_ONLY && version >= 1014 && !unreached)
		atomic_store_explicit(&ub.inline_forward, true,
				      memory_order_release);
	rc_bridge_info("regcache-ucx: UCX unmap events come from regcache "
		       "monitor \"%s\" (UCX %u.%u: %s%s)", regcache_monitor_name(),
		       version / 1000, version % 1000,
		       ub.mode == UCX_THREAD_ONLY ? "forwarding thread only" :
		       ub.thread_mode ? "before the lookups that reach the "
					"bridge, and a forwarding thread" :
					"before every lookup",
		       hooks_off && ub.mode == UCX_REPLACED ?
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
