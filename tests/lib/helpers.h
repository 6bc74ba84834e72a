/* SPDX-License-Identifier: MIT */
/* Test helpers: exit codes, checks that print expected and actual, and the
 * DMA oracle (READ_FIXED from a pipe into a registered buffer). */
#ifndef T_HELPERS_H
#define T_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <regcache.h>
#include <regcache/uring.h>

#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77

extern int t_failures;

#define T_CHECK(cond)                                                        \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                  \
			t_failures++;                                        \
		}                                                            \
	} while (0)

#define T_EXPECT_EQ(expected, actual)                                        \
	do {                                                                 \
		long long e_ = (long long)(expected), a_ = (long long)(actual); \
		if (e_ != a_) {                                              \
			fprintf(stderr, "%s:%d: %s: expected %lld, got %lld\n", \
				__FILE__, __LINE__, #actual, e_, a_);        \
			t_failures++;                                        \
		}                                                            \
	} while (0)

/* @cond must hold, or the program ends FAIL through @quit (exit, or _exit
 * in a forked child): setup errors are failures, not skips. */
#define T_REQUIRE_OR(cond, quit)                                             \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: required: %s\n", __FILE__,   \
				__LINE__, #cond);                            \
			quit(T_EXIT_FAIL);                                   \
		}                                                            \
	} while (0)
#define T_REQUIRE(cond) T_REQUIRE_OR(cond, exit)

/*
 * T_REQUIRE for a forked child: _exit(), because exit() would run the
 * parent's atexit handlers in the child and, under ThreadSanitizer, wait
 * for the sanitizer's background thread, which fork did not copy: the
 * child would hang instead of failing.
 */
#define T_CHILD_REQUIRE(cond) T_REQUIRE_OR(cond, _exit)

static inline int t_exit_status(void)
{
	if (t_failures)
		fprintf(stderr, "FAIL: %d checks failed\n", t_failures);
	return t_failures ? T_EXIT_FAIL : T_EXIT_PASS;
}

/* Iteration counts shrink under sanitizers, which are 5-20x slower; so do
 * the durations of timed stress runs, which there look for races and
 * memory errors rather than for rare interleavings. Counts also shrink by
 * $REGCACHE_TEST_SLOWDOWN (an integer; tests/vm/run.sh sets 4 under
 * QEMU's emulation), never below 1. T_SECONDS(s) is a timed stress run's
 * default length: s seconds in CI, times the build's REGCACHE_TEST_STRESS
 * (T_STRESS_FACTOR; larger for a soak run). */
#ifndef T_STRESS_FACTOR
#define T_STRESS_FACTOR 1
#endif
#ifdef REGCACHE_SANITIZE
#define T_SCALE_BUILD 8
#define T_SECONDS(s) ((s) * T_STRESS_FACTOR / 3.0)
#else
#define T_SCALE_BUILD 1
#define T_SECONDS(s) ((double)(s) * T_STRESS_FACTOR)
#endif
#define T_SCALE(n) ((__typeof__(n))t_scale((long)(n) / T_SCALE_BUILD))
int t_scale(long n);
/* (crash.c) a SIGSEGV, SIGBUS, SIGILL or SIGFPE prints the signal, the
 * address and the thread's stack to stderr, then kills the process as it
 * would have; installed before main() in every test (not under a
 * sanitizer, which reports on its own). */
void t_crash_report_install(void);
/* $REGCACHE_TEST_SLOWDOWN, 1 when unset: what watchdogs multiply by. */
int t_slowdown(void);

/* A timed stress run's only argument, [--seconds S]: S, or @dflt without
 * it. Anything else prints the usage and exits 2. */
double t_arg_seconds(int argc, char **argv, double dflt);

/*
 * The monitor under test. CTest registers a scenario once per monitor
 * (regcache_add_test(... MONITORS bpf userfaultfd ...)) and sets
 * REGCACHE_MONITOR for each run.
 *
 * t_monitor_require(): call after creating the first cache. Returns when the
 * process-wide monitor is the one REGCACHE_MONITOR asks for (or any, when
 * it is unset or "auto"). Otherwise exits 77 with the reason when that
 * monitor cannot run here at all (no CAP_BPF, no userfaultfd, no daemon
 * socket), and 1 when it should have worked.
 * t_monitor_is(): the running monitor is @name.
 */
void t_monitor_require(void);
bool t_monitor_is(const char *name);

/*
 * For a program that tests one backend (bpf-*, uffd-*): ask for monitor
 * @name, whatever REGCACHE_MONITOR says, before the first cache is created;
 * t_monitor_require() then insists on it.
 */
void t_monitor_only(const char *name);

