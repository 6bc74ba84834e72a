/*
 * Description: regcached monitor, run by regcached-launch as uid 65534
 * with no capabilities: every change under a cached region that the
 * in-process bpf monitor covers, proven with DMA (t_case_begin/end: the
 * old registration is stale, the next get misses and DMA lands where the
 * application looks). One CTest test per case:
 *
 *   regcached-scenarios CASE [MODE]
 *
 * CASE: munmap mremap madvise uring_madvise map_fixed sbrk free_malloc
 * shmdt guard file_punch private_file overflow clone_vm int80.
 * MODE "plain" (default); "restart": the daemon is SIGKILLed and started
 * again between caching the buffer and changing its mapping; "dead": it
 * is SIGKILLed before the change and started again only after it. In both
 * restart modes the process must then cache again (a hit) through the same
 * monitor, without restarting.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 65536
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102	/* Linux 6.13; not in Debian 12's headers */
#define MADV_GUARD_REMOVE 103
#endif

static struct io_uring ring;
static struct regcache *cache;
static const char *mode = "plain";
static int kills;

/* Between caching and the change: what MODE asks of the daemon. */
static void before_change(void)
{
	if (!strcmp(mode, "plain"))
		return;
	t_daemon_ctl('K');
	kills++;
	if (!strcmp(mode, "restart"))
		t_daemon_ctl('S');
}

static void after_change(void)
{
	if (!strcmp(mode, "dead"))
		t_daemon_ctl('S');
}

static void begin(struct t_case *k, void *buf, size_t len)
{
	t_case_begin(k, &ring, cache, buf, len);
	before_change();
}

static void end(struct t_case *k, const char *what, bool stale)
{
	after_change();
	t_case_end(k, what, stale);
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
	struct t_case k;
	char *buf = t_map(LEN);

	begin(&k, buf, LEN);
	T_REQUIRE(munmap(buf, LEN) == 0);
	map_at(buf, LEN);
	end(&k, "libc munmap", true);

	begin(&k, buf, LEN);
	T_REQUIRE(syscall(SYS_munmap, buf, LEN) == 0);
	map_at(buf, LEN);
	end(&k, "syscall(SYS_munmap)", true);

	begin(&k, buf, LEN);
	T_REQUIRE(munmap(buf + 4 * 4096, 4096) == 0);
	map_at(buf + 4 * 4096, 4096);
	end(&k, "munmap of one page in the middle", true);
}

static void case_mremap(void)
{
	struct t_case k;
	char *buf = t_map(LEN), *dst = t_map(LEN);

	T_REQUIRE(munmap(dst, LEN) == 0);
	begin(&k, buf, LEN);
	T_REQUIRE(mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst) ==
		  dst);
	map_at(buf, LEN);
	end(&k, "mremap move, old address reused", true);

	begin(&k, dst, LEN);
	T_REQUIRE(mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, dst) ==
		  dst);
	end(&k, "mremap MAYMOVE|FIXED onto a cached mapping", true);

	begin(&k, dst, LEN);
	T_REQUIRE(mremap(dst, LEN, LEN / 2, 0) == dst);
	map_at(dst + LEN / 2, LEN / 2);
	end(&k, "mremap shrink, tail mapped again", true);
}

static int remove_shared(void *p)
{
	return madvise(p, LEN, MADV_REMOVE) ? 1 : 0;
}

