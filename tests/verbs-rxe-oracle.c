/* SPDX-License-Identifier: MIT */
/*
 * Description: the DMA oracle through a real RDMA device. For each way an
 * application changes the pages behind a cached buffer X (libc and raw
 * munmap + mmap at the same address, munmap of one page, munmap through
 * the i386 int $0x80 entry, munmap by a clone(CLONE_VM) child process,
 * mremap away + mmap, mremap onto X, mremap shrink, MREMAP_DONTUNMAP,
 * MADV_DONTNEED libc and raw, MADV_DONTNEED_LOCKED on an mlock'ed buffer,
 * process_madvise(MADV_DONTNEED) on ourselves, MADV_FREE, MADV_REMOVE by
 * this process and by a forked one, io_uring IORING_OP_MADVISE, MAP_FIXED
 * over X, raw MAP_FIXED over one page of X, sbrk shrink + grow, free +
 * malloc at the same address, shmdt + shmat of another segment, a hole
 * punched in a memfd and in a tmpfs file, by this process and by another):
 * cache X (get, put, get again: a hit where the monitor caches it), change
 * the mapping, then get X again, RDMA-WRITE a new pattern into it through
 * its rkey over a loopback RC queue pair and check that the application
 * sees it. The negative control of each case RDMA-writes through the
 * registration held across the change and must not see the bytes (the
 * change really stranded the pinned pages). Run under each monitor (and
 * the regcached client): 0 stale.
 *
 *   verbs-rxe-oracle          regcache: every case must be fresh
 *   verbs-rxe-oracle naive    an address-keyed cache that keeps the first
 *                             MR: every case must be found stale (the test
 *                             detects what it exists to detect)
 *
 * Unlike io_uring on 6.1 (EOPNOTSUPP for file-backed and SysV memory),
 * ibv_reg_mr registers shared memory, so the shmdt and file cases are
 * proven here. A change this kernel refuses (process_madvise DONTNEED
 * before 6.13, MADV_DONTNEED_LOCKED before 5.18, int $0x80 without IA32
 * emulation or off x86_64) is printed as not possible, with the reason,
 * and is no case. Skips (77) without an RDMA device.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_device.h"

#define LEN 65536
#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define NAIVE_MAX 64

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

static struct td dev;
static struct io_uring ring;
static struct regcache *cache;
static bool naive;
static bool must_hit;		/* the monitor caches private anonymous memory */
static int cases, stale, naive_stale, expected_stale, not_possible;

/* The negative control: an address-keyed cache without invalidation. */
static struct {
	uintptr_t addr;
	size_t len;
	struct ibv_mr *mr;
} naive_tab[NAIVE_MAX];
static int naive_n;

struct vcase {
	void *held;		/* the region (or naive MR) held across */
	uint32_t held_rkey;
	char *buf;
	size_t len;
	bool anon;
	bool cached;		/* the second get was a hit */
	struct regcache_stats before;
};

/* Get a registration of [buf, buf+len): *rkey, and what to put. */
static void *vget(char *buf, size_t len, uint32_t *rkey)
{
	struct regcache_region *r;
	struct ibv_mr *mr;
	int ret;

	if (!naive) {
		ret = regcache_get(cache, buf, len, ACCESS, &r);
		if (ret) {
			fprintf(stderr, "regcache_get(%p, %zu): %s\n",
				(void *)buf, len, strerror(-ret));
			exit(T_EXIT_FAIL);
		}
		*rkey = regcache_region_rkey(r);
		return r;
	}
	for (int i = 0; i < naive_n; i++)
		if (naive_tab[i].addr == (uintptr_t)buf &&
		    naive_tab[i].len >= len) {
			*rkey = naive_tab[i].mr->rkey;
			return naive_tab[i].mr;
		}
	T_REQUIRE(naive_n < NAIVE_MAX);
	mr = ibv_reg_mr(dev.pd, buf, len, ACCESS);
	if (!mr) {
		fprintf(stderr, "ibv_reg_mr(%p, %zu): %s\n", (void *)buf, len,
			strerror(errno));
		exit(T_EXIT_FAIL);
	}
	naive_tab[naive_n].addr = (uintptr_t)buf;
	naive_tab[naive_n].len = len;
	naive_tab[naive_n++].mr = mr;
	*rkey = mr->rkey;
	return mr;
}

