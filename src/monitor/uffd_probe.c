/* SPDX-License-Identifier: MIT */
/*
 * Whether a change of a VMA registered with the userfaultfd backend
 * (uffd.h) is in flight: the kernel raises the context's mmap_changing
 * before the pages change and drops it once the monitor thread has read
 * the event. The probes ask it: of the sentinel page, or of an empty
 * range once a self-test at start() showed that the kernel answers it.
 */
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../base/env.h"
#include "../base/log.h"
#include "uffd.h"

/* Bounded wait in ->validate() for an event in flight to be published. */
#define RC_UFFD_VALIDATE_SPINS 2000

/*
 * The sentinel is registered in MISSING|WP mode when the kernel allows it,
 * so that ->validate() can probe it with UFFDIO_ZEROPAGE: that ioctl takes
 * only the VMA's own lock (uffd_mfill_lock), not the process-wide mmap
 * lock that UFFDIO_WRITEPROTECT takes, and the populated page answers
 * EEXIST right after the mmap_changing check. Nobody ever touches the
 * page, so MISSING mode never raises a fault.
 */
int rc_uffd_register_sentinel(void)
{
	struct uffdio_register reg = {
		.range = { (uintptr_t)rc_uffd.sentinel, rc_uffd.page },
		.mode = UFFDIO_REGISTER_MODE_WP | UFFDIO_REGISTER_MODE_MISSING,
	};

	if (rc_load_relaxed(&rc_uffd.zeropage_probe) &&
	    !ioctl(rc_uffd.fd, UFFDIO_REGISTER, &reg))
		return 0;
	rc_store_relaxed(&rc_uffd.zeropage_probe, false);
	return rc_uffd_register((uintptr_t)rc_uffd.sentinel,
			     (uintptr_t)rc_uffd.sentinel + rc_uffd.page);
}

/* 0 when no change of a registered VMA is in flight (mmap_changing is 0),
 * -EAGAIN when one is, another -errno when the probe itself failed. */