static void case_madvise(void)
{
	struct t_case k;
	char *buf = t_map(LEN), *shared;

	begin(&k, buf, LEN);
	T_REQUIRE(madvise(buf, LEN, MADV_DONTNEED) == 0);
	end(&k, "madvise(MADV_DONTNEED)", true);

	begin(&k, buf, LEN);
	T_REQUIRE(syscall(SYS_madvise, buf, LEN, MADV_DONTNEED) == 0);
	end(&k, "syscall(SYS_madvise, MADV_DONTNEED)", true);

	begin(&k, buf, LEN);
	T_REQUIRE(madvise(buf, LEN, MADV_FREE) == 0);
	end(&k, "madvise(MADV_FREE)", false);

	shared = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_REQUIRE(shared != MAP_FAILED);
	begin(&k, shared, LEN);
	T_REQUIRE(madvise(shared, LEN, MADV_REMOVE) == 0);
	end(&k, "madvise(MADV_REMOVE) on MAP_SHARED|MAP_ANONYMOUS", true);

	/* Another process, no syscall of ours: seen as the pages leave the
	 * page cache of the shared file (watched without an fd: the daemon
	 * checks our own mapping). */
	begin(&k, shared, LEN);
	in_child(remove_shared, shared);
	end(&k, "madvise(MADV_REMOVE) by a forked child on shared anonymous "
		"memory", true);
}

static void case_uring_madvise(void)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct t_case k;
	char *buf = t_map(LEN);

	begin(&k, buf, LEN);
	sqe = io_uring_get_sqe(&ring);
	T_REQUIRE(sqe);
	io_uring_prep_madvise(sqe, buf, LEN, MADV_DONTNEED);
	T_REQUIRE(io_uring_submit(&ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(&ring, &cqe) == 0);
	T_EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	end(&k, "io_uring IORING_OP_MADVISE(MADV_DONTNEED)", true);
}

static void case_map_fixed(void)
{
	struct t_case k;
	char *buf = t_map(LEN);

	begin(&k, buf, LEN);
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf);
	end(&k, "mmap(MAP_FIXED) over a cached range", true);
}

static void case_sbrk(void)
{
	struct t_case k;
	char *cur, *buf;

	cur = sbrk(0);
	T_REQUIRE(cur != (void *)-1);
	T_REQUIRE(sbrk((4096 - (uintptr_t)cur % 4096) % 4096) != (void *)-1);
	buf = sbrk(LEN);
	T_REQUIRE(buf != (void *)-1);
	begin(&k, buf, LEN);
	T_REQUIRE((char *)sbrk(0) == buf + LEN);
	T_REQUIRE(sbrk(-LEN) != (void *)-1);
	T_REQUIRE(sbrk(LEN) == buf);
	end(&k, "sbrk(-n) then sbrk(+n)", true);
}

static void case_free_malloc(void)
{
	struct t_case k;
	char *p, *q = NULL, *buf;
	int tries;

	for (tries = 0; tries < 20; tries++) {
		p = malloc(4 * LEN);
		T_REQUIRE(p);
		buf = (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
		begin(&k, buf, LEN);
		free(p);
		q = malloc(4 * LEN);
		T_REQUIRE(q);
		if (q == p)
			break;
		after_change();
		regcache_put(cache, k.held);
		free(q);
	}
	T_REQUIRE(tries < 20);
	end(&k, "free() + malloc() at the same address", true);
	free(q);
}

static void case_shmdt(void)
{
	struct t_case k;
	int id1 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	int id2 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	char *buf;

	T_REQUIRE(id1 >= 0 && id2 >= 0);
	buf = shmat(id1, NULL, 0);
	T_REQUIRE(buf != (void *)-1);
	shmctl(id1, IPC_RMID, NULL);
	t_uring_require_registrable(buf, LEN, "SysV shared memory");
	begin(&k, buf, LEN);
	T_REQUIRE(shmdt(buf) == 0);
	T_REQUIRE(shmat(id2, buf, 0) == buf);
	shmctl(id2, IPC_RMID, NULL);
	end(&k, "shmdt + shmat of another segment at the same address", true);
	T_REQUIRE(shmdt(buf) == 0);
}

static void case_guard(void)
{
	struct t_case k;
	char *buf = t_map(LEN);

	begin(&k, buf, LEN);
	if (madvise(buf, LEN, MADV_GUARD_INSTALL) && errno == EINVAL) {
		printf("SKIP: MADV_GUARD_INSTALL needs Linux 6.13\n");
		exit(T_EXIT_SKIP);
	}
	T_REQUIRE(madvise(buf, LEN, MADV_GUARD_REMOVE) == 0);
	end(&k, "MADV_GUARD_INSTALL + MADV_GUARD_REMOVE", true);
}

static int punch(void *arg)
{
	return fallocate(*(int *)arg, FALLOC_FL_PUNCH_HOLE |
			 FALLOC_FL_KEEP_SIZE, 0, LEN) ? 1 : 0;
}

static void punch_file(int fd, const char *kind)
{
	struct regcache_stats st;
	struct t_case k;
	char what[128];
	char *buf;

	T_REQUIRE(ftruncate(fd, LEN) == 0);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_REQUIRE(buf != MAP_FAILED);

	begin(&k, buf, LEN);
	T_REQUIRE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			    LEN) == 0);
	snprintf(what, sizeof(what), "%s: fallocate(PUNCH_HOLE)", kind);
	end(&k, what, true);

	begin(&k, buf, LEN);
	in_child(punch, &fd);
	snprintf(what, sizeof(what), "%s: hole punched by another process",
		 kind);
	end(&k, what, true);
	/* It was cached (a hit in t_case_begin), not served pass-through. */
	regcache_get_stats(cache, &st);
	T_CHECK(st.hits > 0);
	T_REQUIRE(munmap(buf, LEN) == 0);
}

