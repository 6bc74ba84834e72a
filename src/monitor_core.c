/* SPDX-License-Identifier: MIT */
/*
 * The process-wide monitor: picks a backend, owns the queue of invalidated
 * ranges and the generation word, detects fork, switches to another
 * backend when the active one gives up for good, and counts its users.
 *
 * It is the library's only global state, because the kernel facilities are
 * process-wide: one userfaultfd owner per VMA, one set of BPF programs.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/fork.h"
#include "base/log.h"
#include "monitor_core.h"

/* Until the first cache maps the real guard page, the hit path is never run;
 * this keeps rc_mon.fork_guard dereferenceable anyway. */
static _Atomic uint64_t static_guard;

struct rc_monitor rc_mon = {
	.gen = &rc_mon.queue_head,
	.fork_guard = &static_guard,
};

/* Protects users, backend start/stop, ->pull() and fork recovery. Never held
 * while allocating, unmapping or calling a registrar (design rule 1). */
static pthread_mutex_t mon_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned mon_users;
/* The published backend is one of two slots; a switch fills the other, so
 * no slot is written while a thread may read it (rc_monitor_active()). */
static struct rc_monitor_active slots[2];
static uint64_t incarnations;
/* A backend that handed over (rc_monitor_fall_back()): still started,
 * since a thread may still be inside one of its ops; stopped with the
 * active one, or dropped in a forked child. */
static const struct rc_monitor_ops *retired;
/* rc_mon.epoch as the last fork recovery set it: a cursor older than this
 * saw a fork, a younger one only switches. */
static _Atomic uint64_t fork_epoch;

#ifndef RC_HAVE_MONITOR_BPF
const struct rc_monitor_ops rc_monitor_bpf_ops;
#endif
#ifndef RC_HAVE_MONITOR_UFFD
const struct rc_monitor_ops rc_monitor_uffd_ops;
#endif

/* In the order "auto" tries them. A backend not built has no ->start.
 * regcached first: one program set for the whole node, no privilege, and
 * no syscall tax for other processes beyond the one the daemon pays. */
static const struct rc_monitor_ops *const backends[] = {
	&rc_monitor_regcached_ops,
	&rc_monitor_bpf_ops,
	&rc_monitor_uffd_ops,
	&rc_monitor_none_ops,
};

static int stub_watch(struct rc_monitor *mon, uintptr_t s, uintptr_t e)
{
	(void)mon, (void)s, (void)e;
	return -EOPNOTSUPP;
}
static void stub_unwatch(struct rc_monitor *mon, uintptr_t s, uintptr_t e)
{
	(void)mon, (void)s, (void)e;
}
static int stub_validate(struct rc_monitor *mon, uintptr_t s, uintptr_t e)
{
	(void)mon, (void)s, (void)e;
	return 0;
}
static void stub_mon(struct rc_monitor *mon)
{
	(void)mon;
}

/* Publish @ops, just started, as the active backend: fill the slot that
 * is not published, the optional ops with stubs so callers never test for
 * NULL (rdma-core libibverbs/dummy_ops.c). ->pull stays NULL-able: it
 * tells sync whether to take the lock at all. Release: whoever sees the
 * slot sees it filled, and the backend started. */
static void set_ops(const struct rc_monitor_ops *ops)
{
	struct rc_monitor_active *a =
		rc_monitor_active() == &slots[0] ? &slots[1] : &slots[0];

	a->ops = *ops;
	if (!a->ops.watch)
		a->ops.watch = stub_watch;
	if (!a->ops.unwatch)
		a->ops.unwatch = stub_unwatch;
	if (!a->ops.validate)
		a->ops.validate = stub_validate;
	if (!a->ops.forked)
		a->ops.forked = stub_mon;
	if (!a->ops.stop)
		a->ops.stop = stub_mon;
	a->caps = rc_mon.caps;
	a->incarnation = ++incarnations;
	a->backend = ops;
	atomic_store_explicit(&rc_mon.ops, &a->ops, memory_order_release);
}

/* What a backend's ->start() finds: no caps, the queue's own generation. */
static void reset_backend(void)
{
	rc_mon.gen = &rc_mon.queue_head;
	rc_mon.backend = NULL;
	rc_mon.caps = (struct rc_monitor_caps){ 0 };
}

static void reset_queue(void)
{
	rc_store_relaxed(&rc_mon.queue_head, 0);
	for (unsigned i = 0; i < RC_QUEUE_SIZE; i++)
		rc_store_relaxed(&rc_mon.queue[i].seq, 0);
	reset_backend();
}