static int probe(void)
{
	if (rc_load_relaxed(&rc_uffd.zeropage_probe)) {
		struct uffdio_zeropage z = {
			.range = { (uintptr_t)rc_uffd.sentinel, rc_uffd.page },
			.mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE,
		};

		if (!ioctl(rc_uffd.fd, UFFDIO_ZEROPAGE, &z) || errno == EEXIST)
			return 0;
	} else {
		struct uffdio_writeprotect wp = {
			.range = { (uintptr_t)rc_uffd.sentinel, rc_uffd.page },
			.mode = 0,
		};

		if (!ioctl(rc_uffd.fd, UFFDIO_WRITEPROTECT, &wp))
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
int rc_uffd_hit_probe(void)
{
	struct uffdio_writeprotect wp = { .range = { 0, 0 }, .mode = 0 };
	long ret;

	if (!rc_uffd.empty_probe)
		return probe();
	ret = ioctl_raw(rc_uffd.fd, UFFDIO_WRITEPROTECT, &wp);
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

	munmap(sc->page, rc_uffd.page);
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
	struct pollfd p = { .fd = rc_uffd.fd, .events = POLLIN };
	struct uffd_msg m[4];

	while (!rc_load_acquire(&sc->done))
		if (read(rc_uffd.fd, m, sizeof(m)) < 0 && errno == EAGAIN)
			poll(&p, 1, 10);
	while (read(rc_uffd.fd, m, sizeof(m)) > 0)
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
	struct pollfd p = { .fd = rc_uffd.fd, .events = POLLIN };
	struct scratch sc = { .done = 0 };
	pthread_t t;
	bool ok = false;

	rc_uffd.empty_probe = true;
	sc.page = mmap(NULL, rc_uffd.page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sc.page == MAP_FAILED)
		return false;
	if (rc_uffd_hit_probe() || rc_uffd_register((uintptr_t)sc.page,
					 (uintptr_t)sc.page + rc_uffd.page)) {
		munmap(sc.page, rc_uffd.page);
		return false;
	}
	if (pthread_create(&t, NULL, unmap_scratch, &sc)) {
		/* Unregister first: nobody would read its UNMAP event. */
		struct uffdio_range r = { (uintptr_t)sc.page, rc_uffd.page };

		if (!ioctl(rc_uffd.fd, UFFDIO_UNREGISTER, &r))
			munmap(sc.page, rc_uffd.page);
		return false;
	}
	/* The event stays queued until we read it: poll until it is, or
	 * until the munmap returned without one. */
	while (!rc_load_acquire(&sc.done)) {
		if (poll(&p, 1, 10) > 0) {
			ok = rc_uffd_hit_probe() == -EAGAIN;
			break;
		}
	}
	drain_until_done(&sc);
	pthread_join(t, NULL);
	return ok && rc_uffd_hit_probe() == 0;
}

/* With the empty probe nothing needs the sentinel any more: a page of ours
 * that stays registered is one more page whose loss (an application's
 * MAP_FIXED over an address it does not own) we would have to survive. No
 * thread reads yet: unregister before the unmap, and keep the page mapped
 * if that fails (closing the fd unregisters it). */
static void drop_sentinel(void)
{
	struct uffdio_range r = { (uintptr_t)rc_uffd.sentinel, rc_uffd.page };

	if (ioctl(rc_uffd.fd, UFFDIO_UNREGISTER, &r))
		return;
	munmap(rc_uffd.sentinel, rc_uffd.page);
	rc_uffd.sentinel = NULL;
}

int rc_uffd_probe_start(uint64_t ioctls)
{
	int ret;

	/* The sentinel proves that WP registration works (Linux 5.7+ for
	 * anonymous memory) and is what ->validate() probes. */
	/* PROT_READ: its VMA flags differ from every read-write mapping, so
	 * the kernel never merges it into a watched VMA that a sweep could
	 * later unregister together with it. */
	rc_uffd.sentinel = mmap(NULL, rc_uffd.page, PROT_READ,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (rc_uffd.sentinel == MAP_FAILED) {
		ret = -errno;
		rc_uffd.sentinel = NULL;
		rc_info("userfaultfd monitor unavailable: mmap of its sentinel "
			"page: %s" RC_UFFD_SEE_INFO, strerror(-ret));
		return ret;
	}
	rc_store_relaxed(&rc_uffd.zeropage_probe,
			 (ioctls & (1ull << _UFFDIO_ZEROPAGE)) &&
				 !rc_env_flag(RC_ENV_UFFD_WP_PROBE));
	ret = rc_uffd_register_sentinel();
	if (!ret)
		ret = probe();
	if (ret) {
		rc_info("userfaultfd monitor unavailable: write-protect mode on "
			"anonymous memory does not work here: %s (Linux 5.7+ "
			"needed)" RC_UFFD_SEE_INFO, strerror(-ret));
		return ret;
	}
	rc_uffd.empty_probe = !rc_env_flag(RC_ENV_UFFD_SENTINEL_PROBE) &&
			      empty_probe_works();
	if (!rc_uffd.empty_probe)
		rc_debug("hits probe the sentinel page (%s)",
			 rc_load_relaxed(&rc_uffd.zeropage_probe) ?
				 "UFFDIO_ZEROPAGE" :
					       "UFFDIO_WRITEPROTECT");
	else
		drop_sentinel();
	return 0;
}

/*
 * Close the window between an unmap and the monitor's read of its event
 * (docs/kernel-facts.md): another thread may map the same address again
 * and hit.
 *
 * Every UNMAP, REMAP and REMOVE of a registered VMA raises the context's
 * mmap_changing *before* the pages change, and drops it only after our
 * read() returned the event. rc_uffd_hit_probe() answers EAGAIN while it
 * is raised and touches nothing of the region, so its cost does not depend
 * on the region's size. A zero answer proves that every change that began
 * before it was read; an even generation afterwards proves it was also
 * published, and the cache re-checks its generation after this returns
 * (cache.c:probe_hit).
 */
int rc_uffd_validate(struct rc_monitor *mon, uintptr_t start,
			 uintptr_t end)
{
	(void)mon, (void)start, (void)end;
	if (rc_uffd_solo_hit())
		return 0;
	for (int i = 0; i < RC_UFFD_VALIDATE_SPINS; i++) {
		int ret = rc_uffd_hit_probe();

		if (!ret) {
			/* The kernel's load of mmap_changing before our load
			 * of the generation (free on x86). */
			atomic_thread_fence(memory_order_acquire);
			/* Pairs with batch_begin(): the read that let
			 * mmap_changing drop came after it. */
			if (!(atomic_load_explicit(&rc_uffd.gen,
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