static void vput(void *region)
{
	if (!naive)
		regcache_put(cache, region);
}

static void stats(struct regcache_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!naive)
		regcache_get_stats(cache, st);
}

/* The naive cache forgets everything between cases, so that each case
 * starts from a fresh registration and only its own change can make it
 * stale. */
static void naive_flush(void)
{
	for (int i = 0; i < naive_n; i++)
		T_CHECK(ibv_dereg_mr(naive_tab[i].mr) == 0);
	naive_n = 0;
}

/* Cache X and hold it, as t_case_begin does. */
static void begin(struct vcase *k, char *buf, size_t len, bool anon)
{
	struct regcache_stats st;
	uint32_t rkey;
	void *r;

	naive_flush();
	k->buf = buf;
	k->len = len;
	k->anon = anon;
	r = vget(buf, len, &rkey);
	T_CHECK(td_write_visible(&dev, buf, rkey, len, 1));
	vput(r);
	stats(&st);
	k->held = vget(buf, len, &k->held_rkey);
	stats(&k->before);
	k->cached = k->before.hits > st.hits;
	if (must_hit && anon)
		T_EXPECT_EQ(st.hits + 1, k->before.hits);
	T_CHECK(td_write_visible(&dev, buf, k->held_rkey, len, 2));
}

/* Negative control through the held registration, then get X again and
 * RDMA-write the new pattern. */
static void end(struct vcase *k, const char *what, bool stale_expected)
{
	struct regcache_stats st;
	uint32_t rkey;
	bool fresh;
	void *r;

	cases++;
	if (stale_expected) {
		expected_stale++;
		if (td_write_visible(&dev, k->buf, k->held_rkey, k->len, 3)) {
			fprintf(stderr, "%s: negative control failed: an RDMA "
				"write through the old registration is still "
				"visible, so this change is not tested\n", what);
			t_failures++;
		}
	}
	vput(k->held);
	r = vget(k->buf, k->len, &rkey);
	stats(&st);
	fresh = td_write_visible(&dev, k->buf, rkey, k->len, 4);
	vput(r);
	if (naive) {
		if (!fresh)
			naive_stale++;
		printf("%s: %s\n", fresh ? "fresh" : "STALE (expected)", what);
		return;
	}
	if (st.hits != k->before.hits) {
		fprintf(stderr, "%s: the get after the change was a hit on a "
			"stale region\n", what);
		t_failures++;
	}
	if (!fresh) {
		fprintf(stderr, "%s: the RDMA write after the change is not "
			"visible (stale registration)\n", what);
		stale++;
		t_failures++;
		return;
	}
	printf("ok: %s (%s)\n", what, k->cached ? "cached" : "pass-through");
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

/* The kernel refused the change itself: there is nothing to test, so it
 * is no case (and no expected stale one for the naive control). Let go
 * of X, if it is held, and say why. */
static void refused(struct vcase *k, const char *what, const char *why)
{
	if (k)
		vput(k->held);
	not_possible++;
	printf("not possible on this kernel: %s (%s)\n", what, why);
}

static char *map_at(char *addr, size_t len)
{
	char *p = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	T_REQUIRE(p == addr);
	return p;
}

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

static void case_munmap(void)
{
	struct vcase k;
	char *buf = t_map(LEN);

	begin(&k, buf, LEN, true);
	T_REQUIRE(munmap(buf, LEN) == 0);
	map_at(buf, LEN);
	end(&k, "libc munmap + mmap at the same address", true);

	begin(&k, buf, LEN, true);
	T_REQUIRE(syscall(SYS_munmap, buf, LEN) == 0);
	map_at(buf, LEN);
	end(&k, "syscall(SYS_munmap) + mmap at the same address", true);

	begin(&k, buf, LEN, true);
	T_REQUIRE(munmap(buf + 4 * 4096, 4096) == 0);
	map_at(buf + 4 * 4096, 4096);
	end(&k, "munmap of one page in the middle + mmap", true);
	T_REQUIRE(munmap(buf, LEN) == 0);
}

#if defined(__x86_64__)
static sigjmp_buf int80_jb;

static void int80_segv(int sig)
{
	(void)sig;
	siglongjmp(int80_jb, 1);
}

/* munmap through the i386 entry (int $0x80, i386 munmap is 91), as
 * regcached-scenarios does: a 64-bit process may still reach the compat
 * table, which a monitor decoding only the 64-bit calls would miss. Only
 * the low 32 bits of each argument reach the kernel. */
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
 * through it; without IA32 emulation int $0x80 faults or is ENOSYS.
 * Asked before X is held, so that a fault leaves nothing behind. */
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
	struct vcase k;
	char *buf;

	if (why) {
		refused(NULL, what, why);
		return;
	}
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	T_REQUIRE(buf != MAP_FAILED);
	T_REQUIRE((uintptr_t)buf + LEN <= 0xffffffffu);
	begin(&k, buf, LEN, true);
	T_EXPECT_EQ(0, int80_munmap(buf, LEN));
	map_at(buf, LEN);
	end(&k, what, true);
	T_REQUIRE(munmap(buf, LEN) == 0);
#else
	refused(NULL, what, "int $0x80 from a 64-bit process is x86_64 only");
#endif
}

