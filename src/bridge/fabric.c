/* SPDX-License-Identifier: MIT */
/*
 * libregcache-fabric.so: libfabric's MR cache takes its invalidations from
 * regcache's process-wide monitor. A struct fid_mem_monitor is imported
 * with fi_open("mr_cache") + fi_import_fid() before the first domain opens:
 * by regcache_fabric_import(); or, preloaded (tools/regcache-run), by the
 * constructor when libfabric is already loaded, else at the first call of
 * any program or library into libfabric (fi_getinfo, fi_fabric, fi_open are
 * interposed), which covers a libfabric dlopened later, as Open MPI's ofi
 * components load it at MPI_Init. See docs/bridges.md.
 *
 * libfabric calls the monitor with its global mm_lock held:
 *  - valid(addr, len) on every cache hit: under userfaultfd the probe for
 *    changes in flight, then regcache's generation check, then
 *    "no change overlapping the entry, made after it was pinned, is still
 *    waiting to be notified". Exact at lookup time, whatever thread changed
 *    the pages;
 *  - subscribe(addr, len) after the entry was pinned: watch the range, and
 *    refuse it (the entry is then served uncached) if a change to it may
 *    have come after the pin (see pinned_after());
 *  - unsubscribe(addr, len): nothing (libfabric 1.17 never calls it; 2.x
 *    calls it when an entry leaves the cache, also right after a refused
 *    subscribe): the watch stays until a change ends it (see there).
 * notify(addr, len) takes mm_lock itself, so it is called only by the
 * bridge's own thread, which never holds it (libfabric#9003); notify just
 * reclaims entries early, correctness comes from valid().
 *
 * Only the libfabric versions in tested[] are imported into (the import API
 * is public, but what the bridge relies on around it, above, is each
 * version's behaviour); any other keeps its own monitor, and a line says
 * so.
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
#include <stdio.h>
#include <string.h>
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
/* The last changes seen, by sequence number: subscribe() looks for one
 * that may have come after the pin. */
#define HISTORY_MAX 256
/*
 * What the bridge knows of entries' ranges, by range: PIN_SETS sets of
 * PIN_WAYS, the least recently subscribed way evicted. An evicted range
 * reads as never watched, so its next registration is served uncached
 * once and cached from the one after. The ways let ranges whose hashes
 * collide be known side by side: with one way, two ranges sharing a slot
 * evict each other at every subscribe and neither is ever cached.
 */
#define PIN_SETS 512
#define PIN_WAYS 8

/* A change, numbered in the order the bridge saw it (1, 2, ...). */
struct range {
	uintptr_t start, end;
	uint64_t seq;
};

/* What the bridge knows of an entry's range (by start and end). */
struct pin {
	uintptr_t start, end;
	uint64_t pinned;	/* changes seen before the entry was pinned */
	uint64_t watch_call;	/* the subscribe that watched it (0: none) */
	uint64_t watch_seq;	/* changes seen when it did */
};

