/* SPDX-License-Identifier: MIT */
/*
 * The catalogue of changes (changes.h): the generic begin/end around a
 * change, the cases, and the driver.
 */
#include <malloc.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "changes.h"
#include "uring_madvise.h"

#define LEN 65536

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

static const struct t_oracle *oracle;
static struct regcache_region *get(void *buf, size_t len);
static struct regcache *cache;
static bool naive;
static const char *daemon_mode = "plain";
static int daemon_kills;
static int cases, stale, naive_stale, expected_stale, not_possible, blind;

/* ---- the oracle around one change ---- */

enum caching { MUST_CACHE, MUST_NOT_CACHE, MAY_CACHE };

/* What the monitor must do with @mem: the eBPF monitor (in process or in
 * regcached) watches shared pages through their file; userfaultfd cannot
 * write-protect them and another process may change them. */
static enum caching caching(enum t_memory mem)
{
	if (naive)
		return MUST_CACHE;
	if (t_monitor_is("none"))
		return MUST_NOT_CACHE;
	switch (mem) {
	case T_ANON:
		return MUST_CACHE;
	case T_SHARED:
		return t_monitor_is("userfaultfd") ? MUST_NOT_CACHE
						   : MUST_CACHE;
	case T_PRIVATE_FILE:
		break;
	}
	return MAY_CACHE;
}

/* A get that the naive cache does not answer from an old case's buffer
 * at the same address. */
static struct regcache_region *get_anew(void *buf, size_t len)
{
	if (naive)
		regcache_invalidate(cache, buf, len);
	return get(buf, len);
}

static struct regcache_region *get(void *buf, size_t len)
{
	struct regcache_region *r;
	int ret = regcache_get(cache, buf, len, oracle->access, &r);

	if (ret) {
		fprintf(stderr, "regcache_get(%p, %zu): %s\n", buf, len,
			strerror(-ret));
		exit(T_EXIT_FAIL);
	}
	return r;
}

/* Between caching X and changing it: what --daemon asks. */
static void before_change(void)
{
	if (!strcmp(daemon_mode, "plain"))
		return;
	t_daemon_ctl('K');
	daemon_kills++;
	if (!strcmp(daemon_mode, "restart"))
		t_daemon_ctl('S');
}

static void after_change(void)
{
	if (!strcmp(daemon_mode, "dead"))
		t_daemon_ctl('S');
}

void t_change_begin(struct t_change *k, char *buf, size_t len,
		    enum t_memory mem)
{
	struct regcache_stats st;
	struct regcache_region *r;
	enum caching want = caching(mem);

	/* The naive cache starts each case from a fresh registration, so
	 * that only this case's change can make it stale. */
	k->buf = buf;
	k->len = len;
	k->mem = mem;
	r = get_anew(buf, len);
	T_CHECK(oracle->visible(r, buf, len, 1));
	regcache_put(cache, r);
	regcache_get_stats(cache, &st);
	k->held = get(buf, len);
	regcache_get_stats(cache, &k->before);
	k->cached = k->before.hits > st.hits;
	if (want == MUST_CACHE)
		T_EXPECT_EQ(st.hits + 1, k->before.hits);
	if (want == MUST_NOT_CACHE) {
		T_EXPECT_EQ(st.hits, k->before.hits);
		T_EXPECT_EQ(st.uncached + 1, k->before.uncached);
	}
	T_CHECK(oracle->visible(k->held, buf, len, 2));
	before_change();
}