#define CLONE_STACK (256 * 1024)
static char *clone_target;

/* Runs in our address space with our TLS but a pid of its own: raw system
 * calls only, and no exit() (T_REQUIRE would run our atexit handlers). */
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

/* Another process (its own tgid) that shares our mm, as bpf-clone-vm does:
 * a monitor must find us through the mm, not only the tgid. */
static void case_clone_vm(void)
{
	static const char what[] = "munmap + mmap by a clone(CLONE_VM) child "
				   "process";
	struct vcase k;
	char *stack;
	int status;
	pid_t pid;

#if defined(__SANITIZE_THREAD__)
	printf("not run: %s (TSan cannot run a clone(CLONE_VM) child that "
	       "shares the parent's thread state)\n", what);
	return;
#endif
	stack = t_map(CLONE_STACK);
	clone_target = t_map(LEN);
	begin(&k, clone_target, LEN, true);
	pid = clone(clone_child, stack + CLONE_STACK, CLONE_VM | SIGCHLD, NULL);
	T_REQUIRE(pid > 0);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	end(&k, what, true);
	T_REQUIRE(munmap(clone_target, LEN) == 0);
	T_REQUIRE(munmap(stack, CLONE_STACK) == 0);
}

static void case_mremap(void)
{
	struct vcase k;
	char *buf = t_map(LEN), *dst = t_map(LEN), *moved;

	T_REQUIRE(munmap(dst, LEN) == 0);
	begin(&k, buf, LEN, true);
	T_REQUIRE(mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst) ==
		  dst);
	map_at(buf, LEN);
	end(&k, "mremap away + mmap at the old address", true);

	begin(&k, dst, LEN, true);
	T_REQUIRE(mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst) ==
		  dst);
	end(&k, "mremap MAYMOVE|FIXED onto the cached range", true);

	begin(&k, dst, LEN, true);
	T_REQUIRE(mremap(dst, LEN, LEN / 2, 0) == dst);
	map_at(dst + LEN / 2, LEN / 2);
	end(&k, "mremap shrink + mmap of the tail", true);
	T_REQUIRE(munmap(dst, LEN) == 0);

	/* The pages move away but X stays mapped, empty: the application
	 * faults in zeroes there without any mmap of its own. */
	buf = t_map(LEN);
	begin(&k, buf, LEN, true);
	moved = mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
	if (moved == MAP_FAILED && errno == EINVAL && kernel_before(5, 7)) {
		refused(&k, "mremap MREMAP_DONTUNMAP", "EINVAL: before 5.7");
	} else {
		T_REQUIRE(moved != MAP_FAILED);
		end(&k, "mremap MREMAP_DONTUNMAP (X left mapped, empty)",
		    true);
		T_REQUIRE(munmap(moved, LEN) == 0);
	}
	T_REQUIRE(munmap(buf, LEN) == 0);
}