static struct {
	struct fid_mem_monitor mon;
	struct regcache_subscriber *sub;
	unsigned caps;
	bool imported;
	bool pin_check;		/* off only for the tests' negative control */
	pthread_mutex_t lock;	/* pending, history, pins, seq */
	pthread_cond_t wake;
	struct range pending[PENDING_MAX];
	unsigned npending;
	bool pending_all;	/* overflow or "everything": valid() is false */
	/* npending + pending_all, readable without the lock: written under it
	 * before the sync that found the change publishes its cursor, so a
	 * valid() that saw the cursor current sees this too. */
	_Atomic unsigned waiting;
	_Atomic uint64_t seq;	/* changes seen so far */
	uint64_t all_seq;	/* the last "everything" */
	struct range history[HISTORY_MAX];
	struct pin pins[PIN_SETS][PIN_WAYS];
	/* libfabric's subscribe calls, numbered; they are serialised by its
	 * mm_lock. */
	_Atomic uint64_t calls;
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

/*
 * What this thread had seen when it last returned from a call of
 * libfabric's into the bridge: every change numbered up to it was
 * published before this thread's current libfabric call began, so before
 * any pin that call makes. 0: the thread never called (anything may be
 * after its pin).
 */
static __thread uint64_t thread_seen;
/* The number of that call: a subscribe numbered up to it had returned
 * before this thread's current libfabric call began. */
static __thread uint64_t thread_call;

static bool overlaps(const struct range *r, uintptr_t start, uintptr_t end)
{
	return r->start < end && start < r->end;
}

/* Sync callback: number the change and remember it until it is notified. */
static void seen(void *arg, uintptr_t start, uintptr_t end)
{
	uint64_t seq;

	(void)arg;
	pthread_mutex_lock(&fb.lock);
	seq = atomic_load_explicit(&fb.seq, memory_order_relaxed) + 1;
	if (start == 0 && end == UINTPTR_MAX)
		fb.all_seq = seq;
	if (fb.npending == PENDING_MAX || (start == 0 && end == UINTPTR_MAX))
		fb.pending_all = true;
	else
		fb.pending[fb.npending++] = (struct range){ start, end, seq };
	atomic_store_explicit(&fb.waiting, fb.npending + fb.pending_all,
			      memory_order_relaxed);
	fb.history[seq % HISTORY_MAX] = (struct range){ start, end, seq };
	atomic_store_explicit(&fb.seq, seq, memory_order_relaxed);
	pthread_cond_signal(&fb.wake);
	pthread_mutex_unlock(&fb.lock);
}

static void sync_seen(void)
{
	if (!regcache_subscriber_current(fb.sub))
		regcache_subscriber_sync(fb.sub, seen, NULL);
}

/* Entering subscribe: its number. */
static uint64_t subscribe_begin(void)
{
	return atomic_fetch_add_explicit(&fb.calls, 1, memory_order_relaxed) + 1;
}

/* Entering another callback: the subscribes numbered up to this one have
 * returned (libfabric's mm_lock serialises the callbacks). */
static uint64_t call_begin(void)
{
	return atomic_load_explicit(&fb.calls, memory_order_relaxed);
}

/* Leaving a callback: what this thread has seen (after its sync). */
static void thread_saw(uint64_t call)
{
	thread_seen = atomic_load_explicit(&fb.seq, memory_order_relaxed);
	thread_call = call;
}

static struct pin *pin_set(uintptr_t start, uintptr_t end)
{
	uint64_t h = (start * 0x9e3779b97f4a7c15ull) ^ (end * 0xff51afd7ed558ccdull);

	return fb.pins[(h >> 32) % PIN_SETS];
}

/* The range's way, or NULL if the bridge knows nothing of it. Under
 * fb.lock. */
static struct pin *pin_find(uintptr_t start, uintptr_t end)
{
	struct pin *set = pin_set(start, end);

	for (int w = 0; w < PIN_WAYS; w++)
		if (set[w].start == start && set[w].end == end)
			return &set[w];
	return NULL;
}

/* The range's way, else the way to give it: an empty one, or the least
 * recently subscribed. Under fb.lock. */
static struct pin *pin_claim(uintptr_t start, uintptr_t end)
{
	struct pin *set = pin_set(start, end), *victim = &set[0];
	struct pin *known = pin_find(start, end);

