/* SPDX-License-Identifier: MIT */
/*
 * libregcache-fabric.so: libfabric's MR cache takes its invalidations from
 * regcache's process-wide monitor. A struct fid_mem_monitor is imported
 * with fi_open("mr_cache") + fi_import_fid() before the first domain opens:
 * by regcache_fabric_import(), or by this library's constructor when it is
 * LD_PRELOADed (tools/regcache-run). See docs/bridges.md.
 *
 * libfabric calls the monitor with its global mm_lock held:
 *  - valid(addr, len) on every cache hit: regcache's generation check, then
 *    "no change overlapping the entry is still waiting to be notified".
 *    This is exact at lookup time, whatever thread changed the pages;
 *  - subscribe(addr, len) after the entry was pinned: watch the range, and
 *    refuse it (the entry is then served uncached) if a change to it was
 *    seen so recently that it may fall between the pin and this call;
 *  - unsubscribe(addr, len): unwatch (libfabric 1.17 never calls it).
 * notify(addr, len) takes mm_lock itself, so it is called only by the
 * bridge's own thread, which never holds it (libfabric#9003); notify just
 * reclaims entries early, correctness comes from valid().
 *
 * Lock order: mm_lock -> subscriber's lock -> fb.lock.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext.h>

#include <regcache.h>
#include <regcache/fabric.h>
#include <regcache/monitor.h>

#include "bridge.h"

/* Changes seen, not yet notified: valid() is false for what they overlap. */
#define PENDING_MAX 256
/* Changes seen lately, with when: subscribe() refuses what they overlap. */
#define RECENT_MAX 64

struct range {
	uintptr_t start, end;
	uint64_t seen_ns;
};

static struct {
	struct fid_mem_monitor mon;
	struct regcache_subscriber *sub;
	unsigned caps;
	bool imported;
	pthread_mutex_t lock;	/* pending, recent */
	pthread_cond_t wake;
	struct range pending[PENDING_MAX];
	unsigned npending;
	bool pending_all;	/* overflow or "everything": valid() is false */
	/* npending + pending_all, readable without the lock: written under it
	 * before the sync that found the change publishes its cursor, so a
	 * valid() that saw the cursor current sees this too. */
	_Atomic unsigned waiting;
	struct range recent[RECENT_MAX];
	unsigned recent_pos;
	uint64_t gap_ns;
	long poll_ns;
	pthread_t thread;
	pid_t thread_pid;	/* the process that started it */
	bool thread_started;
	_Atomic bool stop;
	/* Some MR cache uses the monitor. Before the first one, libfabric
	 * may not even have initialised its monitor list (an import made
	 * before fi_getinfo()), and no entry exists to notify. */
	_Atomic bool started;
	_Atomic unsigned long notified, refused, invalid;
} fb = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool overlaps(const struct range *r, uintptr_t start, uintptr_t end)
{
	return r->start < end && start < r->end;
}

/* Sync callback: remember the change until it is notified. */
static void seen(void *arg, uintptr_t start, uintptr_t end)
{
	uint64_t t = now_ns();

	(void)arg;
	pthread_mutex_lock(&fb.lock);
	if (fb.npending == PENDING_MAX || (start == 0 && end == UINTPTR_MAX))
		fb.pending_all = true;
	else
		fb.pending[fb.npending++] = (struct range){ start, end, t };
	atomic_store_explicit(&fb.waiting, fb.npending + fb.pending_all,
			      memory_order_relaxed);
	fb.recent[fb.recent_pos++ % RECENT_MAX] = (struct range){ start, end, t };
	pthread_cond_signal(&fb.wake);
	pthread_mutex_unlock(&fb.lock);
}

static void sync_seen(void)
{
	if (!regcache_subscriber_current(fb.sub))
		regcache_subscriber_sync(fb.sub, seen, NULL);
}

/* ------------------------------------------------------------------------
 * export_ops: called by libfabric with mm_lock held
 * ---------------------------------------------------------------------- */

/* libfabric starts the monitor when the first MR cache attaches to it, and
 * stops it when the last leaves. */
static int mon_start(struct fid_mem_monitor *mon)
{
	(void)mon;
	atomic_store_explicit(&fb.started, true, memory_order_release);
	return 0;
}

static void mon_stop(struct fid_mem_monitor *mon)
{
	(void)mon;
	atomic_store_explicit(&fb.started, false, memory_order_release);
}

