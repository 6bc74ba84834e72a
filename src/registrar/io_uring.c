/* SPDX-License-Identifier: MIT */
/*
 * The io_uring registrar: a region is one slot of the ring's sparse
 * fixed-buffer table. Registering fills the slot with the buffer's iovec
 * (the kernel pins the pages, like ibv_reg_mr); deregistering updates the
 * slot to an empty iovec, which unpins them once no request uses them.
 */
#include <errno.h>
#include <pthread.h>
#include <liburing.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <regcache/uring.h>

#include "../base/clock.h"
#include "../cache_registrar.h"
#include "../base/env.h"
#include "../base/log.h"

/* The kernel's limit on fixed buffers per ring (IORING_MAX_REG_BUFFERS). */
#define RC_URING_MAX_SLOTS 16384u

/*
 * Until io_uring's resource nodes were reworked in 2023, the kernel gave a
 * released buffer's pages back to RLIMIT_MEMLOCK's count late (a delayed
 * work, HZ): measured on 6.1, 1.02-1.07 s in a guest, idle or loaded
 * (tests/vm/release-lag-probe.c); 6.18 gives them back at once. There,
 * -ENOMEM after a release may be that lag rather than the limit.
 *
 * The kernel also counts the pages in the mm's pinned_vm (VmPin in
 * /proc/self/status), and gives them back to both at once. So a release
 * is still pending while VmPin exceeds the bytes this process's io_uring
 * caches hold: a registration that meets -ENOMEM then waits, polling,
 * until it succeeds, VmPin falls to what is held (the limit is reached),
 * or RELEASE_LAG_MAX_NS pass after the process's last release. Pins of
 * the process outside these caches (a ring or MR of its own) look like
 * pending releases, so at a real limit such a process waits out the bound.
 * Whether the kernel lags is seen at the process's first release (VmPin
 * does not fall); where it does not, -ENOMEM is the limit and fails at
 * once. Without VmPin, the wait is RELEASE_LAG_NS after the last release.
 * (A buffer in a transparent huge page is counted whole, so it too makes
 * VmPin exceed what is held.)
 */
#define RELEASE_LAG_NS 2000000000ll
#define RELEASE_LAG_MAX_NS 10000000000ll
#define RELEASE_POLL_US 20000

struct rc_uring {
	struct io_uring *ring;
	pid_t pid;		/* the process whose ring this is */
	unsigned first;
	unsigned count;
	bool owns_table;
	atomic_bool lag_helped;
	pthread_mutex_t lock;	/* protects free_slots; never held across a syscall */
	unsigned nr_free;
	unsigned *held_pages;	/* per slot (index - first): pages pinned */
	uintptr_t page_size;
	unsigned free_slots[];	/* stack of free slot indexes */
};

/* What the process's io_uring caches hold, in page-rounded bytes, and when
 * one of them last released a buffer (CLOCK_MONOTONIC; 0: never). A forked
 * child starts with a VmPin of 0 and none of the parent's caches usable,
 * so the first cache it creates starts these afresh. */
static _Atomic long long process_held_bytes;
static _Atomic long long process_last_release_ns;
static _Atomic pid_t process_counted;	/* whose counts these are */

enum release_timing { RELEASE_UNKNOWN, RELEASE_PROMPT, RELEASE_LATE };
static _Atomic int release_timing;	/* this kernel's, once seen */

/* Where releases are known to be prompt, -ENOMEM is the limit: nothing of
 * the above is consulted, so registrations do not keep it. */
static bool releases_may_lag(void)
{
	return atomic_load_explicit(&release_timing, memory_order_relaxed) !=
	       RELEASE_PROMPT;
}

/*
 * A forked child shares the parent's ring (the fd) but cannot use it (the
 * ring mappings are not inherited), and any update it made to the buffer
 * table would change the parent's registrations. So in a child this
 * registrar refuses to register and never touches the table.
 */
static bool in_child(const struct rc_uring *u)
{
	return getpid() != u->pid;
}

/* The bytes the kernel counts as pinned in this mm; -1 if unreadable. */
static long long vm_pinned_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	long long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmPin:", 6)) {
			kib = atoll(line + 6);
			break;
		}
	fclose(f);
	return kib < 0 ? -1 : kib << 10;
}

/* @len bytes at @addr, rounded out to whole pages: what the kernel pins. */
static unsigned pages_of(const struct rc_uring *u, const void *addr,
			 size_t len)
{
	uintptr_t start = (uintptr_t)addr & ~(u->page_size - 1);
	uintptr_t end = ((uintptr_t)addr + len + u->page_size - 1) &
			~(u->page_size - 1);

	return (unsigned)((end - start) / u->page_size);
}