	if (known)
		return known;
	for (int w = 1; w < PIN_WAYS; w++)
		if (set[w].watch_call < victim->watch_call)
			victim = &set[w];
	return victim;
}

/* Did a change numbered above @since overlap [start, end)? Under fb.lock. */
static bool changed_since(uint64_t since, uintptr_t start, uintptr_t end)
{
	uint64_t seq = atomic_load_explicit(&fb.seq, memory_order_relaxed);

	if (fb.all_seq > since)
		return true;
	/* More changes than the history holds: some are unknown. */
	if (seq - since >= HISTORY_MAX)
		return true;
	for (uint64_t n = since + 1; n <= seq; n++)
		if (overlaps(&fb.history[n % HISTORY_MAX], start, end))
			return true;
	return false;
}

/*
 * May the entry the provider just pinned be cached? The provider pinned
 * inside the libfabric call that now subscribes, so after this thread's
 * last return from the bridge: only changes numbered above thread_seen
 * can have come after the pin, and only if one overlaps is it refused.
 * A monitor that reports only watched ranges (userfaultfd) saw changes
 * after the pin only if the range was watched before it: by a subscribe
 * that had returned before this thread's last return, with no change to
 * the range since (a change ends a watch). Under fb.lock, after a sync.
 */
static bool cacheable(const struct pin *was, uintptr_t start, uintptr_t end)
{
	if (changed_since(thread_seen, start, end))
		return false;
	/* Re-read: the monitor may have fallen back to another backend. */
	if (regcache_subscriber_caps(fb.sub) & REGCACHE_MONITOR_SYNCHRONOUS)
		return true;
	return was->start == start && was->end == end && was->watch_call &&
	       was->watch_call <= thread_call &&
	       !changed_since(was->watch_seq, start, end);
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
	uint64_t call = subscribe_begin();
	struct pin was, *slot;
	uint64_t before;
	int ret = 0;

	(void)mon;
	/* The provider pinned before this call: a change in between is
	 * published by now. Under userfaultfd, first wait until no change is
	 * in flight (or give up), so that the sync has them all; the sync
	 * also ends the watches that changes overlapped, before the watch
	 * below, which must cover the pages mapped now. */
	if (regcache_subscriber_check(fb.sub, addr, len))
		ret = -FI_EAGAIN;
	sync_seen();
	pthread_mutex_lock(&fb.lock);
	slot = pin_claim(start, end);
	was = *slot;
	/* A change numbered above this may end the watch made below. */
	before = atomic_load_explicit(&fb.seq, memory_order_relaxed);
	pthread_mutex_unlock(&fb.lock);
	if (regcache_subscriber_watch(fb.sub, addr, len))
		ret = -FI_EINVAL;	/* served uncached */
	pthread_mutex_lock(&fb.lock);
	if (ret != -FI_EINVAL)
		*slot = (struct pin){ start, end, 0, call, before };
	if (!ret && fb.pin_check && !cacheable(&was, start, end))
		ret = -FI_EAGAIN;
	if (!ret)
		/* Changes up to here came before the pin: valid() ignores
		 * them for this entry. */
		slot->pinned = thread_seen;
	pthread_mutex_unlock(&fb.lock);
	if (ret)
		atomic_fetch_add_explicit(&fb.refused, 1, memory_order_relaxed);
	thread_saw(call);
	return ret;
}

/*
 * The watch is kept: a range can be subscribed by several entries at once
 * (one per MR cache, i.e. per domain), and libfabric 2.x unsubscribes an
 * entry that leaves its cache, also one whose subscribe the bridge just
 * refused, while the watch is what lets the next registration of the
 * range be cached under userfaultfd (cacheable()). A watch ends when a
 * change overlaps it, as under 1.17, which never unsubscribes.
 */
static void mon_unsubscribe(struct fid_mem_monitor *mon, const void *addr,
			    size_t len)
{
	(void)mon, (void)addr, (void)len;
	thread_saw(call_begin());
}

/* Every hit. False: libfabric drops the entry and registers again. */
static bool mon_valid(struct fid_mem_monitor *mon, const void *addr,
		      size_t len)
{
	uintptr_t start = (uintptr_t)addr, end = start + len;
	uint64_t call = call_begin();
	struct pin *pin;
	uint64_t pinned;
	bool ok = true;

	(void)mon;
	/* Userfaultfd: a change in flight is published before the sync
	 * below, or the hit is refused. The probe must come first: once it
	 * passed, the sync has every change that returned before it. */
	if ((regcache_subscriber_caps(fb.sub) & REGCACHE_MONITOR_CHECK_HITS) &&
	    regcache_subscriber_check(fb.sub, addr, len))
		ok = false;
	sync_seen();
	/* The common hit: nothing changed that libfabric was not told of. */
	if (ok && !atomic_load_explicit(&fb.waiting, memory_order_relaxed)) {
		thread_saw(call);
		return true;
	}
	pthread_mutex_lock(&fb.lock);
	pin = pin_find(start, end);
	pinned = pin ? pin->pinned : 0;
	if (fb.pending_all)
		ok = false;
	/* A change the entry was pinned after is not about its pages. */
	for (unsigned i = 0; ok && i < fb.npending; i++)
		ok = fb.pending[i].seq <= pinned ||
		     !overlaps(&fb.pending[i], start, end);
	pthread_mutex_unlock(&fb.lock);
	if (!ok)
		atomic_fetch_add_explicit(&fb.invalid, 1, memory_order_relaxed);
	thread_saw(call);
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
				    fb.pending[i].seq == r.seq) {
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
typedef uint32_t fi_version_fn(void);

/*
 * The libfabric versions the bridge was run with (docs/bridges.md names
 * the tests): what it relies on besides the public import API is each
 * version's own behaviour: valid() on every hit and subscribe() after the
 * pin, both under mm_lock; notify() taking mm_lock; unsubscribe() (2.x)
 * after a refused subscribe. fi_version() gives major.minor only.
 */
static const struct { unsigned major, minor; } tested[] = {
	{ 1, 17 },	/* Debian 12: 1.17.0 */
	{ 2, 1 },	/* Debian 13: 2.1.0 */
};

/* "1.17,2.1": the list as the log line and REGCACHE_FABRIC_VERSIONS
 * write it. */
static void tested_list(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(tested) / sizeof(tested[0]); i++)
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%u.%u",
				      i ? "," : "", tested[i].major,
				      tested[i].minor);
}

/* Is major.minor in @list ("1.17,2.1", "any": every version from 1.14,
 * whose import API works)? */