/* Move the epoch and the guard word: every hit takes the slow path and
 * every sync finds its cursor's epoch old. Returns the new epoch. */
static uint64_t bump_epoch(void)
{
	uint64_t epoch = atomic_fetch_add_explicit(&rc_mon.epoch, 1,
						   memory_order_release) + 1;

	rc_store_relaxed(rc_mon.fork_guard, epoch);
	return epoch;
}

/* Start @ops (mon_lock held) and publish it if it works. Returns 0 or
 * the -errno of ->start(). */
static int try_backend(const struct rc_monitor_ops *ops)
{
	int ret;

	reset_backend();
	ret = ops->start(&rc_mon);
	if (!ret)
		set_ops(ops);
	return ret;
}

static bool backend_wanted(const struct rc_monitor_ops *ops, const char *want)
{
	if (!ops->start)
		return false;
	if (!want || !*want || !strcmp(want, "auto"))
		return true;
	return !strcmp(want, ops->name) ||
	       (!strcmp(want, "uffd") && !strcmp(ops->name, "userfaultfd"));
}

/* Start the first backend that $REGCACHE_MONITOR allows (any, if
 * @any: a child of a process that fell back) and that works. Called with
 * mon_lock held. Always ends with some backend ("none"). */
static void start_backend(bool any)
{
	const char *want = any ? NULL : rc_env_str(RC_ENV_MONITOR);
	bool known = !want || !*want || !strcmp(want, "auto") ||
		     !strcmp(want, "uffd");

	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		const struct rc_monitor_ops *ops = backends[i];
		int ret;

		if (want && ops->name && !strcmp(want, ops->name))
			known = true;
		if (!backend_wanted(ops, want))
			continue;
		reset_queue();
		ret = try_backend(ops);
		if (!ret) {
			rc_info("monitor backend \"%s\" started%s", ops->name,
				want && *want && strcmp(want, "auto") ?
					" (from REGCACHE_MONITOR)" : "");
			return;
		}
		rc_info("monitor backend \"%s\" unavailable: %s (regcache-info "
			"says why)", ops->name, strerror(-ret));
		if (want && strcmp(want, "auto"))
			rc_warn("REGCACHE_MONITOR=%s is unavailable (%s); "
				"registrations will not be cached "
				"(regcache-info says why)",
				want, strerror(-ret));
	}
	if (!known)
		rc_warn("REGCACHE_MONITOR=%s is unknown (use auto, regcached, "
			"bpf, userfaultfd or none); registrations will not be "
			"cached",
			want);
	reset_queue();
	try_backend(&rc_monitor_none_ops);
}

static void stop_backend(void)
{
	if (rc_mon.ops)
		rc_mon.ops->stop(&rc_mon);
	if (retired && retired->stop)
		retired->stop(&rc_mon);
	retired = NULL;
	rc_mon.ops = NULL;
	reset_queue();
}

/* A fork while another thread holds mon_lock would leave it locked forever in
 * the child; hold it across fork instead. Raw fork syscalls bypass this and
 * are documented as unsupported while another thread is inside regcache. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&mon_lock);
}
static void atfork_parent(void)
{
	pthread_mutex_unlock(&mon_lock);
}
static void atfork_child(void)
{
	pthread_mutex_unlock(&mon_lock);
}
static const struct rc_fork_handlers monitor_fork = {
	atfork_prepare, atfork_parent, atfork_child
};

/* The guard word lives in a MADV_WIPEONFORK page: any fork, including a raw
 * clone() that bypasses pthread_atfork, hands the child a zeroed page, so the
 * hit path notices with one load instead of a getpid() syscall. */
static int map_fork_guard(void)
{
	void *page;

	if (rc_mon.fork_guard != &static_guard)
		return 0;
	page = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return -errno;
	if (madvise(page, sysconf(_SC_PAGESIZE), MADV_WIPEONFORK)) {
		int ret = -errno;

		rc_error("madvise(MADV_WIPEONFORK) failed: %s; "
			 "fork detection needs Linux 4.14+", strerror(-ret));
		munmap(page, sysconf(_SC_PAGESIZE));
		return ret;
	}
	rc_mon.fork_guard = page;
	return 0;
}