void t_change_end(struct t_change *k, const char *what, enum t_outcome out)
{
	struct regcache_region *r;
	struct regcache_stats st;
	bool fresh, hit;

	after_change();
	cases++;
	if (out == T_STRANDS || out == T_UNSEEN) {
		expected_stale++;
		if (oracle->visible(k->held, k->buf, k->len, 3)) {
			fprintf(stderr, "%s: negative control failed: DMA "
				"through the old registration is still "
				"visible, so this change is not tested\n",
				what);
			t_failures++;
		}
	}
	regcache_put(cache, k->held);
	r = get(k->buf, k->len);
	regcache_get_stats(cache, &st);
	hit = st.hits != k->before.hits;
	fresh = oracle->visible(r, k->buf, k->len, 4);
	regcache_put(cache, r);
	if (naive) {
		if ((out == T_STRANDS || out == T_UNSEEN) && !fresh)
			naive_stale++;
		printf("%s: %s\n", fresh ? "fresh" : "STALE (expected)", what);
		return;
	}
	if (out == T_UNSEEN) {
		blind++;
		if (fresh) {
			fprintf(stderr, "%s: seen, yet documented as a blind "
				"spot of monitor %s: update its documentation "
				"and this case\n", what, regcache_monitor_name());
			t_failures++;
		} else {
			printf("stale, a documented blind spot of monitor %s: "
			       "%s\n", regcache_monitor_name(), what);
		}
		return;
	}
	if (!fresh) {
		fprintf(stderr, "%s: DMA after the change is not visible "
			"(stale registration)\n", what);
		stale++;
		t_failures++;
	}
	if (hit && (out == T_STRANDS ||
		    (out == T_INVALIDATES && !t_monitor_is("userfaultfd")))) {
		fprintf(stderr, "%s: the get after the change was a hit\n",
			what);
		t_failures++;
	}
	/* Killing the daemon drops every cached registration. */
	if (!hit && out == T_KEEPS && caching(k->mem) == MUST_CACHE &&
	    !daemon_kills) {
		fprintf(stderr, "%s: nothing changed, yet the get missed\n",
			what);
		t_failures++;
	}
	if (fresh)
		printf("ok: %s (%s)\n", what,
		       k->cached ? (hit ? "cached, kept" : "cached")
				 : "pass-through");
}

void t_change_refused(struct t_change *k, const char *what, const char *why)
{
	if (k) {
		after_change();
		regcache_put(cache, k->held);
	}
	not_possible++;
	printf("not possible here: %s (%s)\n", what, why);
}

/* ---- what the cases share ---- */

static char *map_at(char *addr, size_t len)
{
	char *p = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	T_REQUIRE(p == addr);
	return p;
}

/* Run @fn in a forked child: another process, no syscall of ours. */
static void in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	T_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(fn(arg));
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Is the running kernel older than @major.@minor? A refusal is accepted
 * only from a kernel older than the release that brought the call. */
static bool kernel_before(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	T_REQUIRE(uname(&u) == 0);
	T_REQUIRE(sscanf(u.release, "%d.%d", &ma, &mi) == 2);
	return ma < major || (ma == major && mi < minor);
}

/* ---- the cases ---- */

static void case_munmap(void)
{
	struct t_change k;
	char *buf = t_map(LEN);

	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(munmap(buf, LEN) == 0);
	map_at(buf, LEN);
	t_change_end(&k, "libc munmap + mmap at the same address", T_STRANDS);

	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(syscall(SYS_munmap, buf, LEN) == 0);
	map_at(buf, LEN);
	t_change_end(&k, "syscall(SYS_munmap) + mmap at the same address",
		     T_STRANDS);

	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(munmap(buf + 4 * 4096, 4096) == 0);
	map_at(buf + 4 * 4096, 4096);
	t_change_end(&k, "munmap of one page in the middle + mmap", T_STRANDS);

	/* Memory next to X changes: X stays cached. */
	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(munmap(t_map(LEN), LEN) == 0);
	t_change_end(&k, "munmap of unrelated memory", T_KEEPS);
	T_REQUIRE(munmap(buf, LEN) == 0);
}

#if defined(__x86_64__)
static sigjmp_buf int80_jb;

static void int80_segv(int sig)
{
	(void)sig;
	siglongjmp(int80_jb, 1);
}

/* munmap through the i386 entry (int $0x80, i386 munmap is 91): a 64-bit
 * process may still reach the compat table, which a monitor decoding only
 * the 64-bit calls would miss. Only the low 32 bits of each argument
 * reach the kernel. */