/* Whether -ENOMEM at @t may still be released pages on their way back. */
static bool release_may_be_pending(long long t)
{
	long long last = atomic_load(&process_last_release_ns);
	long long pinned;

	if (!last || !releases_may_lag())
		return false;
	pinned = vm_pinned_bytes();
	if (pinned < 0)
		return t - last <= RELEASE_LAG_NS;
	return pinned > atomic_load(&process_held_bytes) &&
	       t - last <= RELEASE_LAG_MAX_NS;
}

/* Fill @slot with @iov; on -ENOMEM while a release may be pending, poll
 * until it has come back (see above). Every registration judges by what it
 * sees: waits that did not help (the limit was reached) never stop a later
 * one from waiting. */
static int update_slot(struct rc_uring *u, unsigned slot, struct iovec *iov)
{
	long long first_failure = 0;
	bool waited = false, last_try = false;
	int ret;

	for (;;) {
		ret = io_uring_register_buffers_update_tag(u->ring, slot, iov,
							   NULL, 1);
		if (ret != -ENOMEM || last_try)
			break;
		if (!first_failure)
			first_failure = rc_now_ns();
		if (!release_may_be_pending(rc_now_ns())) {
			if (!waited)
				break;
			last_try = true; /* they may have come back since */
			continue;
		}
		waited = true;
		usleep(RELEASE_POLL_US);
	}
	if (ret == 1 && waited && !atomic_exchange(&u->lag_helped, true))
		rc_info("io_uring gave released buffers back to RLIMIT_MEMLOCK "
			"%lld ms late; registrations that meet this wait for it",
			(rc_now_ns() - first_failure) / 1000000);
	return ret;
}

/* Release @slot (an empty iovec); the first release of the process also
 * shows whether this kernel gives the pages back at once. */
static int release_slot(struct rc_uring *u, unsigned slot)
{
	struct iovec empty = { 0 };
	bool lags = releases_may_lag();
	bool probe = atomic_load(&release_timing) == RELEASE_UNKNOWN;
	long long before = probe ? vm_pinned_bytes() : -1;
	int ret;

	ret = io_uring_register_buffers_update_tag(u->ring, slot, &empty,
						   NULL, 1);
	if (ret != 1 || !lags)
		return ret;
	atomic_fetch_sub(&process_held_bytes,
			 (long long)u->held_pages[slot - u->first] *
			 (long long)u->page_size);
	atomic_store(&process_last_release_ns, rc_now_ns());
	if (before >= 0) {
		long long after = vm_pinned_bytes();

		if (after >= 0)
			atomic_store(&release_timing, after < before ?
				     RELEASE_PROMPT : RELEASE_LATE);
	}
	return ret;
}

static int uring_reg(void *ctx, void *addr, size_t len, unsigned access,
		     void **handle)
{
	struct rc_uring *u = ctx;
	struct iovec iov = { .iov_base = addr, .iov_len = len };
	unsigned slot;
	int ret;

	(void)access; /* fixed buffers are always readable and writable */
	if (in_child(u)) {
		rc_warn("io_uring cache used in a forked child: the ring and its "
			"buffer table belong to the parent; create a new ring "
			"and cache in the child");
		return -ECHILD;
	}
	pthread_mutex_lock(&u->lock);
	if (!u->nr_free) {
		pthread_mutex_unlock(&u->lock);
		return -ENOSPC;
	}
	slot = u->free_slots[--u->nr_free];
	pthread_mutex_unlock(&u->lock);

	ret = update_slot(u, slot, &iov);
	if (ret == 1) {
		if (releases_may_lag()) {
			unsigned pages = pages_of(u, addr, len);

			u->held_pages[slot - u->first] = pages;
			atomic_fetch_add(&process_held_bytes,
					 (long long)pages * (long long)u->page_size);
		}
		*handle = (void *)(uintptr_t)(slot + 1);
		return 0;
	}
	pthread_mutex_lock(&u->lock);
	u->free_slots[u->nr_free++] = slot;
	pthread_mutex_unlock(&u->lock);
	if (ret >= 0)
		ret = -EIO;
	rc_debug("io_uring buffer update of slot %u (%p+%zu) failed: %s", slot,
		 addr, len, strerror(-ret));
	return ret;
}

static void uring_dereg(void *ctx, void *handle)
{
	struct rc_uring *u = ctx;
	unsigned slot = (unsigned)((uintptr_t)handle - 1);
	int ret;

	if (in_child(u))
		return;
	ret = release_slot(u, slot);
	if (ret != 1) {
		rc_error("could not release fixed buffer slot %u: %s; the "
			 "slot is lost until the ring is closed", slot,
			 strerror(ret < 0 ? -ret : EIO));
		return;
	}
	pthread_mutex_lock(&u->lock);
	u->free_slots[u->nr_free++] = slot;
	pthread_mutex_unlock(&u->lock);
}

static const struct regcache_ops uring_ops = {
	.reg = uring_reg,
	.dereg = uring_dereg,
};