/*
 * Exit 77 with the reason when monitor @name cannot run in this process at
 * all; for tests that must know before they create a cache.
 */
void t_monitor_skip_unavailable(const char *name);

/*
 * In a forked child: die (SIGKILL) when the thread that forked it dies, so
 * that a test killed by its timeout leaves no child behind (an orphan
 * keeps the shared lock file of the test runs open). @parent is the
 * parent's pid before fork(); if it already died, exit at once. A change
 * of credentials (dropping privileges) clears this: call it after that.
 */
void t_die_with_parent(pid_t parent);

/* A ring for fixed-buffer DMA; exits FAIL if io_uring is unavailable. */
void t_ring_init(struct io_uring *ring);
/*
 * t_uring_require_registrable(): skip (77) unless io_uring fixed buffers
 * can register [buf, buf+len) on this kernel. Kernels such as 6.1 refuse
 * file-backed memory other than shmem and hugetlbfs (EOPNOTSUPP), SysV
 * shm among it; the verbs tests on a real device cover such memory there.
 */
void t_uring_require_registrable(void *buf, size_t len, const char *what);

/* A cache on @ring with the given flags and limits. */
struct regcache *t_uring_cache(struct io_uring *ring, unsigned flags,
			       size_t max_regions, size_t max_bytes);
/* The monitor tests' cache: @ring set up, a cache on it with no flags and
 * no limits, and the monitor under test running (t_monitor_require()). */
struct regcache *t_monitor_cache(struct io_uring *ring);

/*
 * The DMA oracle: write @len bytes of a pattern derived from @seed into a
 * pipe, READ_FIXED them into @buf through @region's fixed buffer, and
 * compare what the application sees at @buf. Returns true when the bytes
 * arrived, false when they went elsewhere (a stale registration). Fails the
 * test on an I/O error; a read the kernel canceled before it ran
 * (-ECANCELED: no io-wq worker could start under a signal storm) is
 * submitted again. @len must be <= 64 KiB (one pipe write).
 */
bool t_dma_visible(struct io_uring *ring, struct regcache_region *region,
		   void *buf, size_t len, unsigned seed);

/*
 * The kernel counts pinned memory per user, not per process: what other
 * processes of this uid still pin (an earlier test's, a killed process's
 * ring torn down late) comes off this process's RLIMIT_MEMLOCK. Waits (10 s
 * times t_slowdown()) until 3/4 of @limit, the cache's budget, can be
 * pinned here, and then until the kernel has given that probe's pages back
 * (VmPin as before); false, with the uid's processes printed, if it never
 * can.
 */
bool t_user_memlock_free(size_t limit);
/* As root, after t_user_memlock_free() failed in a child: print every open
 * io_uring of the machine (process, uid, the fixed buffers its fdinfo
 * lists) and every task whose kernel stack is in io_uring's teardown, so
 * that the holder of a user's pinned memory can be named. */
void t_io_uring_census(void);

/* The byte at @i of the pattern that t_prep_read_visible() writes. */
unsigned char t_prep_byte(unsigned seed, size_t i);
/*
 * Write @len pattern bytes into a pipe, let regcache_uring_prep_read_fixed()
 * prepare the READ_FIXED into @buf, reap it, put the region (found again
 * through the CQE's user_data), and return whether the application sees
 * the bytes at @buf. Fails the test on an I/O or API error.
 */
bool t_prep_read_visible(struct io_uring *ring, struct regcache *c, void *buf,
			 size_t len, unsigned seed);

/* Number of lines in /proc/self/maps (the VMA count). */
long t_vma_count(void);

/* The process's address space (VmSize of /proc/self/status), in bytes. */
size_t t_vm_size(void);

/* Page-aligned anonymous mapping; exits FAIL on error. */
void *t_map(size_t len);
/* The same in small pages only (MADV_NOHUGEPAGE), for tests at a small
 * RLIMIT_MEMLOCK: io_uring counts a transparent huge page whole, so a
 * 4 KiB buffer in one costs 2 MiB of the limit, and the adjacent mappings
 * of a test merge into VMAs where a huge page fits (Debian's kernels fault
 * them in: THP "always"). */
void *t_map_small_pages(size_t len);

/* munmap [@buf, @buf+@len) and map fresh anonymous pages at the same
 * address (MAP_FIXED_NOREPLACE: nothing else took it in between); exits
 * FAIL if either fails. The change under a cached region that a monitor
 * must see. */
void t_remap(void *buf, size_t len);

/* mmap(NULL, @len) until the kernel hands back @want, which another thread
 * is unmapping: every other address is given back at once. Returns @want,
 * mapped; NULL after 20000 tries, when another thread (a monitor's, a
 * sanitizer's) took the hole first and keeps it. */