static long int80_munmap(void *addr, unsigned long len)
{
	long ret;

	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(91L), "b"(addr), "c"(len)
			 : "memory", "r8", "r9", "r10", "r11", "cc");
	return ret;
}

/* Why the i386 entry is not there, or NULL: munmap(0, 0) is EINVAL
 * through it; without IA32 emulation int $0x80 faults or is ENOSYS. */
static const char *int80_missing(void)
{
	long ret;

	signal(SIGSEGV, int80_segv);
	if (sigsetjmp(int80_jb, 1)) {
		signal(SIGSEGV, SIG_DFL);
		return "int $0x80 faults: no IA32 emulation";
	}
	ret = int80_munmap(NULL, 0);
	signal(SIGSEGV, SIG_DFL);
	if (ret == -ENOSYS)
		return "int $0x80 is ENOSYS: no IA32 emulation";
	T_EXPECT_EQ(-EINVAL, ret);
	return NULL;
}
#endif

static void case_int80(void)
{
	static const char what[] = "munmap through int $0x80 + mmap";
#if defined(__x86_64__)
	const char *why = int80_missing();
	struct t_change k;
	char *buf;

	if (why) {
		t_change_refused(NULL, what, why);
		return;
	}
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	T_REQUIRE(buf != MAP_FAILED);
	T_REQUIRE((uintptr_t)buf + LEN <= 0xffffffffu);
	t_change_begin(&k, buf, LEN, T_ANON);
	T_EXPECT_EQ(0, int80_munmap(buf, LEN));
	map_at(buf, LEN);
	t_change_end(&k, what, T_STRANDS);
	T_REQUIRE(munmap(buf, LEN) == 0);
#else
	t_change_refused(NULL, what, "x86_64 only");
#endif
}

#define CLONE_STACK (256 * 1024)
static char *clone_target;

/* Runs in our address space with our TLS but a pid of its own: raw system
 * calls only, and no exit() (it would run our atexit handlers). */
static int clone_child(void *arg)
{
	const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE;

	(void)arg;
	if (syscall(SYS_munmap, clone_target, LEN))
		return 1;
	return (char *)syscall(SYS_mmap, clone_target, LEN,
			       PROT_READ | PROT_WRITE, flags, -1, 0) ==
	       clone_target ? 0 : 2;
}

/* Another process (its own tgid) that shares our mm: a monitor must find
 * us through the mm, not only the tgid. */
static void case_clone_vm(void)
{
	static const char what[] = "munmap + mmap by a clone(CLONE_VM) child "
				   "process";
	struct t_change k;
	char *stack;
	int status;
	pid_t pid;

#if defined(__SANITIZE_THREAD__)
	t_change_refused(NULL, what, "TSan cannot run a clone(CLONE_VM) child "
			 "that shares the parent's thread state");
	return;
#endif
	stack = t_map(CLONE_STACK);
	clone_target = t_map(LEN);
	t_change_begin(&k, clone_target, LEN, T_ANON);
	pid = clone(clone_child, stack + CLONE_STACK, CLONE_VM | SIGCHLD, NULL);
	T_REQUIRE(pid > 0);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	t_change_end(&k, what, T_STRANDS);
	T_REQUIRE(munmap(clone_target, LEN) == 0);
	T_REQUIRE(munmap(stack, CLONE_STACK) == 0);
}