static void uring_destroy(void *priv)
{
	struct rc_uring *u = priv;

	if (u->owns_table && !in_child(u))
		io_uring_unregister_buffers(u->ring);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

static int create(struct io_uring *ring, unsigned first, unsigned count,
		  bool owns_table, const struct regcache_params *params,
		  struct regcache **cache)
{
	struct regcache_params p = { 0 };
	struct rc_uring *u;
	int ret;

	u = calloc(1, sizeof(*u) + 2 * count * sizeof(u->free_slots[0]));
	if (!u)
		return -ENOMEM;
	u->held_pages = &u->free_slots[count];
	u->page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (atomic_exchange(&process_counted, u->pid) != u->pid) {
		atomic_store(&process_held_bytes, 0);
		atomic_store(&process_last_release_ns, 0);
	}
	u->ring = ring;
	u->pid = getpid();
	u->first = first;
	u->count = count;
	u->owns_table = owns_table;
	pthread_mutex_init(&u->lock, NULL);
	/* Lowest slots on top of the stack: small, stable indexes. */
	for (unsigned i = 0; i < count; i++)
		u->free_slots[u->nr_free++] = first + count - 1 - i;

	if (params)
		p = *params;
	p.ops = &uring_ops;
	p.ctx = u;
	ret = rc_cache_create(&p, &(struct rc_registrar){
		.priv = u, .destroy = uring_destroy, .max_regions = count },
		cache);
	if (ret) {
		pthread_mutex_destroy(&u->lock);
		free(u);
	}
	return ret;
}

/*
 * A table of @n empty slots. Sparse registration (IORING_RSRC_REGISTER_SPARSE)
 * is 5.19; from 5.13 on a table may hold empty iovecs, so before 5.19 (Ubuntu
 * 22.04's 5.15, RHEL 9's 5.14) the same table is registered as @n empty
 * iovecs, which the kernel keeps as empty slots alike. Before 5.13 both fail
 * (-EINVAL, then -EFAULT for the NULL base). $REGCACHE_URING_NO_SPARSE takes
 * the second way on any kernel (tests/uring-no-sparse.c).
 */
static int register_empty_table(struct io_uring *ring, unsigned n)
{
	bool forced = rc_env_flag(RC_ENV_URING_NO_SPARSE);
	struct iovec *empty;
	int ret = -EINVAL;

	if (!forced)
		ret = io_uring_register_buffers_sparse(ring, n);
	if (ret != -EINVAL)
		return ret;
	empty = calloc(n, sizeof(*empty));
	if (!empty)
		return -ENOMEM;
	ret = io_uring_register_buffers(ring, empty, n);
	free(empty);
	if (!ret)
		rc_info("regcache_uring_create: no sparse buffer tables "
			"(Linux < 5.19%s): registered %u empty slots instead",
			forced ? ", or $REGCACHE_URING_NO_SPARSE" : "", n);
	return ret;
}

int regcache_uring_create(struct io_uring *ring,
			  const struct regcache_params *params,
			  struct regcache **cache)
{
	int ret;

	if (!ring || !cache) {
		rc_warn("regcache_uring_create: ring and cache must not be NULL");
		return -EINVAL;
	}
	ret = register_empty_table(ring, RC_URING_MAX_SLOTS);
	if (ret == -EBUSY) {
		rc_warn("regcache_uring_create: the ring already has a fixed "
			"buffer table; create the cache before registering "
			"buffers, or hand it empty slots with "
			"regcache_uring_create_slots()");
		return ret;
	}
	if (ret) {
		rc_warn("regcache_uring_create: registering a sparse table of "
			"%u buffers failed: %s%s", RC_URING_MAX_SLOTS,
			strerror(-ret), ret == -EFAULT || ret == -EINVAL ?
			" (empty fixed-buffer slots need Linux 5.13)" : "");
		return ret;
	}
	ret = create(ring, 0, RC_URING_MAX_SLOTS, true, params, cache);
	if (ret)
		io_uring_unregister_buffers(ring);
	return ret;
}

int regcache_uring_create_slots(struct io_uring *ring, unsigned first,
				unsigned count,
				const struct regcache_params *params,
				struct regcache **cache)
{
	if (!ring || !cache || !count || first >= RC_URING_MAX_SLOTS ||
	    count > RC_URING_MAX_SLOTS - first) {
		rc_warn("regcache_uring_create_slots(first=%u, count=%u): "
			"need a ring, a cache pointer and 1..%u slots within "
			"the table", first, count, RC_URING_MAX_SLOTS);
		return -EINVAL;
	}
	return create(ring, first, count, false, params, cache);
}

int regcache_region_buf_index(const struct regcache_region *region)
{
	if (!region)
		return -EINVAL;
	return (int)((uintptr_t)regcache_region_handle(region) - 1);
}