static bool listed(const char *list, unsigned major, unsigned minor)
{
	if (!strcmp(list, "any"))
		return major > 1 || (major == 1 && minor >= 14);
	while (*list) {
		unsigned ma, mi;
		int used = 0;

		if (sscanf(list, "%u.%u%n", &ma, &mi, &used) == 2 && used &&
		    ma == major && mi == minor)
			return true;
		list += strcspn(list, ", ");
		list += strspn(list, ", ");
	}
	return false;
}

/*
 * May the bridge import into the libfabric behind @h? Yes for a version
 * in tested[] (or in REGCACHE_FABRIC_VERSIONS when set); otherwise the
 * bridge steps aside and says so, and libfabric keeps its own monitor.
 */
static bool version_known(void *h, unsigned *major, unsigned *minor)
{
	const char *env = rc_env_str(RC_ENV_FABRIC_VERSIONS);
	fi_version_fn *fv = (fi_version_fn *)dlsym(h, "fi_version");
	char list[64];
	uint32_t v;

	tested_list(list, sizeof(list));
	if (!fv) {
		rc_bridge_log("regcache-fabric: the loaded libfabric has no "
			      "fi_version(); libfabric keeps its own monitor");
		return false;
	}
	v = fv();
	*major = FI_MAJOR(v);
	*minor = FI_MINOR(v);
	if (listed(env ? env : list, *major, *minor))
		return true;
	rc_bridge_log("regcache-fabric: libfabric %u.%u is not a version the "
		      "bridge was tested with (%s%s%s): libfabric keeps its own "
		      "monitor (REGCACHE_FABRIC_VERSIONS=%u.%u imports anyway)",
		      *major, *minor, list, env ? "; REGCACHE_FABRIC_VERSIONS=" :
		      "", env ? env : "", *major, *minor);
	return false;
}