static void case_mremap(void)
{
	struct t_change k;
	char *buf = t_map(LEN), *dst = t_map(LEN), *moved;

	T_REQUIRE(munmap(dst, LEN) == 0);
	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst) ==
		  dst);
	map_at(buf, LEN);
	t_change_end(&k, "mremap away + mmap at the old address", T_STRANDS);

	t_change_begin(&k, dst, LEN, T_ANON);
	T_REQUIRE(mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst) ==
		  dst);
	t_change_end(&k, "mremap MAYMOVE|FIXED onto the cached range",
		     T_STRANDS);

	t_change_begin(&k, dst, LEN, T_ANON);
	T_REQUIRE(mremap(dst, LEN, LEN / 2, 0) == dst);
	map_at(dst + LEN / 2, LEN / 2);
	t_change_end(&k, "mremap shrink + mmap of the tail", T_STRANDS);
	T_REQUIRE(munmap(dst, LEN) == 0);

	/* The pages move away but X stays mapped, empty: the application
	 * faults in zeroes there without any mmap of its own. */
	buf = t_map(LEN);
	t_change_begin(&k, buf, LEN, T_ANON);
	moved = mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
	if (moved == MAP_FAILED && errno == EINVAL && kernel_before(5, 7)) {
		t_change_refused(&k, "mremap MREMAP_DONTUNMAP",
				 "EINVAL: before Linux 5.7");
	} else {
		T_REQUIRE(moved != MAP_FAILED);
		t_change_end(&k, "mremap MREMAP_DONTUNMAP (X left mapped, "
			     "empty)", T_STRANDS);
		T_REQUIRE(munmap(moved, LEN) == 0);
	}
	T_REQUIRE(munmap(buf, LEN) == 0);
}

/*
 * A fresh buffer for each madvise: the userfaultfd monitor may publish a
 * REMOVE again a few milliseconds later (madvise sends it before it zaps
 * the pages), which would invalidate the next case's X on the same buffer
 * and turn its expected hit into a miss.
 */
static void case_madvise(void)
{
	struct t_change k;
	struct iovec iov;
	char *buf;
	int pidfd;
	long ret;

	buf = t_map(LEN);
	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(madvise(buf, LEN, MADV_DONTNEED) == 0);
	t_change_end(&k, "madvise(MADV_DONTNEED)", T_STRANDS);

	buf = t_map(LEN);
	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(syscall(SYS_madvise, buf, LEN, MADV_DONTNEED) == 0);
	t_change_end(&k, "syscall(SYS_madvise, MADV_DONTNEED)", T_STRANDS);

	/* process_madvise on ourselves: no madvise call at all. Linux 6.13
	 * takes any advice for the caller itself; before, EINVAL. */
	buf = t_map(LEN);
	pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	T_REQUIRE(pidfd >= 0);
	iov = (struct iovec){ .iov_base = buf, .iov_len = LEN };
	t_change_begin(&k, buf, LEN, T_ANON);
	ret = syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_DONTNEED, 0);
	if (ret < 0 && errno == EINVAL && kernel_before(6, 13)) {
		t_change_refused(&k, "process_madvise(self, MADV_DONTNEED)",
				 "EINVAL: before Linux 6.13");
	} else {
		T_EXPECT_EQ(LEN, ret);
		t_change_end(&k, "process_madvise(self, MADV_DONTNEED)",
			     T_STRANDS);
	}
	close(pidfd);

	/* MADV_DONTNEED refuses mlock'ed pages (EINVAL); the _LOCKED advice
	 * (Linux 5.18) drops them, locked or not. */
	for (int locked = 0; locked < 2; locked++) {
		const char *what = locked ? "madvise(MADV_DONTNEED_LOCKED) on "
					    "an mlock'ed buffer"
					  : "madvise(MADV_DONTNEED_LOCKED)";

		buf = t_map(LEN);
		if (locked)
			T_REQUIRE(mlock(buf, LEN) == 0);
		t_change_begin(&k, buf, LEN, T_ANON);
		if (madvise(buf, LEN, MADV_DONTNEED_LOCKED) == 0) {
			t_change_end(&k, what, T_STRANDS);
		} else {
			T_REQUIRE(errno == EINVAL && kernel_before(5, 18));
			t_change_refused(&k, what, "EINVAL: before Linux 5.18");
		}
		T_REQUIRE(munmap(buf, LEN) == 0);
	}

	/* The kernel keeps pinned pages coherent until reclaim: nothing is
	 * stranded, and the get afterwards must still be right. */
	buf = t_map(LEN);
	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(madvise(buf, LEN, MADV_FREE) == 0);
	t_change_end(&k, "madvise(MADV_FREE)", T_INVALIDATES);

	/* Harmless advice keeps the region. */
	buf = t_map(LEN);
	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(madvise(buf, LEN, MADV_WILLNEED) == 0);
	t_change_end(&k, "madvise(MADV_WILLNEED)", T_KEEPS);
}