static void case_file_punch(void)
{
	char path[64] = "/dev/shm/regcached-punch-XXXXXX";
	int fd = memfd_create("regcached-punch", MFD_CLOEXEC);

	T_REQUIRE(fd >= 0);
	punch_file(fd, "memfd");
	close(fd);
	/* A tmpfs file: watched through the fd we pass the daemon. */
	fd = mkstemp(path);
	if (fd < 0) {
		printf("no writable /dev/shm (%s): tmpfs file case not run\n",
		       strerror(errno));
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

/* A private file mapping cannot be watched (copy-on-write pages never
 * enter the page cache): it must be served pass-through, so DMA after
 * another process truncates the file is still visible. */
static void case_private_file(void)
{
	struct regcache_region *held, *r;
	char path[64] = "/tmp/regcached-private-XXXXXX";
	int fd = mkstemp(path);
	char *buf;

	T_REQUIRE(fd >= 0);
	unlink(path);
	T_REQUIRE(ftruncate(fd, LEN) == 0);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	T_REQUIRE(buf != MAP_FAILED);
	memset(buf, 0x5a, LEN);
	T_REQUIRE(regcache_get(cache, buf, LEN, 0, &held) == 0);
	before_change();
	in_child(truncate_child, &fd);
	after_change();
	if (t_dma_visible(&ring, held, buf, LEN, 2)) {
		fprintf(stderr, "negative control: DMA through the held "
			"registration is visible; the truncation stranded "
			"nothing\n");
		t_failures++;
	}
	regcache_put(cache, held);
	T_REQUIRE(regcache_get(cache, buf, LEN, 0, &r) == 0);
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 3));
	regcache_put(cache, r);
	T_REQUIRE(munmap(buf, LEN) == 0);
	close(fd);
}

static void case_overflow(void)
{
	struct regcache_region *r;
	struct t_case k;
	char *bufs[8], *junk;

	for (int i = 0; i < 8; i++) {
		bufs[i] = t_map(LEN);
		T_REQUIRE(regcache_get(cache, bufs[i], LEN, 0, &r) == 0);
		regcache_put(cache, r);
	}
	junk = t_map(4096);
	begin(&k, bufs[0], LEN);
	/* 3 records each: far more than the ring holds. */
	for (int i = 0; i < 20000; i++)
		T_REQUIRE(madvise(junk, 4096, MADV_DONTNEED) == 0);
	T_REQUIRE(munmap(bufs[0], LEN) == 0);
	map_at(bufs[0], LEN);
	end(&k, "munmap whose records overflowed the ring", true);
	for (int i = 1; i < 8; i++) {
		T_REQUIRE(regcache_get(cache, bufs[i], LEN, 0, &r) == 0);
		T_CHECK(t_dma_visible(&ring, r, bufs[i], LEN, i));
		regcache_put(cache, r);
	}
}