int rc_monitor_acquire(void)
{
	int ret = 0;

	rc_fork_enable(RC_FORK_MONITOR, &monitor_fork);
	pthread_mutex_lock(&mon_lock);
	if (mon_users == 0) {
		ret = map_fork_guard();
		if (!ret) {
			start_backend(false);
			bump_epoch();
		}
	}
	if (!ret)
		mon_users++;
	pthread_mutex_unlock(&mon_lock);
	return ret;
}

void rc_monitor_release(void)
{
	pthread_mutex_lock(&mon_lock);
	if (mon_users && --mon_users == 0)
		stop_backend();
	pthread_mutex_unlock(&mon_lock);
}

/* In a forked child: drop what the parent's backend left us and start a
 * fresh one for this process. Every cache sees the new epoch and forgets its
 * regions without deregistering them. */
static void recover_from_fork(void)
{
	pthread_mutex_lock(&mon_lock);
	if (rc_load_relaxed(rc_mon.fork_guard) == 0) {
		rc_info("fork detected (pid %d): restarting the monitor; "
			"cached regions of the parent are forgotten",
			(int)getpid());
		bool fell_back = retired != NULL;

		if (rc_mon.ops)
			rc_mon.ops->forked(&rc_mon);
		if (retired && retired->forked)
			retired->forked(&rc_mon);
		retired = NULL;
		rc_mon.ops = NULL;
		/* Before the epoch moves (release): a cursor that sees the
		 * new epoch sees this too. */
		rc_store_relaxed(&fork_epoch,
				 rc_load_relaxed(&rc_mon.epoch) + 1);
		/* The parent gave its requested backend up: so does the
		 * child, which tries the default order from the start. */
		if (mon_users)
			start_backend(fell_back);
		bump_epoch();
	}
	pthread_mutex_unlock(&mon_lock);
}

/*
 * The switch, under mon_lock. Why nothing cached through @from survives
 * and no watch crosses over:
 *  1. The first epoch move sends every hit to the slow path before the
 *     new backend may re-point rc_mon.gen at a word of its own (whose
 *     value might equal some cursor's old one).
 *  2. "Everything" is published while @from is still the only producer
 *     (it publishes from ->pull, which runs under mon_lock).
 *  3. The new backend starts and is published (set_ops, release).
 *  4. The second epoch move: every sync now returns RC_MONITOR_SWITCHED,
 *     and its caller kills every region, taints the misses in flight and
 *     re-reads the caps. A miss whose watch went to @from (an older
 *     incarnation than its cache synced to) is not cached (cache.c).
 * @from has no ->unwatch, so no region or subscriber watch of it carries
 * an undo (struct rc_monitor_ticket): nothing is ever unwatched on the new
 * backend that it did not watch.
 */
bool rc_monitor_fall_back(const struct rc_monitor_ops *from, const char *why)
{
	const struct rc_monitor_active *old;
	size_t n = sizeof(backends) / sizeof(backends[0]), i = 0;
	_Atomic uint64_t *old_gen;
	void *old_backend;
	struct rc_monitor_caps old_caps;

	pthread_mutex_lock(&mon_lock);
	old = rc_monitor_active();
	/* In a child that has not recovered yet, recovery restarts it all. */
	if (!mon_users || !old || old->backend != from || from->unwatch ||
	    rc_load_relaxed(rc_mon.fork_guard) == 0) {
		pthread_mutex_unlock(&mon_lock);
		return false;
	}
	old_gen = atomic_load_explicit(&rc_mon.gen, memory_order_relaxed);
	old_backend = rc_mon.backend;
	old_caps = rc_mon.caps;
	bump_epoch();
	rc_monitor_publish_all(&rc_mon);
	while (i < n && backends[i] != from)
		i++;
	/* Only to a backend that can cache: "none" would serve everything
	 * uncached, as @from already does, but stop telling subscribers that
	 * everything changes (a forwarding thread would then never flush
	 * its cache again) and stop waiting for the daemon to come back. */
	for (i++; i < n; i++) {
		int ret;

		if (!backends[i]->start || backends[i] == &rc_monitor_none_ops)
			continue;
		ret = try_backend(backends[i]);
		if (!ret)
			break;
		rc_info("monitor backend \"%s\" unavailable: %s (regcache-info "
			"says why)", backends[i]->name, strerror(-ret));
	}
	if (i >= n) {
		/* @from stays, as it was; the caches resync once more. */
		atomic_store_explicit(&rc_mon.gen, old_gen,
				      memory_order_release);
		rc_mon.backend = old_backend;
		rc_mon.caps = old_caps;
		bump_epoch();
		rc_warn("monitor backend \"%s\": %s; no other monitor can "
			"cache here (regcache-info says why): registrations "
			"stay uncached until it is back", from->name, why);
		pthread_mutex_unlock(&mon_lock);
		return false;
	}
	retired = from;
	bump_epoch();
	rc_warn("monitor backend \"%s\": %s; falling back to \"%s\": "
		"caching resumes (what it cached was dropped)",
		from->name, why, rc_mon.ops->name);
	pthread_mutex_unlock(&mon_lock);
	return true;
}