static int remove_shared(void *p)
{
	return madvise(p, LEN, MADV_REMOVE) ? 1 : 0;
}

static void case_madvise(void)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct iovec iov;
	struct vcase k;
	char *buf = t_map(LEN), *locked, *shared;
	int pidfd;
	long ret;

	begin(&k, buf, LEN, true);
	T_REQUIRE(madvise(buf, LEN, MADV_DONTNEED) == 0);
	end(&k, "madvise(MADV_DONTNEED)", true);

	begin(&k, buf, LEN, true);
	T_REQUIRE(syscall(SYS_madvise, buf, LEN, MADV_DONTNEED) == 0);
	end(&k, "syscall(SYS_madvise, MADV_DONTNEED)", true);

	begin(&k, buf, LEN, true);
	sqe = io_uring_get_sqe(&ring);
	T_REQUIRE(sqe);
	io_uring_prep_madvise(sqe, buf, LEN, MADV_DONTNEED);
	T_REQUIRE(io_uring_submit(&ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(&ring, &cqe) == 0);
	T_EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	end(&k, "io_uring IORING_OP_MADVISE(MADV_DONTNEED)", true);

	/* process_madvise on ourselves: no madvise call at all. Linux 6.13
	 * takes any advice for the caller itself; before, only COLD,
	 * PAGEOUT, WILLNEED (and COLLAPSE), so EINVAL. */
	pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	T_REQUIRE(pidfd >= 0);
	iov = (struct iovec){ .iov_base = buf, .iov_len = LEN };
	begin(&k, buf, LEN, true);
	ret = syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_DONTNEED, 0);
	if (ret < 0 && errno == EINVAL && kernel_before(6, 13)) {
		refused(&k, "process_madvise(self, MADV_DONTNEED)",
			"EINVAL: DONTNEED through process_madvise needs "
			"Linux 6.13");
	} else {
		T_EXPECT_EQ(LEN, ret);
		end(&k, "process_madvise(self, MADV_DONTNEED)", true);
	}
	close(pidfd);

	/* Pinned pages are not freed lazily: nothing goes stale, and the
	 * get afterwards must still be right. */
	begin(&k, buf, LEN, true);
	T_REQUIRE(madvise(buf, LEN, MADV_FREE) == 0);
	end(&k, "madvise(MADV_FREE)", false);
	T_REQUIRE(munmap(buf, LEN) == 0);

	/* MADV_DONTNEED refuses mlock'ed pages (EINVAL); the _LOCKED advice
	 * (Linux 5.18) drops them all the same. */
	locked = t_map(LEN);
	T_REQUIRE(mlock(locked, LEN) == 0);
	begin(&k, locked, LEN, true);
	if (madvise(locked, LEN, MADV_DONTNEED_LOCKED) == 0) {
		end(&k, "madvise(MADV_DONTNEED_LOCKED) on an mlock'ed buffer",
		    true);
	} else {
		T_REQUIRE(errno == EINVAL && kernel_before(5, 18));
		refused(&k, "madvise(MADV_DONTNEED_LOCKED)",
			"EINVAL: before Linux 5.18");
	}
	T_REQUIRE(munmap(locked, LEN) == 0);

	shared = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_REQUIRE(shared != MAP_FAILED);
	begin(&k, shared, LEN, false);
	T_REQUIRE(madvise(shared, LEN, MADV_REMOVE) == 0);
	end(&k, "madvise(MADV_REMOVE) on MAP_SHARED|MAP_ANONYMOUS", true);

	begin(&k, shared, LEN, false);
	in_child(remove_shared, shared);
	end(&k, "madvise(MADV_REMOVE) by a forked child on shared anonymous "
		"memory", true);
	T_REQUIRE(munmap(shared, LEN) == 0);
}