char *t_map_until(void *want, size_t len);

/*
 * regcache_get(@c, @buf, @len, 0, @r), which must succeed (else exit
 * FAIL): returns by how much the cache's hit count moved across it, 1 for
 * a hit and 0 for a miss when no other thread gets meanwhile.
 */
long t_get_hits(struct regcache *c, void *buf, size_t len,
		struct regcache_region **r);

/*
 * Run @fn(@arg) in a forked child, which exits with what @fn returns, and
 * wait for it; returns its wait status. Stdout is flushed first, so that
 * the child does not print again what this process buffered. With
 * @die_with_parent the child calls t_die_with_parent() first.
 */
int t_fork_wait(int (*fn)(void *arg), void *arg, bool die_with_parent);

/* Seconds on CLOCK_MONOTONIC: for deadlines and elapsed times. */
double t_now(void);

/* Under regcached-launch (RCD_TEST_CONTROL): ask the launcher, which runs
 * as root, to act on the private daemon ('K' SIGKILL, 'T' SIGTERM, 'S'
 * start it again) and wait until it has. */
void t_daemon_ctl(char cmd);

/* The next number of the xorshift32 sequence in *@s (a nonzero seed stays
 * nonzero): cheap, reproducible randomness for stress tests. */
unsigned t_rnd(unsigned *s);

/*
 * A tracking registrar: real io_uring fixed buffers (pages really pinned)
 * plus a table of what each slot holds, so tests can check that the cache
 * never deregisters a region under its holder and leaks nothing.
 */
#define T_REG_SLOTS 16384
struct t_registrar {
	struct io_uring ring;
	pthread_mutex_t lock;
	unsigned nslots;
	unsigned nfree;
	unsigned free_slots[T_REG_SLOTS];
	struct {
		_Atomic int registered;
		uintptr_t addr;
		size_t len;
		uint64_t pfn;	/* of the first page, when registered */
	} slot[T_REG_SLOTS];
	_Atomic long live, regs, deregs;
};
extern const struct regcache_ops t_registrar_ops;

/* Set up @t with a real sparse table of @nslots fixed buffers. */
void t_registrar_init(struct t_registrar *t, unsigned nslots);
void t_registrar_fini(struct t_registrar *t);
struct regcache *t_registrar_cache(struct t_registrar *t, unsigned flags,
				   size_t max_regions, size_t max_bytes);
/* true if @region's handle is a registered slot covering [addr, addr+len) */
bool t_registrar_covers(struct t_registrar *t, struct regcache_region *region,
			const void *addr, size_t len);

/* The page frame number behind @addr from /proc/self/pagemap (needs root;
 * 0 if the page is not present). A second, independent staleness oracle:
 * a registration pins the frames that were mapped when it was made. */
uint64_t t_pfn(const void *addr);

/* true if @region (from a t_registrar cache) pinned the frame that @addr
 * maps now. */
bool t_registrar_same_pages(struct t_registrar *t,
			    struct regcache_region *region, const void *addr);

/*
 * The null registrar: registers nothing; each handle records whether it
 * is registered and which process registered it, so that a test can ask
 * what a get served. Handles are never freed (a holder may still look at
 * one after the cache deregistered it) and all stay reachable from a
 * list, so LeakSanitizer does not call them leaks. A second
 * deregistration of a handle aborts.
 */
struct t_null_handle {
	_Atomic int live;
	pid_t pid;
	struct t_null_handle *next;
};
extern const struct regcache_ops t_null_ops;
/* Registrations and deregistrations so far, in this process. */
extern _Atomic long t_null_regs, t_null_deregs;
/* A cache on t_null_ops with REGCACHE_FLAG_EXPLICIT_INVALIDATE (nothing
 * to monitor: the tests invalidate themselves) and @max_regions. */
struct regcache *t_null_cache(size_t max_regions);

/*
 * A change under a cached region, proven with DMA (the monitor tests):
 *   1. t_case_begin: get + put caches [buf, buf+len); a second get hits and
 *      is held.
 *   2. the test changes the pages and maps fresh memory at the address.
 *   3. t_case_end: negative control, DMA through the held (old) registration
 *      is not visible when @stale_expected (the change really stranded the
 *      old pages); then put, get again: must be a miss with visible DMA.
 * Returns true when step 3 passed; failures are counted in t_failures.
 * (Steps: held region = @held; in step 3 it is still pinned while held,
 * which is why its DMA lands in the old pages.)
 */
struct t_case {
	struct io_uring *ring;
	struct regcache *cache;
	struct regcache_region *held;
	char *buf;
	size_t len;
	struct regcache_stats before;
};
void t_case_begin(struct t_case *k, struct io_uring *ring, struct regcache *c,
		  void *buf, size_t len);