void rc_monitor_cursor_init(struct rc_monitor_cursor *cur)
{
	uint64_t epoch = atomic_load_explicit(&rc_mon.epoch,
					      memory_order_acquire);

	cur->pos = rc_load_acquire(&rc_mon.queue_head);
	rc_store_release(&cur->gen_seen, rc_load_acquire(rc_load_relaxed(&rc_mon.gen)));
	/* Last, with release: a hit that sees the new epoch (acquire in
	 * rc_monitor_current) also sees what the caller did before, e.g. the
	 * parent's regions forgotten after a fork. */
	rc_store_release(&cur->epoch, epoch);
}

static void wake_waiter(void);

void rc_monitor_publish(struct rc_monitor *mon, uintptr_t start, uintptr_t end)
{
	uint64_t head = rc_load_relaxed(&mon->queue_head);
	struct rc_queue_slot *slot = &mon->queue[head & (RC_QUEUE_SIZE - 1)];

	/* Per-slot seqlock: readers that see seq != index+1 before or after
	 * reading the range treat the slot as overwritten (an overflow). */
	rc_store_relaxed(&slot->seq, 0);
	atomic_thread_fence(memory_order_release);
	rc_store_relaxed(&slot->start, start);
	rc_store_relaxed(&slot->end, end);
	rc_store_release(&slot->seq, head + 1);
	/* Release pairs with the acquire in rc_monitor_current() and
	 * rc_monitor_sync(): the slot is visible before the head moves. */
	rc_store_release(&mon->queue_head, head + 1);
	wake_waiter();
}

void rc_monitor_publish_all(struct rc_monitor *mon)
{
	rc_monitor_publish(mon, 0, UINTPTR_MAX);
}

enum rc_monitor_sync_result rc_monitor_sync(struct rc_monitor_cursor *cur,
					    rc_invalidate_fn *fn, void *arg)
{
	uint64_t gen, head, pos, epoch;

	if (rc_unlikely(rc_load_relaxed(rc_mon.fork_guard) == 0))
		recover_from_fork();
	/* Forked or switched: leave the cursor alone. Until the caller has
	 * dropped its regions and re-initialised it, hits keep seeing the
	 * old epoch and take the slow path (which waits for the cache
	 * lock). Epochs only grow, in a child too. */
	epoch = rc_load_relaxed(&cur->epoch);
	if (epoch != atomic_load_explicit(&rc_mon.epoch, memory_order_acquire))
		return epoch < rc_load_relaxed(&fork_epoch) ?
			       RC_MONITOR_FORKED : RC_MONITOR_SWITCHED;

	/* Read the generation first: every range that moved it is in the
	 * kernel's ring (bpf) or in the queue by now, so after the pull and
	 * the drain below it is safe to adopt this value. */
	gen = rc_load_acquire(rc_load_relaxed(&rc_mon.gen));
	if (rc_mon.ops && rc_mon.ops->pull) {
		pthread_mutex_lock(&mon_lock);
		if (rc_mon.ops && rc_mon.ops->pull)
			rc_mon.ops->pull(&rc_mon);
		pthread_mutex_unlock(&mon_lock);
	}
	head = rc_load_acquire(&rc_mon.queue_head);
	pos = cur->pos;
	if (head - pos > RC_QUEUE_SIZE) {
		fn(arg, 0, UINTPTR_MAX);
		pos = head;
	}
	for (; pos < head; pos++) {
		struct rc_queue_slot *slot = &rc_mon.queue[pos & (RC_QUEUE_SIZE - 1)];
		uint64_t seq1 = rc_load_acquire(&slot->seq);
		uintptr_t start = rc_load_relaxed(&slot->start);
		uintptr_t end = rc_load_relaxed(&slot->end);
		uint64_t seq2;

		atomic_thread_fence(memory_order_acquire);
		seq2 = rc_load_relaxed(&slot->seq);
		if (seq1 != pos + 1 || seq2 != pos + 1) {
			/* Overwritten while we read: we fell a whole queue
			 * behind. Anything unknown invalidates (rule 8). */
			fn(arg, 0, UINTPTR_MAX);
			pos = rc_load_acquire(&rc_mon.queue_head);
			break;
		}
		fn(arg, start, end);
	}
	cur->pos = pos;
	/* Release: @fn applied every range before this store, so a hit that
	 * sees the new value also sees those regions dead. */
	rc_store_release(&cur->gen_seen, gen);
	return RC_MONITOR_SYNCED;
}