static void case_map_fixed(void)
{
	struct vcase k;
	char *buf = t_map(LEN);

	begin(&k, buf, LEN, true);
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf);
	end(&k, "mmap(MAP_FIXED) over the cached range", true);

	/* One page inside X, not through libc's wrapper. */
	begin(&k, buf, LEN, true);
	T_REQUIRE((char *)syscall(SYS_mmap, buf + 4 * 4096, 4096,
				  PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				  0) == buf + 4 * 4096);
	end(&k, "syscall(SYS_mmap, MAP_FIXED) over one page inside the "
		"cached range", true);
	T_REQUIRE(munmap(buf, LEN) == 0);
}

static void case_sbrk(void)
{
	struct vcase k;
	char *cur, *buf;

	cur = sbrk(0);
	T_REQUIRE(cur != (void *)-1);
	T_REQUIRE(sbrk((4096 - (uintptr_t)cur % 4096) % 4096) != (void *)-1);
	buf = sbrk(LEN);
	T_REQUIRE(buf != (void *)-1);
	begin(&k, buf, LEN, true);
	T_REQUIRE((char *)sbrk(0) == buf + LEN);
	T_REQUIRE(sbrk(-LEN) != (void *)-1);
	T_REQUIRE(sbrk(LEN) == buf);
	end(&k, "sbrk(-n) then sbrk(+n)", true);
}

/* The premise of the free() case: free() unmaps a chunk this large at
 * once (glibc does; ASan's allocator, or jemalloc put in by LD_PRELOAD,
 * keeps it mapped). */