static char *clone_target;

static int clone_child(void *arg)
{
	(void)arg;
	if (syscall(SYS_munmap, clone_target, LEN))
		return 1;
	return (char *)syscall(SYS_mmap, clone_target, LEN,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0) == clone_target ? 0 : 2;
}

static void case_clone_vm(void)
{
	struct t_case k;
	char *stack = t_map(256 * 1024);
	int status;
	pid_t pid;

#if defined(__SANITIZE_THREAD__)
	printf("SKIP: TSan cannot run a clone(CLONE_VM) child\n");
	exit(T_EXIT_SKIP);
#endif
	clone_target = t_map(LEN);
	begin(&k, clone_target, LEN);
	pid = clone(clone_child, stack + 256 * 1024, CLONE_VM | SIGCHLD, NULL);
	T_REQUIRE(pid > 0);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	end(&k, "munmap by a clone(CLONE_VM) child process", true);
}

static sigjmp_buf jb;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

static long int80_munmap(void *addr, unsigned long len)
{
	long ret;

	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(91L), "b"(addr), "c"(len)
			 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

static void case_int80(void)
{
	struct t_case k;
	char *buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	T_REQUIRE(buf != MAP_FAILED);
	signal(SIGSEGV, on_segv);
	if (sigsetjmp(jb, 1) || int80_munmap(NULL, 0) == -ENOSYS) {
		printf("SKIP: no IA32 emulation for int $0x80\n");
		exit(T_EXIT_SKIP);
	}
	signal(SIGSEGV, SIG_DFL);
	begin(&k, buf, LEN);
	T_REQUIRE(int80_munmap(buf, LEN) == 0);
	map_at(buf, LEN);
	end(&k, "munmap through int $0x80", true);
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "munmap", case_munmap },
	{ "mremap", case_mremap },
	{ "madvise", case_madvise },
	{ "uring_madvise", case_uring_madvise },
	{ "map_fixed", case_map_fixed },
	{ "sbrk", case_sbrk },
	{ "free_malloc", case_free_malloc },
	{ "shmdt", case_shmdt },
	{ "guard", case_guard },
	{ "file_punch", case_file_punch },
	{ "private_file", case_private_file },
	{ "overflow", case_overflow },
	{ "clone_vm", case_clone_vm },
	{ "int80", case_int80 },
};

/* After a restart the process caches again without restarting: a get,
 * then a hit, through the same monitor. */
static void check_resumed(void)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;
	char *buf = t_map(LEN);

	T_REQUIRE(regcache_get(cache, buf, LEN, 0, &r) == 0);
	regcache_put(cache, r);
	regcache_get_stats(cache, &st);
	T_REQUIRE(regcache_get(cache, buf, LEN, 0, &r) == 0);
	regcache_get_stats(cache, &st2);
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 77));
	regcache_put(cache, r);
	if (st2.hits != st.hits + 1) {
		fprintf(stderr, "after %d daemon restarts the cache does not "
			"hit again\n", kills);
		t_failures++;
	}
	T_CHECK(t_monitor_is("regcached"));
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CASE [plain|restart|dead]\n", argv[0]);
		return T_EXIT_FAIL;
	}
	if (argc > 2)
		mode = argv[2];
	/* Every malloc from here uses mmap: the break belongs to sbrk. */
	if (!strcmp(argv[1], "sbrk"))
		mallopt(M_MMAP_THRESHOLD, 0);
	if (!strcmp(argv[1], "free_malloc"))
		mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	t_ring_init(&ring);
	cache = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	if (getuid() == 0)
		printf("note: running as root (regcached-launch --root)\n");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(cases[i].name, argv[1]))
			break;
	if (i == sizeof(cases) / sizeof(cases[0])) {
		fprintf(stderr, "unknown case %s\n", argv[1]);
		return T_EXIT_FAIL;
	}
	cases[i].fn();
	if (kills)
		check_resumed();
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