int rc_monitor_watch(uintptr_t start, uintptr_t end,
		     struct rc_monitor_ticket *ticket)
{
	const struct rc_monitor_active *a = rc_monitor_active();
	int ret = a->ops.watch(&rc_mon, start, end);

	if (!ret) {
		ticket->incarnation = a->incarnation;
		ticket->undo = a->backend->unwatch != NULL;
	}
	return ret;
}

void rc_monitor_unwatch(uintptr_t start, uintptr_t end)
{
	rc_mon.ops->unwatch(&rc_mon, start, end);
}

int rc_monitor_validate(uintptr_t start, uintptr_t end)
{
	return rc_mon.ops->validate(&rc_mon, start, end);
}

const char *regcache_monitor_name(void)
{
	const char *name;

	pthread_mutex_lock(&mon_lock);
	if (mon_users) {
		name = rc_mon.ops ? rc_mon.ops->name : "none";
	} else {
		/* Nobody uses the monitor: try the selection and undo it, so
		 * nothing stays attached (a BPF load costs ~100 ms). */
		start_backend(false);
		name = rc_mon.ops->name;
		stop_backend();
	}
	pthread_mutex_unlock(&mon_lock);
	return name;
}

/* ------------------------------------------------------------------------
 * Waiting for a change (docs/monitor-bpf.md, Waiting)
 * ---------------------------------------------------------------------- */

/*
 * One sleeper at a time (the lock): it arms, looks at the generation, and
 * sleeps. Every publish while armed rings it, once per sleep (rung): that
 * wakes it for ranges that a pull in another thread took from the kernel
 * between the sleeper's look and its sleep, and for a backend that
 * publishes from its own thread (userfaultfd). The bell is a futex word,
 * which any thread can ring; when the backend gives a descriptor to poll
 * (bpf's ring) the sleeper polls that and an eventfd instead, which the
 * publishers then write: those are pulls in threads that share the
 * application's file table, unlike the userfaultfd monitor's thread.
 */
static struct {
	pthread_mutex_t lock;
	int fd;			/* eventfd; -1 until the first wait */
	_Atomic int pub_fd;	/* fd while the sleeper polls it, else -1 */
	_Atomic uint32_t bell;	/* futex word, moves on every ring */
	_Atomic bool armed;
	_Atomic bool rung;
} waiter = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
	.pub_fd = -1,
};

static void wake_waiter(void)
{
	uint64_t one = 1;
	ssize_t r = 0;
	int fd;

	/* Pairs with the fence in sleep_until_change(): either the
	 * sleeper's look at the generation sees what was just published,
	 * or this load sees it armed. */
	atomic_thread_fence(memory_order_seq_cst);
	/* Acquire: the sleeper set pub_fd before it armed. */
	if (rc_likely(!atomic_load_explicit(&waiter.armed, memory_order_acquire)) ||
	    atomic_exchange(&waiter.rung, true))
		return;
	fd = atomic_load_explicit(&waiter.pub_fd, memory_order_relaxed);
	if (fd >= 0) {
		/* Fails only when the counter is full, i.e. readable. */
		r = write(fd, &one, sizeof(one));
		(void)r;
		return;
	}
	atomic_fetch_add(&waiter.bell, 1);
	syscall(SYS_futex, &waiter.bell, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
		NULL, 0);
}

/* The child has only the forking thread: a sleeper of the parent never
 * wakes here, and the eventfd is shared with the parent. Start afresh. */
static void waiter_atfork_child(void)
{
	pthread_mutex_init(&waiter.lock, NULL);
	if (waiter.fd >= 0)
		close(waiter.fd);
	waiter.fd = -1;
	atomic_store(&waiter.pub_fd, -1);
	atomic_store(&waiter.armed, false);
	atomic_store(&waiter.rung, false);
}

static const struct rc_fork_handlers waiter_fork = {
	.child = waiter_atfork_child
};

/* Arm (or disarm) the backend under the monitor lock, which orders this
 * with fork recovery and ->stop(). */