static int mon_subscribe(struct fid_mem_monitor *mon, const void *addr,
			 size_t len)
{
	uintptr_t start = (uintptr_t)addr, end = start + len;
	uint64_t t;
	int ret = 0;

	(void)mon;
	if (regcache_subscriber_watch(fb.sub, addr, len)) {
		atomic_fetch_add_explicit(&fb.refused, 1, memory_order_relaxed);
		return -FI_EINVAL;	/* served uncached */
	}
	/* The provider pinned before this call: a change in between is
	 * published by now (or, under userfaultfd, the check below sees it in
	 * flight). It cannot be told from one before the pin, so refuse
	 * either if it is recent. */
	sync_seen();
	t = now_ns();
	pthread_mutex_lock(&fb.lock);
	for (unsigned i = 0; i < RECENT_MAX; i++)
		if (fb.recent[i].end && t - fb.recent[i].seen_ns < fb.gap_ns &&
		    overlaps(&fb.recent[i], start, end))
			ret = -FI_EAGAIN;
	pthread_mutex_unlock(&fb.lock);
	if (!ret && regcache_subscriber_check(fb.sub, addr, len))
		ret = -FI_EAGAIN;
	if (ret)
		atomic_fetch_add_explicit(&fb.refused, 1, memory_order_relaxed);
	return ret;
}

static void mon_unsubscribe(struct fid_mem_monitor *mon, const void *addr,
			    size_t len)
{
	(void)mon;
	regcache_subscriber_unwatch(fb.sub, addr, len);
}

/* Every hit. False: libfabric drops the entry and registers again. */
static bool mon_valid(struct fid_mem_monitor *mon, const void *addr,
		      size_t len)
{
	uintptr_t start = (uintptr_t)addr, end = start + len;
	bool ok = true;

	(void)mon;
	sync_seen();
	/* The common hit: nothing changed that libfabric was not told of. */
	if (!atomic_load_explicit(&fb.waiting, memory_order_relaxed) &&
	    !(fb.caps & REGCACHE_MONITOR_CHECK_HITS))
		return true;
	pthread_mutex_lock(&fb.lock);
	if (fb.pending_all)
		ok = false;
	for (unsigned i = 0; ok && i < fb.npending; i++)
		ok = !overlaps(&fb.pending[i], start, end);
	pthread_mutex_unlock(&fb.lock);
	if (ok && regcache_subscriber_check(fb.sub, addr, len))
		ok = false;
	if (!ok)
		atomic_fetch_add_explicit(&fb.invalid, 1, memory_order_relaxed);
	return ok;
}

static struct fi_ops_mem_monitor export_ops = {
	.size = sizeof(struct fi_ops_mem_monitor),
	.start = mon_start,
	.stop = mon_stop,
	.subscribe = mon_subscribe,
	.unsubscribe = mon_unsubscribe,
	.valid = mon_valid,
};

/* ------------------------------------------------------------------------
 * The notify thread: the only caller of notify, never under mm_lock
 * ---------------------------------------------------------------------- */

static void *notify_thread(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&fb.stop, memory_order_relaxed)) {
		struct range r;
		bool all;

		sync_seen();
		pthread_mutex_lock(&fb.lock);
		if (!fb.npending && !fb.pending_all) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += fb.poll_ns;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&fb.wake, &fb.lock, &ts);
			pthread_mutex_unlock(&fb.lock);
			continue;
		}
		if (!atomic_load_explicit(&fb.started, memory_order_acquire)) {
			/* No cache, no entry: nothing to tell libfabric. */
			fb.npending = 0;
			fb.pending_all = false;
			atomic_store_explicit(&fb.waiting, 0, memory_order_relaxed);
			pthread_mutex_unlock(&fb.lock);
			continue;
		}
		all = fb.pending_all;
		r = all ? (struct range){ 0, (UINTPTR_MAX >> 1) & ~4095ul, 0 } :
			  fb.pending[0];
		pthread_mutex_unlock(&fb.lock);

		fb.mon.import_ops->notify(&fb.mon, (void *)r.start,
					  r.end - r.start);
		atomic_fetch_add_explicit(&fb.notified, 1, memory_order_relaxed);

		/* Only now may valid() trust entries in that range again:
		 * notify removed every one that was there. */
		pthread_mutex_lock(&fb.lock);
		if (all) {
			fb.pending_all = false;
			fb.npending = 0;
		} else {
			for (unsigned i = 0; i < fb.npending; i++)
				if (fb.pending[i].start == r.start &&
				    fb.pending[i].end == r.end &&
				    fb.pending[i].seen_ns == r.seen_ns) {
					fb.pending[i] = fb.pending[--fb.npending];
					break;
				}
		}
		atomic_store_explicit(&fb.waiting, fb.npending + fb.pending_all,
				      memory_order_relaxed);
		pthread_mutex_unlock(&fb.lock);
	}
	return NULL;
}