static int remove_shared(void *p)
{
	return madvise(p, LEN, MADV_REMOVE) ? 1 : 0;
}

static void case_madvise_remove(void)
{
	struct t_change k;
	char *shared = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	T_REQUIRE(shared != MAP_FAILED);
	t_change_begin(&k, shared, LEN, T_SHARED);
	T_REQUIRE(madvise(shared, LEN, MADV_REMOVE) == 0);
	t_change_end(&k, "madvise(MADV_REMOVE) on MAP_SHARED|MAP_ANONYMOUS",
		     T_STRANDS);

	/* The pages leave the shared file's page cache with no syscall of
	 * ours and no userfaultfd event for our mapping. */
	t_change_begin(&k, shared, LEN, T_SHARED);
	in_child(remove_shared, shared);
	t_change_end(&k, "madvise(MADV_REMOVE) by a forked child on shared "
		     "anonymous memory", T_STRANDS);
	T_REQUIRE(munmap(shared, LEN) == 0);
}

/* The kernel runs it in an io-wq worker: no madvise syscall at all. */
static void case_uring_madvise(void)
{
	static const char what[] = "io_uring IORING_OP_MADVISE(MADV_DONTNEED)";
	struct io_uring ring;
	struct t_change k;
	char *buf = t_map(LEN);
	int res;

	t_ring_init(&ring);
	t_change_begin(&k, buf, LEN, T_ANON);
	res = t_uring_madvise(&ring, buf, LEN, MADV_DONTNEED);
	io_uring_queue_exit(&ring);
	if (res == -EINVAL && kernel_before(5, 6)) {
		t_change_refused(&k, what, "EINVAL: before Linux 5.6");
		return;
	}
	T_EXPECT_EQ(0, res);
	t_change_end(&k, what, T_STRANDS);
}

static void case_map_fixed(void)
{
	struct t_change k;
	char *buf = t_map(LEN);

	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf);
	t_change_end(&k, "mmap(MAP_FIXED) over the cached range", T_STRANDS);

	/* One page inside X, not through libc's wrapper. */
	t_change_begin(&k, buf, LEN, T_ANON);
	T_REQUIRE((char *)syscall(SYS_mmap, buf + 4 * 4096, 4096,
				  PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				  0) == buf + 4 * 4096);
	t_change_end(&k, "syscall(SYS_mmap, MAP_FIXED) over one page inside "
		     "the cached range", T_STRANDS);
	T_REQUIRE(munmap(buf, LEN) == 0);
}

/* The driver sets M_MMAP_THRESHOLD to 0: no malloc moves the break under
 * this case (ASan's allocator never uses brk). */
static void case_sbrk(void)
{
	struct t_change k;
	char *cur, *buf;

	cur = sbrk(0);
	T_REQUIRE(cur != (void *)-1);
	T_REQUIRE(sbrk((4096 - (uintptr_t)cur % 4096) % 4096) != (void *)-1);
	buf = sbrk(LEN);
	T_REQUIRE(buf != (void *)-1);
	t_change_begin(&k, buf, LEN, T_ANON);
	/* Nothing else took the top of the heap meanwhile. */
	T_REQUIRE((char *)sbrk(0) == buf + LEN);
	T_REQUIRE(sbrk(-LEN) != (void *)-1);
	T_REQUIRE(sbrk(LEN) == buf);
	t_change_end(&k, "sbrk(-n) then sbrk(+n)", T_STRANDS);
}

/* The premise of the free() case: free() unmaps a chunk this large at
 * once (glibc does above its mmap threshold; ASan's allocator, or jemalloc
 * put in by LD_PRELOAD, keeps it mapped). */