static int arm_backend(bool on, int *fd)
{
	int ret = 0;

	*fd = -1;
	pthread_mutex_lock(&mon_lock);
	if (rc_mon.ops && rc_mon.ops->wake)
		ret = rc_mon.ops->wake(&rc_mon, on, fd);
	pthread_mutex_unlock(&mon_lock);
	return ret;
}

/* The backend's descriptor is readable but the generation has not moved
 * for us: records older than our cursor that nobody has pulled yet (they
 * keep a ring readable until some sync pulls them). Pull them, or the
 * poll would return at once, again and again. */
static void pull_backend(void)
{
	pthread_mutex_lock(&mon_lock);
	if (rc_mon.ops && rc_mon.ops->pull)
		rc_mon.ops->pull(&rc_mon);
	pthread_mutex_unlock(&mon_lock);
}

static int sleep_until_change(const struct rc_monitor_cursor *cur,
			      int timeout_ms, const struct timespec *end)
{
	struct pollfd pfd[2] = { { .fd = waiter.fd, .events = POLLIN },
				 { .fd = -1, .events = POLLIN } };
	int ret;

	ret = arm_backend(true, &pfd[1].fd);
	if (ret)
		goto out;
	atomic_store(&waiter.pub_fd, pfd[1].fd >= 0 ? waiter.fd : -1);
	atomic_store(&waiter.armed, true);
	for (;;) {
		struct timespec left = timeout_ms < 0 ? (struct timespec){ 0, 0 } :
							 rc_time_left(end);
		uint32_t bell;
		uint64_t n;

		atomic_store(&waiter.rung, false);
		bell = atomic_load(&waiter.bell);
		if (pfd[1].fd >= 0 && read(waiter.fd, &n, sizeof(n)) < 0 &&
		    errno != EAGAIN)
			rc_debug("read(eventfd): %s", strerror(errno));
		/* Pairs with the fence in wake_waiter(). The backend's arm
		 * (above) ordered its own reports the same way. */
		atomic_thread_fence(memory_order_seq_cst);
		if (!rc_monitor_current(cur)) {
			ret = 0;
			break;
		}
		if (timeout_ms >= 0 && !left.tv_sec && !left.tv_nsec) {
			ret = -ETIMEDOUT;
			break;
		}
		if (pfd[1].fd >= 0) {
			ret = ppoll(pfd, 2, timeout_ms < 0 ? NULL : &left, NULL);
			if (ret > 0 && (pfd[1].revents & POLLIN) &&
			    rc_monitor_current(cur))
				pull_backend();
		} else
			ret = (int)syscall(SYS_futex, &waiter.bell,
					   FUTEX_WAIT_PRIVATE, bell,
					   timeout_ms < 0 ? NULL : &left, NULL, 0);
		if (ret < 0 && errno != EINTR && errno != EAGAIN &&
		    errno != ETIMEDOUT) {
			ret = -errno;
			rc_error("sleeping until the monitor reports a change: %s",
				 strerror(-ret));
			break;
		}
	}
out:
	atomic_store(&waiter.armed, false);
	atomic_store(&waiter.pub_fd, -1);
	arm_backend(false, &pfd[1].fd);
	return ret;
}

int rc_monitor_wait(const struct rc_monitor_cursor *cur, int timeout_ms)
{
	struct timespec end = rc_deadline_ms(CLOCK_MONOTONIC, timeout_ms);
	int ret;

	if (!rc_monitor_current(cur))
		return 0;
	rc_fork_enable(RC_FORK_WAITER, &waiter_fork);
	if (timeout_ms < 0) {
		ret = pthread_mutex_lock(&waiter.lock);
	} else {
		/* Realtime, as sanitizers intercept timedlock but not
		 * clocklock; a clock step only shortens or lengthens the wait
		 * for the lock. */
		struct timespec rt = rc_deadline_ms(CLOCK_REALTIME, timeout_ms);

		ret = pthread_mutex_timedlock(&waiter.lock, &rt);
	}
	if (ret)
		return ret == ETIMEDOUT ? -ETIMEDOUT : -ret;
	if (waiter.fd < 0) {
		waiter.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (waiter.fd < 0) {
			ret = -errno;
			rc_error("eventfd for the monitor's waiter: %s",
				 strerror(-ret));
			goto out;
		}
	}
	ret = sleep_until_change(cur, timeout_ms, &end);
out:
	pthread_mutex_unlock(&waiter.lock);
	return ret;
}