#define CHUNK (512 * 1024)
static bool free_unmaps(void)
{
	char *p = malloc(CHUNK), *pg;
	unsigned char vec;

	T_REQUIRE(p);
	pg = (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
	memset(p, 1, CHUNK);
	free(p);
	return mincore(pg, 4096, &vec) == -1 && errno == ENOMEM;
}

static void case_free_malloc(void)
{
	struct vcase k;
	char *p, *q = NULL, *buf;
	int tries;

	if (!free_unmaps()) {
		printf("not run: free() + malloc() at the same address (free() "
		       "of a %d KiB chunk leaves it mapped: the malloc in use "
		       "is not glibc's)\n", CHUNK / 1024);
		return;
	}
	for (tries = 0; tries < 20; tries++) {
		p = malloc(CHUNK);
		T_REQUIRE(p);
		buf = (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
		begin(&k, buf, LEN, true);
		free(p);
		q = malloc(CHUNK);
		T_REQUIRE(q);
		if (q == p)
			break;
		vput(k.held);
		free(q);
	}
	T_REQUIRE(tries < 20);
	end(&k, "free() + malloc() at the same address", true);
	free(q);
}

static void case_shmdt(void)
{
	struct vcase k;
	int id1 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	int id2 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	char *buf;

	T_REQUIRE(id1 >= 0 && id2 >= 0);
	buf = shmat(id1, NULL, 0);
	T_REQUIRE(buf != (void *)-1);
	shmctl(id1, IPC_RMID, NULL);
	begin(&k, buf, LEN, false);
	T_REQUIRE(shmdt(buf) == 0);
	T_REQUIRE(shmat(id2, buf, 0) == buf);
	shmctl(id2, IPC_RMID, NULL);
	end(&k, "shmdt + shmat of another segment at the same address", true);
	T_REQUIRE(shmdt(buf) == 0);
}

static int punch(void *arg)
{
	return fallocate(*(int *)arg, FALLOC_FL_PUNCH_HOLE |
			 FALLOC_FL_KEEP_SIZE, 0, LEN) ? 1 : 0;
}

static void punch_file(int fd, const char *kind)
{
	struct vcase k;
	char what[128];
	char *buf;

	T_REQUIRE(ftruncate(fd, LEN) == 0);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_REQUIRE(buf != MAP_FAILED);

	begin(&k, buf, LEN, false);
	T_REQUIRE(punch(&fd) == 0);
	snprintf(what, sizeof(what), "%s: fallocate(PUNCH_HOLE)", kind);
	end(&k, what, true);

	begin(&k, buf, LEN, false);
	in_child(punch, &fd);
	snprintf(what, sizeof(what), "%s: hole punched by another process",
		 kind);
	end(&k, what, true);
	T_REQUIRE(munmap(buf, LEN) == 0);
}

static void case_file_punch(void)
{
	char path[64] = "/dev/shm/verbs-rxe-punch-XXXXXX";
	int fd = memfd_create("verbs-rxe-punch", MFD_CLOEXEC);

	T_REQUIRE(fd >= 0);
	punch_file(fd, "memfd");
	close(fd);
	fd = mkstemp(path);
	if (fd < 0) {
		printf("not run: tmpfs file (no writable /dev/shm: %s)\n",
		       strerror(errno));
		return;
	}
	unlink(path);
	punch_file(fd, "tmpfs file");
	close(fd);
}

int main(int argc, char **argv)
{
	struct regcache_params p = { 0 };
	struct regcache_stats st;

	naive = argc > 1 && !strcmp(argv[1], "naive");
	if (argc > 2 || (argc == 2 && !naive)) {
		fprintf(stderr, "usage: %s [naive]\n", argv[0]);
		return 2;
	}
	/* glibc raises its mmap threshold after freeing a large chunk (rdma-
	 * core's setup may); keep it, so that free() of CHUNK unmaps. */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	td_open(&dev);
	t_ring_init(&ring);
	if (!naive) {
		T_REQUIRE(regcache_verbs_create(dev.pd, &p, &cache) == 0);
		t_monitor_require();
		must_hit = !t_monitor_is("none");
	}
	printf("%s, monitor %s\n", naive ? "naive address-keyed cache"
					 : "regcache",
	       naive ? "-" : regcache_monitor_name());

	case_munmap();
	case_int80();
	case_clone_vm();
	case_mremap();
	case_madvise();
	case_map_fixed();
	case_sbrk();
	case_free_malloc();
	case_shmdt();
	case_file_punch();

	if (naive) {
		printf("naive cache: %d of %d cases stale, %d expected stale, "
		       "%d not possible on this kernel\n", naive_stale, cases,
		       expected_stale, not_possible);
		/* Every change that strands the pinned pages must be caught. */
		T_EXPECT_EQ(expected_stale, naive_stale);
		naive_flush();
	} else {
		stats(&st);
		printf("regcache: %d cases, %d stale, %d not possible on this "
		       "kernel; %llu hits, %llu registrations, %llu uncached, "
		       "%llu invalidations\n", cases, stale, not_possible,
		       (unsigned long long)st.hits,
		       (unsigned long long)st.registrations,
		       (unsigned long long)st.uncached,
		       (unsigned long long)st.invalidations);
		if (t_monitor_is("none"))
			T_EXPECT_EQ(0, st.hits);
		else
			T_CHECK(st.hits > 0);
		regcache_destroy(cache);
	}
	io_uring_queue_exit(&ring);
	td_close(&dev);
	return t_exit_status();
}