/* See include/regcache/fabric.h. */
rc_bridge_export int regcache_fabric_import(void)
{
	static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
	const char *env = getenv("FI_MR_CACHE_MONITOR");
	fi_open_fn *fo = NULL;
	unsigned major = 0, minor = 0;
	struct fid *cache_fid;
	void *h;
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
	/* The libfabric loaded here, also one dlopened RTLD_LOCAL. */
	h = rc_bridge_find_definer("fi_open", (void **)&fo);
	if (!h) {
		ret = -ENOENT;
		goto out;
	}
	if (!version_known(h, &major, &minor)) {
		ret = -ENOTSUP;
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
	fb.pin_check = rc_env_bool(RC_ENV_FABRIC_PIN_CHECK);
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
		       "monitor \"%s\" (libfabric %u.%u)",
		       regcache_monitor_name(), major, minor);
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

/* ------------------------------------------------------------------------
 * Preloaded: import before the first domain
 * ---------------------------------------------------------------------- */

static bool import_wanted(void)
{
	return rc_env_bool(RC_ENV_FABRIC_IMPORT);
}

/* Into a program linked with libfabric: before main() can open a domain.
 * REGCACHE_FABRIC_IMPORT=0 leaves it to the caller. */
__attribute__((constructor)) static void fabric_bridge_init(void)
{
	void *fo, *h;

	if (!import_wanted())
		return;
	h = rc_bridge_find_definer("fi_open", &fo);
	if (h) {
		dlclose(h);
		regcache_fabric_import();
	}
}

/*
 * A libfabric loaded after the constructor (Open MPI dlopens its ofi
 * components, and with them libfabric, at MPI_Init) is first called through
 * fi_getinfo, fi_fabric, fi_fabric2 or fi_open: no domain can exist before
 * one of them, and no libfabric lock is held when they are entered. Each
 * is interposed, in every symbol version libfabric 1.x and 2.x export
 * (2.x adds fi_getinfo@FABRIC_1.7 and 1.8, and fi_fabric2@FABRIC_1.8, the
 * default a program built against 2.x binds), so that a caller bound to
 * any version still reaches that version; the first call imports, then
 * every call jumps to libfabric's own function.
 */
enum entry { GETINFO_1_0, GETINFO_1_1, GETINFO_1_2, GETINFO_1_3, GETINFO_1_7,
	     GETINFO_1_8, FABRIC_1_0, FABRIC_1_1, FABRIC2_1_8, OPEN_1_5,
	     NENTRIES };

static const struct { const char *name, *version; } entries[NENTRIES] = {
	[GETINFO_1_0] = { "fi_getinfo", "FABRIC_1.0" },
	[GETINFO_1_1] = { "fi_getinfo", "FABRIC_1.1" },
	[GETINFO_1_2] = { "fi_getinfo", "FABRIC_1.2" },
	[GETINFO_1_3] = { "fi_getinfo", "FABRIC_1.3" },
	[GETINFO_1_7] = { "fi_getinfo", "FABRIC_1.7" },
	[GETINFO_1_8] = { "fi_getinfo", "FABRIC_1.8" },
	[FABRIC_1_0] = { "fi_fabric", "FABRIC_1.0" },
	[FABRIC_1_1] = { "fi_fabric", "FABRIC_1.1" },
	[FABRIC2_1_8] = { "fi_fabric2", "FABRIC_1.8" },
	[OPEN_1_5] = { "fi_open", "FABRIC_1.5" },
};

/* Jumped to by the trampolines below, in enum entry's order. */
rc_bridge_hidden void *rc_fi_getinfo_1_0_real, *rc_fi_getinfo_1_1_real,
	*rc_fi_getinfo_1_2_real, *rc_fi_getinfo_1_3_real,
	*rc_fi_getinfo_1_7_real, *rc_fi_getinfo_1_8_real,
	*rc_fi_fabric_1_0_real, *rc_fi_fabric_1_1_real,
	*rc_fi_fabric2_1_8_real, *rc_fi_open_1_5_real;
static void **const real[NENTRIES] = {
	&rc_fi_getinfo_1_0_real, &rc_fi_getinfo_1_1_real,
	&rc_fi_getinfo_1_2_real, &rc_fi_getinfo_1_3_real,
	&rc_fi_getinfo_1_7_real, &rc_fi_getinfo_1_8_real,
	&rc_fi_fabric_1_0_real, &rc_fi_fabric_1_1_real,
	&rc_fi_fabric2_1_8_real, &rc_fi_open_1_5_real,
};

/* What a call to a function the loaded libfabric lacks returns (only a
 * caller that looked the bridge's definition up by name can make one: a
 * caller bound to a version would not have loaded). Each interposed
 * function returns an int. */
static int missing(void)
{
	return -FI_ENOSYS;
}

static _Atomic bool entered;	/* resolved and imported (or not wanted) */
static __thread bool entering;	/* this thread is resolving or importing */

/* Resolve every version in the libfabric that is loaded. A libfabric
 * without symbol versions (a static one linked into the program) has one
 * function for all of them. */
static void resolve(void)
{
	void *any, *h = rc_bridge_find_definer("fi_open", &any);

	if (!h) {
		fprintf(stderr, "regcache-fabric: a libfabric call reached the "
			"bridge but no loaded object defines fi_open; aborting\n");
		abort();
	}
	for (int i = 0; i < NENTRIES; i++) {
		void *p = dlvsym(h, entries[i].name, entries[i].version);

		if (!p)
			p = dlsym(h, entries[i].name);
		*real[i] = p ? p : (void *)missing;
	}
}

/* On every interposed call: import once, before libfabric runs. */
rc_bridge_hidden void rc_fabric_before_entry(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	/* A call that our own import makes (libfabric calling itself through
	 * its PLT) goes straight on. */
	if (atomic_load_explicit(&entered, memory_order_acquire) || entering)
		return;
	pthread_mutex_lock(&lock);
	if (!atomic_load_explicit(&entered, memory_order_relaxed)) {
		entering = true;
		resolve();
		if (import_wanted())
			regcache_fabric_import();
		entering = false;
		atomic_store_explicit(&entered, true, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
}

#define ENTRY(label, symver)                                                 \
	RC_BRIDGE_TRAMPOLINE(label, rc_fabric_before_entry, label##_real);    \
	__asm__(".symver " #label ", " symver)
ENTRY(rc_fi_getinfo_1_0, "fi_getinfo@FABRIC_1.0");
ENTRY(rc_fi_getinfo_1_1, "fi_getinfo@FABRIC_1.1");
ENTRY(rc_fi_getinfo_1_2, "fi_getinfo@FABRIC_1.2");
ENTRY(rc_fi_getinfo_1_3, "fi_getinfo@FABRIC_1.3");
ENTRY(rc_fi_getinfo_1_7, "fi_getinfo@FABRIC_1.7");
ENTRY(rc_fi_getinfo_1_8, "fi_getinfo@@FABRIC_1.8");
ENTRY(rc_fi_fabric_1_0, "fi_fabric@FABRIC_1.0");
ENTRY(rc_fi_fabric_1_1, "fi_fabric@@FABRIC_1.1");
ENTRY(rc_fi_fabric2_1_8, "fi_fabric2@@FABRIC_1.8");
ENTRY(rc_fi_open_1_5, "fi_open@@FABRIC_1.5");