/* From atexit(), which runs before any library's destructor: the thread
 * must not notify a libfabric that is being torn down. */
static void stop_thread(void)
{
	/* A forked child has no such thread: joining it would wait forever. */
	if (getpid() != fb.thread_pid)
		return;
	atomic_store_explicit(&fb.stop, true, memory_order_relaxed);
	pthread_mutex_lock(&fb.lock);
	pthread_cond_signal(&fb.wake);
	pthread_mutex_unlock(&fb.lock);
	pthread_join(fb.thread, NULL);
}

/* ------------------------------------------------------------------------
 * Import
 * ---------------------------------------------------------------------- */

typedef int fi_open_fn(uint32_t version, const char *name, void *attr,
		       size_t attr_len, uint64_t flags, struct fid **fid,
		       void *context);

/* See include/regcache/fabric.h. */
rc_bridge_export int regcache_fabric_import(void)
{
	static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
	const char *env = getenv("FI_MR_CACHE_MONITOR");
	const char *gap = getenv("REGCACHE_FABRIC_GAP_MS");
	fi_open_fn *fo;
	struct fid *cache_fid;
	int ret;

	pthread_mutex_lock(&once);
	if (fb.imported) {
		pthread_mutex_unlock(&once);
		return 0;
	}
	if (env) {
		rc_bridge_log("regcache-fabric: FI_MR_CACHE_MONITOR=%s is set: "
			      "libfabric uses that monitor, regcache's is not "
			      "imported (unset it to use regcache's)", env);
		ret = -EPERM;
		goto out;
	}
	fo = (fi_open_fn *)dlsym(RTLD_DEFAULT, "fi_open");
	if (!fo) {
		ret = -ENOENT;
		goto out;
	}
	ret = regcache_subscriber_create(&fb.sub);
	if (ret)
		goto out;
	fb.caps = regcache_subscriber_caps(fb.sub);
	if (!(fb.caps & REGCACHE_MONITOR_CAN_CACHE)) {
		rc_bridge_log("regcache-fabric: regcache monitor \"%s\" reports "
			      "nothing; libfabric keeps its own monitor",
			      regcache_monitor_name());
		ret = -ENOTSUP;
		goto destroy;
	}
	fb.gap_ns = (uint64_t)(gap ? atol(gap) : 10) * 1000000u;
	fb.poll_ns = 1000000;
	fb.mon.fid.fclass = FI_CLASS_MEM_MONITOR;
	fb.mon.export_ops = &export_ops;
	ret = fo(FI_VERSION(1, 13), "mr_cache", NULL, 0, 0, &cache_fid, NULL);
	if (ret)
		goto destroy;
	ret = fi_import_fid(cache_fid, &fb.mon.fid, 0);
	fi_close(cache_fid);
	if (ret) {
		rc_bridge_log("regcache-fabric: libfabric refused the import "
			      "(%d: another monitor imported first, or an MR "
			      "cache is already open)", ret);
		ret = -EIO;
		goto destroy;
	}
	fb.imported = true;
	if (!pthread_create(&fb.thread, NULL, notify_thread, NULL)) {
		fb.thread_started = true;
		fb.thread_pid = getpid();
		atexit(stop_thread);
	}
	rc_bridge_info("regcache-fabric: libfabric's MR cache uses regcache "
		       "monitor \"%s\"", regcache_monitor_name());
	ret = 0;
	goto out;
destroy:
	regcache_subscriber_destroy(fb.sub);
	fb.sub = NULL;
out:
	pthread_mutex_unlock(&once);
	return ret;
}

rc_bridge_export int regcache_fabric_bridge_stats(unsigned long out[3])
{
	out[0] = atomic_load_explicit(&fb.notified, memory_order_relaxed);
	out[1] = atomic_load_explicit(&fb.refused, memory_order_relaxed);
	out[2] = atomic_load_explicit(&fb.invalid, memory_order_relaxed);
	return fb.imported;
}

/* Preloaded into a program linked with libfabric: import before main()
 * can open a domain. REGCACHE_FABRIC_IMPORT=0 leaves it to the caller. */
__attribute__((constructor)) static void fabric_bridge_init(void)
{
	const char *want = getenv("REGCACHE_FABRIC_IMPORT");

	if (want && *want == '0')
		return;
	if (dlsym(RTLD_DEFAULT, "fi_open"))
		regcache_fabric_import();
}