bool t_case_end(struct t_case *k, const char *what, bool stale_expected);

/*
 * Memory the monitor must refuse to cache (the userfaultfd monitor cannot
 * watch shared or file-backed memory): every get is served pass-through
 * (counted as uncached, never a hit), so after @change(@arg), which must
 * leave fresh pages at [buf, buf+len), a new get sees them. Negative
 * control: DMA through the registration held across the change is not
 * visible.
 */
void t_passthrough_case(struct io_uring *ring, struct regcache *c, char *buf,
			size_t len, void (*change)(void *), void *arg,
			const char *what);

/*
 * Fault-injection cases (a seccomp filter, a resource limit), each in a
 * child of its own, so that what a case installs dies with it and a hang
 * fails the test instead of hanging CI.
 */
#ifdef REGCACHE_SANITIZE
#define T_CASE_SECONDS 60
#else
#define T_CASE_SECONDS 20
#endif
struct t_child_cases {
	int passed, failed, skipped;
};
/*
 * Run @fn(@arg) in a forked child (which dies with this process) and count
 * its exit status in @k: 0 passes ("  ok" and the time), 77 skips, a signal
 * is a CRASH, anything else a FAIL. A child still running after
 * T_CASE_SECONDS (times t_slowdown()) is a HANG: where each of its threads
 * sleeps is printed, then it is killed. @what names the case in those
 * lines.
 */
void t_child_case(struct t_child_cases *k, const char *what,
		  int (*fn)(const void *arg), const void *arg);
/* Print the counts; FAIL if a case failed, SKIP if none passed. */
int t_child_cases_status(const struct t_child_cases *k);

/* (seccomp.c) from now on, system call @nr fails with @err (ENOSYS, EPERM,
 * ...) in every thread of the process (x86_64 calls; others allowed).
 * Returns 0 or -errno. */
int t_seccomp_deny(long nr, int err);

/*
 * A registrar that stops one registration in flight: as
 * t_registrar_ops (ctx is a struct t_registrar), except that the first reg
 * after t_pending_arm() pins the pages and then waits inside ops->reg (not
 * yet in the cache, no cache lock held) until t_pending_release().
 * t_pending_wait() returns once that registration waits. One at a time per
 * process.
 */
extern const struct regcache_ops t_pending_ops;
void t_pending_arm(void);
void t_pending_wait(void);
void t_pending_release(void);
/*
 * The registration in flight: set up @t (64 slots) and a cache on
 * t_pending_ops over it with REGCACHE_FLAG_EXPLICIT_INVALIDATE; arm, and
 * start a thread whose get of [@buf, @buf+@len) misses and waits inside
 * ops->reg; return once it waits. After t_pending_release(),
 * t_pending_get_join() returns what that get returned (the thread puts
 * the region it got).
 */
struct regcache *t_pending_get_start(struct t_registrar *t, void *buf,
				     size_t len);
int t_pending_get_join(void);

/* (churn.c) get [buf, buf+len), DMA-check it, put; a failed get or a stale
 * byte is reported and counted in t_failures (returns false). */
bool t_get_dma_checked(struct io_uring *ring, struct regcache *c, char *buf,
		       size_t len, unsigned seed);
/* (churn.c) twelve DMA-checked gets of @buf and of a sub-range, across raw
 * munmap, MAP_FIXED, mremap away and MADV_DONTNEED of its @len bytes
 * (@len > 3100). */
void t_churn_scenario(struct io_uring *ring, struct regcache *c, char *buf,
		      size_t len);

/*
 * (churn.c) The reuse race: an unmapping thread (t_reuse_unmapper) unmaps
 * a cached range X while this thread maps until it gets X back
 * (t_map_until) and gets it again. Such a get must miss, and DMA through
 * it (every 16th reuse, and every hit) must be visible; a hit or a DMA
 * that went elsewhere counts as stale.
 */
struct t_reuse_race {
	struct io_uring *ring;
	struct regcache *cache;
	size_t len;
	_Atomic(char *) victim;	/* X, published for the unmapper */
	_Atomic int go, stop;	/* for the unmapper: start, return */
	/* Counted by the last t_reuse_race_run(). */
	long reuses, misses, dma_checked, stale;
};
/* The unmapping thread's body (@arg: the struct t_reuse_race): waits for
 * go, then unmaps each X published until stop. */
void *t_reuse_unmapper(void *arg);
/* Race until @want reuses, counted in @k; returns the stale gets. */
long t_reuse_race_run(struct t_reuse_race *k, long want);

#endif