#define CHUNK (512 * 1024)
static bool free_unmaps(void)
{
	unsigned char vec;

	/* A monitor's thread may map into the hole the instant it opens. */
	for (int tries = 0; tries < 5; tries++) {
		char *p = malloc(CHUNK), *pg;

		T_REQUIRE(p);
		pg = (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
		memset(p, 1, CHUNK);
		free(p);
		if (mincore(pg, 4096, &vec) == -1 && errno == ENOMEM)
			return true;
	}
	return false;
}

static void case_free_malloc(void)
{
	static const char what[] = "free() + malloc() at the same address";
	struct t_change k;
	char *p, *q = NULL, *buf;
	int tries;

	if (!free_unmaps()) {
		t_change_refused(NULL, what, "free() of a 512 KiB chunk leaves "
				 "it mapped: the malloc in use is not glibc's");
		return;
	}
	for (tries = 0; tries < 20; tries++) {
		p = malloc(CHUNK);
		T_REQUIRE(p);
		buf = (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
		t_change_begin(&k, buf, LEN, T_ANON);
		free(p);
		q = malloc(CHUNK);
		T_REQUIRE(q);
		if (q == p)
			break;
		/* Not reused this time: the region is stale anyway. */
		after_change();
		regcache_put(cache, k.held);
		free(q);
	}
	T_REQUIRE(tries < 20);
	t_change_end(&k, what, T_STRANDS);
	free(q);
}

static void case_shmdt(void)
{
	static const char what[] = "shmdt + shmat of another segment at the "
				   "same address";
	int id1 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	int id2 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	const char *why;
	struct t_change k;
	char *buf;

	T_REQUIRE(id1 >= 0 && id2 >= 0);
	buf = shmat(id1, NULL, 0);
	T_REQUIRE(buf != (void *)-1);
	shmctl(id1, IPC_RMID, NULL);
	why = oracle->refuses(buf, LEN);
	if (why) {
		t_change_refused(NULL, what, why);
	} else {
		t_change_begin(&k, buf, LEN, T_SHARED);
		T_REQUIRE(shmdt(buf) == 0);
		T_REQUIRE(shmat(id2, buf, 0) == buf);
		t_change_end(&k, what, T_STRANDS);
	}
	/* Marked for removal only once attached: it would go at once. */
	shmctl(id2, IPC_RMID, NULL);
	T_REQUIRE(shmdt(buf) == 0);
}

static int punch(void *arg)
{
	return fallocate(*(int *)arg, FALLOC_FL_PUNCH_HOLE |
			 FALLOC_FL_KEEP_SIZE, 0, LEN) ? 1 : 0;
}

static void punch_file(int fd, const char *kind)
{
	struct t_change k;
	char what[128];
	const char *why;
	char *buf;

	T_REQUIRE(ftruncate(fd, LEN) == 0);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_REQUIRE(buf != MAP_FAILED);
	snprintf(what, sizeof(what), "%s: fallocate(PUNCH_HOLE)", kind);
	why = oracle->refuses(buf, LEN);
	if (why) {
		t_change_refused(NULL, what, why);
		T_REQUIRE(munmap(buf, LEN) == 0);
		return;
	}
	t_change_begin(&k, buf, LEN, T_SHARED);
	T_REQUIRE(punch(&fd) == 0);
	t_change_end(&k, what, T_STRANDS);

	/* Watched without a syscall of ours: a monitor that watches the
	 * file sees the pages leave its page cache. */
	t_change_begin(&k, buf, LEN, T_SHARED);
	in_child(punch, &fd);
	snprintf(what, sizeof(what), "%s: hole punched by another process",
		 kind);
	t_change_end(&k, what, T_STRANDS);
	T_REQUIRE(munmap(buf, LEN) == 0);
}

static void case_file_punch(void)
{
	char path[64] = "/dev/shm/regcache-changes-XXXXXX";
	int fd = memfd_create("regcache-changes", MFD_CLOEXEC);

	T_REQUIRE(fd >= 0);
	punch_file(fd, "memfd");
	close(fd);
	fd = mkstemp(path);
	if (fd < 0) {
		t_change_refused(NULL, "tmpfs file: fallocate(PUNCH_HOLE)",
				 "no writable /dev/shm");
		return;
	}
	unlink(path);
	punch_file(fd, "tmpfs file");
	close(fd);
}

static int truncate_child(void *arg)
{
	int fd = *(int *)arg;

	return ftruncate(fd, 0) || ftruncate(fd, LEN) ? 1 : 0;
}

/* Copy-on-write pages of a private file mapping never enter the page
 * cache, so no monitor can watch the file for them: another process that
 * truncates the file strands what is pinned. */
static void case_private_file(void)
{
	static const char what[] = "private file mapping truncated by another "
				   "process";
	char path[64] = "/tmp/regcache-changes-XXXXXX";
	int fd = mkstemp(path);
	struct t_change k;
	const char *why;
	char *buf;

	T_REQUIRE(fd >= 0);
	unlink(path);
	T_REQUIRE(ftruncate(fd, LEN) == 0);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	T_REQUIRE(buf != MAP_FAILED);
	memset(buf, 0x5a, LEN);
	why = oracle->refuses(buf, LEN);
	if (why) {
		t_change_refused(NULL, what, why);
	} else {
		t_change_begin(&k, buf, LEN, T_PRIVATE_FILE);
		in_child(truncate_child, &fd);
		t_change_end(&k, what, T_STRANDS);
	}
	T_REQUIRE(munmap(buf, LEN) == 0);
	close(fd);
}

static void case_guard(void)
{
	static const char what[] = "MADV_GUARD_INSTALL + MADV_GUARD_REMOVE";
	struct t_change k;
	char *buf = t_map(LEN);

	t_change_begin(&k, buf, LEN, T_ANON);
	if (madvise(buf, LEN, MADV_GUARD_INSTALL) && errno == EINVAL &&
	    kernel_before(6, 13)) {
		t_change_refused(&k, what, "EINVAL: before Linux 6.13");
		return;
	}
	T_REQUIRE(madvise(buf, LEN, MADV_GUARD_REMOVE) == 0);
	/* The kernel tells userfaultfd nothing of it (its documentation,
	 * "Blind spots"). */
	t_change_end(&k, what, t_monitor_is("userfaultfd") ? T_UNSEEN
							  : T_STRANDS);
	T_REQUIRE(munmap(buf, LEN) == 0);
}

/* More records than the eBPF monitor's ring holds (3 for each madvise),
 * then the munmap of X: the monitor must still not serve X, and the
 * other cached buffers must stay right. */
static void case_overflow(void)
{
	struct regcache_region *r;
	struct t_change k;
	char *bufs[8], *junk;

	for (int i = 0; i < 8; i++) {
		bufs[i] = t_map(LEN);
		r = get_anew(bufs[i], LEN);
		regcache_put(cache, r);
	}
	junk = t_map(4096);
	t_change_begin(&k, bufs[0], LEN, T_ANON);
	for (int i = 0; i < 20000; i++)
		T_REQUIRE(madvise(junk, 4096, MADV_DONTNEED) == 0);
	T_REQUIRE(munmap(bufs[0], LEN) == 0);
	map_at(bufs[0], LEN);
	t_change_end(&k, "munmap whose records overflowed the ring",
		     T_STRANDS);
	for (int i = 1; i < 8; i++) {
		r = get(bufs[i], LEN);
		T_CHECK(oracle->visible(r, bufs[i], LEN, 10 + i));
		regcache_put(cache, r);
		T_REQUIRE(munmap(bufs[i], LEN) == 0);
	}
	T_REQUIRE(munmap(junk, 4096) == 0);
}

static const struct {
	const char *name;
	void (*run)(void);
} catalogue[] = {
	{ "munmap", case_munmap },
	{ "int80", case_int80 },
	{ "clone_vm", case_clone_vm },
	{ "mremap", case_mremap },
	{ "madvise", case_madvise },
	{ "madvise_remove", case_madvise_remove },
	{ "uring_madvise", case_uring_madvise },
	{ "map_fixed", case_map_fixed },
	{ "sbrk", case_sbrk },
	{ "free_malloc", case_free_malloc },
	{ "shmdt", case_shmdt },
	{ "file_punch", case_file_punch },
	{ "private_file", case_private_file },
	{ "guard", case_guard },
	{ "overflow", case_overflow },
};
#define NCASES (sizeof(catalogue) / sizeof(catalogue[0]))

/* After daemon restarts the process caches again without restarting: a
 * get, then a hit, through the same monitor. */
static void check_resumed(void)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;
	char *buf = t_map(LEN);

	regcache_put(cache, get_anew(buf, LEN));
	regcache_get_stats(cache, &st);
	r = get(buf, LEN);
	regcache_get_stats(cache, &st2);
	T_CHECK(oracle->visible(r, buf, LEN, 77));
	regcache_put(cache, r);
	if (st2.hits != st.hits + 1) {
		fprintf(stderr, "after %d daemon restarts the cache does not "
			"hit again\n", daemon_kills);
		t_failures++;
	}
	T_CHECK(t_monitor_is("regcached"));
}

static int usage(const char *prog)
{
	fprintf(stderr, "usage: %s [naive] [--daemon plain|restart|dead] "
		"[--list] [CASE ...]\n", prog);
	return T_EXIT_FAIL;
}

int t_changes_main(const struct t_oracle *o, int argc, char **argv)
{
	bool run[NCASES], some = false;
	struct regcache_stats st;
	int i;
	size_t c;

	memset(run, 0, sizeof(run));
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "naive")) {
			naive = true;
		} else if (!strcmp(argv[i], "--daemon") && i + 1 < argc) {
			daemon_mode = argv[++i];
			if (strcmp(daemon_mode, "plain") &&
			    strcmp(daemon_mode, "restart") &&
			    strcmp(daemon_mode, "dead"))
				return usage(argv[0]);
		} else if (!strcmp(argv[i], "--list")) {
			for (c = 0; c < NCASES; c++)
				printf("%s\n", catalogue[c].name);
			return T_EXIT_PASS;
		} else {
			for (c = 0; c < NCASES; c++)
				if (!strcmp(catalogue[c].name, argv[i]))
					break;
			if (c == NCASES) {
				fprintf(stderr, "unknown case %s\n", argv[i]);
				return usage(argv[0]);
			}
			run[c] = some = true;
		}
	}
	oracle = o;
	/* Every malloc from here uses mmap, so that the break belongs to
	 * the sbrk case and free() of a large chunk unmaps it at once. */
	mallopt(M_MMAP_THRESHOLD, 0);
	if (naive)
		setenv("REGCACHE_MONITOR", "none", 1);
	cache = o->create(naive ? REGCACHE_FLAG_EXPLICIT_INVALIDATE : 0);
	if (!naive)
		t_monitor_require();
	printf("oracle %s, %s, monitor %s\n", o->name,
	       naive ? "an address-keyed cache that never invalidates"
		     : "regcache", regcache_monitor_name());
	for (c = 0; c < NCASES; c++)
		if (run[c] || !some)
			catalogue[c].run();
	if (daemon_kills)
		check_resumed();

	regcache_get_stats(cache, &st);
	if (naive) {
		printf("naive cache: %d of %d cases stale, %d expected stale, "
		       "%d not possible here\n", naive_stale, cases,
		       expected_stale, not_possible);
		/* Every change that strands the pinned pages is caught. */
		T_EXPECT_EQ(expected_stale, naive_stale);
	} else {
		printf("regcache: %d cases, %d stale, %d in a documented blind "
		       "spot, %d not possible here; %llu hits, %llu "
		       "registrations, %llu uncached, %llu invalidations\n",
		       cases, stale, blind, not_possible,
		       (unsigned long long)st.hits,
		       (unsigned long long)st.registrations,
		       (unsigned long long)st.uncached,
		       (unsigned long long)st.invalidations);
		if (t_monitor_is("none"))
			T_EXPECT_EQ(0, st.hits);
	}
	T_CHECK(cases > 0);
	o->destroy(cache);
	return t_exit_status();
}
