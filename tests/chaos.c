/*
 * Description: chaos under a monitor. Checker threads get and put regions of
 * random buffers and prove each registration with DMA (READ_FIXED, then
 * compare the bytes), while mutator threads change those buffers every way
 * an application can: munmap and mmap again, MAP_FIXED over them, mremap
 * (grow, shrink, move onto a mapping, MREMAP_DONTUNMAP, several VMAs at
 * once), madvise (DONTNEED, FREE, REMOVE on shmem, guard install and
 * remove), mprotect, fork children that write them, memfd hole punch and
 * truncation, and truncation of a privately mapped ext4 file by another
 * process; half of the calls go through syscall(2), half through libc.
 * Other threads malloc, realloc and free in several sizes meanwhile.
 *
 * A stale byte cannot be the test's own race: every buffer (a "slot") has a
 * lock, a checker holds it from get to put, and a mutator changes a buffer
 * only while holding it. So each DMA must land where the application looks.
 *
 * Fails on any stale byte, any error from the library or from a call the
 * application makes (a monitor must not change what those calls do), a
 * crash, or a thread that makes no progress for HANG_SECONDS (watchdog).
 * Prints checks per second, the hit rate and the "everything"
 * invalidations (stats.overflows).
 *
 * Usage: chaos [--seconds S] [--seed N] [--blind | --explicit]
 *   --blind:    negative control: REGCACHE_FLAG_EXPLICIT_INVALIDATE and no
 *               regcache_invalidate() calls, so nothing invalidates; passes
 *               only if the checker reports stale bytes.
 *   --explicit: REGCACHE_FLAG_EXPLICIT_INVALIDATE and the mutators call
 *               regcache_invalidate() before each change: must be 0 stale.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

#define NSLOTS 48
#define NCACHES 2
#define NCHECKERS 3
#define NMUTATORS 2
#define NMALLOCERS 2
#define MAX_PAGES 48		/* largest mapped buffer, in pages */
#define DMA_MAX 65536		/* t_dma_visible's limit */
#define HANG_SECONDS 30
#define HISTORY 6

enum kind { K_ANON, K_MULTI, K_SHMEM, K_FILE, K_MALLOC, K_NKINDS };
static const char *const kind_name[] = { "anon", "multi-vma", "memfd",
					 "private-file", "malloc" };

enum mode { M_NORMAL, M_BLIND, M_EXPLICIT };

struct slot {
	pthread_mutex_t lock;
	enum kind kind;
	char *addr;
	size_t len;
	int fd;			/* memfd or file, else -1 */
	const char *history[HISTORY];	/* last changes, newest last */
	unsigned nhist;
};

static struct slot slots[NSLOTS];
static struct io_uring rings[NCACHES];
static struct regcache *caches[NCACHES];
static pthread_mutex_t dma_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t page;
static enum mode mode;
static bool multi_vma_move;	/* the kernel moves several VMAs at once */
static bool guards;		/* MADV_GUARD_INSTALL works */
static bool guards_need_invalidate;	/* the monitor cannot see them */
/* docs/monitor-userfaultfd.md, "What the application sees": under that
 * monitor the kernel refuses to move a range of several VMAs (EFAULT,
 * possibly half-moved); counted, not failed. */
static bool mremap_documented;
static atomic_ulong documented;
static char tmpdir[256];
static atomic_bool stop;
static atomic_ulong checks, stale, errors, mutations, mallocs;
static atomic_ulong heartbeat[NCHECKERS + NMUTATORS + NMALLOCERS];
static atomic_int stale_reports;
static unsigned seed;


static void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void error(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&errors, 1) >= 20)
		return;	/* the count is printed at the end */
	va_start(ap, fmt);
	fprintf(stderr, "chaos: error: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

/* ---- the application's calls, through libc or straight syscall(2) ---- */

/* TSan learns that an address range holds new memory only from its mmap
 * and munmap interceptors; a raw syscall would leave it thinking that a
 * buffer's new owner races with the old one's. So under TSan every call
 * goes through libc (the other builds cover the raw ones). */
#if defined(__SANITIZE_THREAD__)
#define RAW(s) (t_rnd(s), false)
#else
#define RAW(s) (t_rnd(s) & 1)
#endif

/*
 * An address one slot's mutator unmaps may be the next address the kernel
 * gives another slot's mutator: the address space (mmap_lock) orders the
 * two, and every access by the old owner's checkers came before the unmap
 * (they held the slot's lock). TSan cannot see that order through mremap,
 * which it does not intercept, so it is stated to it: a release before
 * every call that may unmap, an acquire after every call that may map.
 */
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
static char address_space;
#define UNMAPPING() __tsan_release(&address_space)
#define MAPPED() __tsan_acquire(&address_space)
#else
#define UNMAPPING() ((void)0)
#define MAPPED() ((void)0)
#endif

static void *x_mmap(unsigned *s, void *a, size_t len, int prot, int flags,
		    int fd, off_t off)
{
	void *p;

	UNMAPPING();	/* MAP_FIXED */
	if (RAW(s))
		p = (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
	else
		p = mmap(a, len, prot, flags, fd, off);
	MAPPED();
	return p;
}

static int x_munmap(unsigned *s, void *a, size_t len)
{
	UNMAPPING();
	return RAW(s) ? (int)syscall(SYS_munmap, a, len) : munmap(a, len);
}

static void *x_mremap(unsigned *s, void *a, size_t old, size_t new, int flags,
		      void *to)
{
	void *p;

	UNMAPPING();
	if (RAW(s))
		p = (void *)syscall(SYS_mremap, a, old, new, flags, to);
	else
		p = mremap(a, old, new, flags, to);
	MAPPED();
	return p;
}

static int x_madvise(unsigned *s, void *a, size_t len, int advice)
{
	if (RAW(s))
		return (int)syscall(SYS_madvise, a, len, advice);
	return madvise(a, len, advice);
}

static int x_mprotect(unsigned *s, void *a, size_t len, int prot)
{
	if (RAW(s))
		return (int)syscall(SYS_mprotect, a, len, prot);
	return mprotect(a, len, prot);
}

static int x_ftruncate(unsigned *s, int fd, off_t len)
{
	if (RAW(s))
		return (int)syscall(SYS_ftruncate, fd, len);
	return ftruncate(fd, len);
}

/* ---- slots ---- */

static void note(struct slot *sl, const char *what)
{
	if (sl->nhist == HISTORY) {
		memmove(sl->history, sl->history + 1,
			(HISTORY - 1) * sizeof(sl->history[0]));
		sl->nhist--;
	}
	sl->history[sl->nhist++] = what;
}

static void invalidate_now(const void *a, size_t len)
{
	for (int i = 0; i < NCACHES; i++)
		if (regcache_invalidate(caches[i], a, len) < 0)
			error("regcache_invalidate(%p, %zu) failed", a, len);
}

static void invalidate(const void *a, size_t len)
{
	if (mode != M_EXPLICIT || !a || !len)
		return;
	for (int i = 0; i < NCACHES; i++)
		if (regcache_invalidate(caches[i], a, len) < 0)
			error("regcache_invalidate(%p, %zu) failed", a, len);
}

static size_t rand_pages(unsigned *s)
{
	unsigned r = t_rnd(s) % 8;

	return (size_t)(r < 4 ? 1 + t_rnd(s) % 4 : r < 7 ? 1 + t_rnd(s) % 16
						    : 1 + t_rnd(s) % MAX_PAGES) * page;
}

/* Split [a, a+len) into several VMAs of the same protection: MADV_DONTDUMP
 * on every other piece changes vm_flags, so the pieces do not merge. */
static void split_vmas(char *a, size_t len)
{
	size_t npages = len / page;

	for (size_t i = 1; i < npages; i += 2)
		if (madvise(a + i * page, page, MADV_DONTDUMP))
			error("madvise(DONTDUMP): %s", strerror(errno));
}

/* A new buffer of @sl's kind; the slot is locked or not yet shared. */
static void slot_fill(struct slot *sl, unsigned *s)
{
	size_t len = rand_pages(s);
	void *a;

	switch (sl->kind) {
	case K_ANON:
	case K_MULTI:
		if (sl->kind == K_MULTI && len < 2 * page)
			len = 2 * page;
		a = x_mmap(s, NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		T_REQUIRE(a != MAP_FAILED);
		if (sl->kind == K_MULTI)
			split_vmas(a, len);
		break;
	case K_SHMEM:
		if (sl->fd < 0) {
			sl->fd = memfd_create("chaos", MFD_CLOEXEC);
			T_REQUIRE(sl->fd >= 0);
		}
		T_REQUIRE(ftruncate(sl->fd, len) == 0);
		a = x_mmap(s, NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			   sl->fd, 0);
		T_REQUIRE(a != MAP_FAILED);
		break;
	case K_FILE: {
		char path[300];

		if (sl->fd < 0) {
			snprintf(path, sizeof(path), "%s/regcache-chaos-XXXXXX",
				 tmpdir);
			sl->fd = mkstemp(path);
			T_REQUIRE(sl->fd >= 0);
			unlink(path);
		}
		T_REQUIRE(ftruncate(sl->fd, 0) == 0);
		T_REQUIRE(ftruncate(sl->fd, len) == 0);
		a = x_mmap(s, NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE,
			   sl->fd, 0);
		T_REQUIRE(a != MAP_FAILED);
		break;
	}
	case K_MALLOC:
		len = t_rnd(s) % 4 ? 16 + t_rnd(s) % 8192 : 32768 + t_rnd(s) % 262144;
		a = malloc(len);
		T_REQUIRE(a);
		break;
	default:
		abort();
	}
	memset(a, 0x5a, len);
	sl->addr = a;
	sl->len = len;
}

static void slot_release(struct slot *sl, unsigned *s)
{
	invalidate(sl->addr, sl->len);
	if (sl->kind == K_MALLOC)
		free(sl->addr);
	else if (x_munmap(s, sl->addr, sl->len))
		error("munmap(%p, %zu) of a %s buffer: %s", sl->addr, sl->len,
		      kind_name[sl->kind], strerror(errno));
	sl->addr = NULL;
	sl->len = 0;
}

/* ---- the checkers ---- */

static void report_stale(struct slot *sl, int ci, struct regcache_region *r,
			 const char *p, size_t len)
{
	char hist[512] = "";

	atomic_fetch_add(&stale, 1);
	if (atomic_fetch_add(&stale_reports, 1) >= (mode == M_BLIND ? 3 : 20))
		return;
	for (unsigned i = 0; i < sl->nhist; i++) {
		strncat(hist, " ", sizeof(hist) - strlen(hist) - 1);
		strncat(hist, sl->history[i], sizeof(hist) - strlen(hist) - 1);
	}
	fprintf(stderr, "chaos: STALE: cache %d, %s buffer %p+%zu, checked "
		"%p+%zu, region %p+%zu; last changes:%s\n", ci,
		kind_name[sl->kind], sl->addr, sl->len, p, len,
		regcache_region_addr(r), regcache_region_len(r), hist);
}

/* One get + DMA check + put on a random part of a locked slot. */
static void check_once(struct slot *sl, unsigned *s)
{
	int ci = t_rnd(s) % NCACHES;
	size_t off = t_rnd(s) % sl->len;
	size_t len = 1 + t_rnd(s) % (sl->len - off);
	struct regcache_region *r, *outer = NULL;
	char *p = sl->addr + off;
	bool ok;
	int ret;

	if (len > DMA_MAX)
		len = DMA_MAX;
	/* Sometimes hold the whole buffer while checking a part of it. */
	if (t_rnd(s) % 4 == 0) {
		ret = regcache_get(caches[ci], sl->addr, sl->len, 0, &outer);
		if (ret) {
			error("regcache_get(%s buffer %p+%zu): %s",
			      kind_name[sl->kind], sl->addr, sl->len,
			      strerror(-ret));
			return;
		}
	}
	ret = regcache_get(caches[ci], p, len, 0, &r);
	if (ret) {
		error("regcache_get(%s buffer %p+%zu at +%zu): %s",
		      kind_name[sl->kind], p, len, off, strerror(-ret));
		regcache_put(caches[ci], outer);
		return;
	}
	pthread_mutex_lock(&dma_lock);
	ok = t_dma_visible(&rings[ci], r, p, len, t_rnd(s));
	pthread_mutex_unlock(&dma_lock);
	atomic_fetch_add(&checks, 1);
	if (!ok)
		report_stale(sl, ci, r, p, len);
	regcache_put(caches[ci], r);
	regcache_put(caches[ci], outer);
}

static void *checker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	unsigned s = 0x9e3779b9u * (id + 1) ^ seed;

	while (!atomic_load(&stop)) {
		struct slot *sl = &slots[t_rnd(&s) % NSLOTS];
		unsigned n = 1 + t_rnd(&s) % 4;

		atomic_fetch_add(&heartbeat[id], 1);
		if (pthread_mutex_trylock(&sl->lock))
			continue;
		for (unsigned i = 0; i < n; i++)
			check_once(sl, &s);
		pthread_mutex_unlock(&sl->lock);
		if (t_rnd(&s) % 4096 == 0)
			regcache_flush(caches[t_rnd(&s) % NCACHES]);
	}
	return NULL;
}

/* ---- the mutators: each change runs on a locked slot ---- */

/* How many VMAs [a, a+len) spans (/proc/self/maps): the kernel refuses to
 * resize, or before 6.17 to move, a range that spans several, with or
 * without a monitor. */
static int vmas_spanned(const char *a, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	int n = 0;

	T_REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    lo < (uintptr_t)a + len && (uintptr_t)a < hi)
			n++;
	fclose(f);
	return n;
}

/* A failed resize or DONTUNMAP is the application's own doing when the
 * range spans several VMAs; then start over with a new buffer. */
static void mremap_failed(struct slot *sl, unsigned *s, const char *what)
{
	int err = errno, n = vmas_spanned(sl->addr, sl->len);

	if (!(err == EFAULT && n > 1))
		error("mremap %s of a %s buffer %p+%zu (%d VMAs): %s", what,
		      kind_name[sl->kind], sl->addr, sl->len, n, strerror(err));
	note(sl, "munmap+mmap");
	slot_release(sl, s);
	slot_fill(sl, s);
}

/* A part [*pa, *pa + *plen) of the buffer, whole pages (mappings only). */
static void page_part(struct slot *sl, unsigned *s, char **pa, size_t *plen)
{
	size_t npages = sl->len / page;
	size_t first = t_rnd(s) % npages;

	*pa = sl->addr + first * page;
	*plen = (1 + t_rnd(s) % (npages - first)) * page;
}

static void change_remap(struct slot *sl, unsigned *s)
{
	size_t len = sl->len;
	char *a = sl->addr;

	switch (t_rnd(s) % 3) {
	case 0:	/* munmap, then a new buffer wherever the kernel puts it */
		note(sl, "munmap+mmap");
		slot_release(sl, s);
		slot_fill(sl, s);
		return;
	case 1:	/* munmap, then mmap at the same address if still free */
		note(sl, "munmap+mmap-same-address");
		invalidate(a, len);
		if (x_munmap(s, a, len)) {
			error("munmap: %s", strerror(errno));
			return;
		}
		a = x_mmap(s, a, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			   -1, 0);
		if (a == MAP_FAILED) {
			sl->addr = NULL;
			slot_fill(sl, s);
			return;
		}
		sl->addr = a;
		if (sl->kind == K_MULTI)
			split_vmas(a, len);
		return;
	default: {	/* MAP_FIXED over a live part */
		char *pa;
		size_t plen;

		note(sl, "mmap-MAP_FIXED-over");
		page_part(sl, s, &pa, &plen);
		invalidate(pa, plen);
		if (x_mmap(s, pa, plen, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != pa)
			error("mmap(MAP_FIXED): %s", strerror(errno));
		return;
	}
	}
}

static void change_mremap(struct slot *sl, unsigned *s)
{
	size_t len = sl->len, nlen;
	char *a = sl->addr, *to, *res;
	unsigned op = t_rnd(s) % 4;
	int n;

	if (sl->kind == K_MULTI && !multi_vma_move)
		return;
	if (sl->kind == K_MULTI || sl->kind == K_FILE)
		op = 2;	/* only a same-size move spans several VMAs */
	invalidate(a, len);
	switch (op) {
	case 0:	/* grow, moving if it must */
		note(sl, "mremap-grow");
		nlen = len + (1 + t_rnd(s) % 8) * page;
		res = x_mremap(s, a, len, nlen, MREMAP_MAYMOVE, NULL);
		if (res == MAP_FAILED) {
			mremap_failed(sl, s, "grow");
			return;
		}
		if (sl->kind == K_SHMEM)
			T_REQUIRE(ftruncate(sl->fd, nlen) == 0);
		sl->addr = res;
		sl->len = nlen;
		memset(res, 0x3c, nlen);
		return;
	case 1:	/* shrink in place */
		if (len < 2 * page)
			return;
		note(sl, "mremap-shrink");
		nlen = (1 + t_rnd(s) % (len / page - 1)) * page;
		if (x_mremap(s, a, len, nlen, 0, NULL) != a)
			mremap_failed(sl, s, "shrink");
		else
			sl->len = nlen;
		return;
	case 2:	/* move onto another live mapping (MAYMOVE|FIXED) */
		note(sl, sl->kind == K_MULTI ? "mremap-move-multi-vma"
					     : "mremap-move-fixed");
		to = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		T_REQUIRE(to != MAP_FAILED);
		MAPPED();
		memset(to, 0x11, len);
		n = vmas_spanned(a, len);
		res = x_mremap(s, a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
		if (res != to) {
			int err = errno;

			/* Whatever moved or not, drop both and start over. */
			if (err == EFAULT && n > 1 && mremap_documented)
				atomic_fetch_add(&documented, 1);
			else if (multi_vma_move || n == 1 || err != EFAULT)
				error("mremap(MAYMOVE|FIXED) of a %s buffer "
				      "%p+%zu (%d VMAs) onto %p: %s, which "
				      "moves it without a monitor; %d VMAs "
				      "left behind", kind_name[sl->kind], a,
				      len, n, to, strerror(err),
				      vmas_spanned(a, len));
			/* A move of several VMAs that failed half way left
			 * holes in [a, a+len) that another thread's mmap
			 * (malloc's) may own by now: unmapping the range
			 * would pull memory from under it. Leave it. */
			UNMAPPING();
			if (!(err == EFAULT && n > 1))
				munmap(a, len);
			munmap(to, len);
			sl->addr = NULL;
			slot_fill(sl, s);
			return;
		}
		sl->addr = to;
		return;
	default: {	/* MREMAP_DONTUNMAP: keep either the moved pages or the
			 * emptied old range */
		bool keep_old = t_rnd(s) & 1;

		if (sl->kind != K_ANON)
			return;
		note(sl, keep_old ? "mremap-dontunmap-keep-old"
				  : "mremap-dontunmap-keep-new");
		res = x_mremap(s, a, len, len,
			       MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
		if (res == MAP_FAILED) {
			mremap_failed(sl, s, "DONTUNMAP");
			return;
		}
		UNMAPPING();
		if (keep_old) {
			munmap(res, len);
			memset(a, 0x22, len);
		} else {
			munmap(a, len);
			sl->addr = res;
		}
		return;
	}
	}
}

static void change_madvise(struct slot *sl, unsigned *s)
{
	char *pa;
	size_t plen;
	unsigned op = t_rnd(s) % 4;

	page_part(sl, s, &pa, &plen);
	invalidate(pa, plen);
	switch (op) {
	case 0:
		note(sl, "madvise-DONTNEED");
		if (x_madvise(s, pa, plen, MADV_DONTNEED))
			error("madvise(DONTNEED): %s", strerror(errno));
		break;
	case 1:
		if (sl->kind == K_SHMEM) {
			note(sl, "madvise-REMOVE");
			if (x_madvise(s, pa, plen, MADV_REMOVE))
				error("madvise(REMOVE): %s", strerror(errno));
		} else if (sl->kind != K_FILE) {
			note(sl, "madvise-FREE");
			if (x_madvise(s, pa, plen, MADV_FREE))
				error("madvise(FREE): %s", strerror(errno));
		}
		break;
	default:
		if (!guards || (sl->kind != K_ANON && sl->kind != K_MULTI))
			break;
		note(sl, "madvise-GUARD_INSTALL+REMOVE");
		/* docs/monitor-userfaultfd.md: that monitor gets no event for
		 * guard pages; the documented contract is to invalidate. */
		if (guards_need_invalidate && mode == M_NORMAL)
			invalidate_now(pa, plen);
		if (x_madvise(s, pa, plen, MADV_GUARD_INSTALL) ||
		    x_madvise(s, pa, plen, MADV_GUARD_REMOVE))
			error("madvise(GUARD_*) on a %s buffer: %s",
			      kind_name[sl->kind], strerror(errno));
		break;
	}
	memset(pa, 0x33, plen);
}

static void change_mprotect(struct slot *sl, unsigned *s)
{
	int prot = t_rnd(s) & 1 ? PROT_READ : PROT_NONE;

	note(sl, prot ? "mprotect-RO+RW" : "mprotect-NONE+RW");
	if (x_mprotect(s, sl->addr, sl->len, prot) ||
	    x_mprotect(s, sl->addr, sl->len, PROT_READ | PROT_WRITE))
		error("mprotect: %s", strerror(errno));
	if (sl->kind == K_MULTI)
		split_vmas(sl->addr, sl->len);
}

/* A child writes the buffer and exits, the parent writes it meanwhile
 * (copy-on-write on both sides). */
static void change_fork(struct slot *sl, unsigned *s)
{
	pid_t pid, parent = getpid();
	int status;

	(void)s;
	note(sl, "fork+writes");
	pid = fork();
	if (pid < 0) {
		error("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		struct timespec ts = { 0, 200000 };

		t_die_with_parent(parent);
		memset(sl->addr, 0x77, sl->len);
		nanosleep(&ts, NULL);
		_exit(0);
	}
	memset(sl->addr, 0x44, sl->len);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		error("fork child failed (status %#x)", status);
}

static void change_memfd(struct slot *sl, unsigned *s)
{
	char *pa;
	size_t plen;

	page_part(sl, s, &pa, &plen);
	if (t_rnd(s) & 1) {
		note(sl, "memfd-punch-hole");
		invalidate(pa, plen);
		if (fallocate(sl->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      pa - sl->addr, plen))
			error("fallocate(PUNCH_HOLE): %s", strerror(errno));
	} else {
		note(sl, "memfd-truncate");
		invalidate(sl->addr, sl->len);
		if (x_ftruncate(s, sl->fd, pa - sl->addr) ||
		    x_ftruncate(s, sl->fd, sl->len))
			error("ftruncate memfd: %s", strerror(errno));
	}
	memset(sl->addr, 0x55, sl->len);
}

/* The private file mapping: its copy-on-write pages are dropped when the
 * file is truncated, by this process or another one. */
static void change_file(struct slot *sl, unsigned *s)
{
	unsigned op = t_rnd(s) % 3;

	if (op == 0) {
		/* Written (private copies), and none of the file's pages in
		 * the page cache: the case no page-cache hook can see. */
		note(sl, "file-fsync+fadvise-DONTNEED");
		memset(sl->addr, 0x66, sl->len);
		if (fsync(sl->fd) ||
		    posix_fadvise(sl->fd, 0, 0, POSIX_FADV_DONTNEED))
			error("fsync/fadvise: %s", strerror(errno));
		return;
	}
	invalidate(sl->addr, sl->len);
	if (op == 1) {
		pid_t pid, parent = getpid();
		int status;
		off_t len = (off_t)sl->len;

		note(sl, "file-truncate-by-another-process");
		pid = fork();
		if (pid < 0) {
			error("fork: %s", strerror(errno));
			return;
		}
		if (pid == 0) {
			t_die_with_parent(parent);
			_exit(ftruncate(sl->fd, 0) || ftruncate(sl->fd, len));
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			error("truncating child failed (status %#x)", status);
	} else {
		note(sl, "file-truncate-by-self");
		if (x_ftruncate(s, sl->fd, 0) ||
		    x_ftruncate(s, sl->fd, (off_t)sl->len))
			error("ftruncate: %s", strerror(errno));
	}
	memset(sl->addr, 0x67, sl->len);
}

static void change_malloc(struct slot *sl, unsigned *s)
{
	if (t_rnd(s) & 1) {
		note(sl, "free+malloc");
		slot_release(sl, s);
		slot_fill(sl, s);
	} else {
		size_t nlen = 16 + t_rnd(s) % (t_rnd(s) & 1 ? 8192 : 300000);
		char *p;

		note(sl, "realloc");
		invalidate(sl->addr, sl->len);
		p = realloc(sl->addr, nlen);
		T_REQUIRE(p);
		memset(p, 0x12, nlen);
		sl->addr = p;
		sl->len = nlen;
	}
}

static void change(struct slot *sl, unsigned *s)
{
	unsigned op = t_rnd(s) % 10;

	if (sl->kind == K_MALLOC) {
		change_malloc(sl, s);
		return;
	}
	if (sl->kind == K_SHMEM && op < 3) {
		change_memfd(sl, s);
		return;
	}
	if (sl->kind == K_FILE && op < 4) {
		change_file(sl, s);
		return;
	}
	switch (op) {
	case 0:
	case 1:
	case 2:
		if (sl->kind == K_ANON || sl->kind == K_MULTI) {
			change_remap(sl, s);
			break;
		}
		note(sl, "munmap+mmap");
		slot_release(sl, s);
		slot_fill(sl, s);
		break;
	case 3:
	case 4:
		change_mremap(sl, s);
		break;
	case 5:
	case 6:
		change_madvise(sl, s);
		break;
	case 7:
		change_mprotect(sl, s);
		break;
	case 8:
		change_fork(sl, s);
		break;
	default:
		break;	/* leave it alone: gives hits a chance */
	}
	if (sl->len > (size_t)MAX_PAGES * page * 2) {
		note(sl, "munmap-too-big");
		slot_release(sl, s);
		slot_fill(sl, s);
	}
}

static void *mutator(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	unsigned s = 0x85ebca6bu * (id + 1) ^ seed;
	struct timespec pause = { 0, 20000 };

	while (!atomic_load(&stop)) {
		struct slot *sl = &slots[t_rnd(&s) % NSLOTS];

		atomic_fetch_add(&heartbeat[id], 1);
		pthread_mutex_lock(&sl->lock);
		change(sl, &s);
		pthread_mutex_unlock(&sl->lock);
		atomic_fetch_add(&mutations, 1);
		/* Let checkers cache buffers between changes. */
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* Memory churn that nobody registers: small, medium (around the mmap
 * threshold) and large chunks, realloc, and malloc_trim. */
static void *mallocer(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	unsigned s = 0xc2b2ae35u * (id + 1) ^ seed;
	void *keep[128] = { 0 };

	while (!atomic_load(&stop)) {
		unsigned k = t_rnd(&s) % 128, r = t_rnd(&s) % 16;
		size_t sz = r < 10 ? 16 + t_rnd(&s) % 1024
			  : r < 14 ? 4096 + t_rnd(&s) % 60000
			  : r < 15 ? 100000 + t_rnd(&s) % 400000
				   : (1 + t_rnd(&s) % 4) << 20;

		atomic_fetch_add(&heartbeat[id], 1);
		if (keep[k] && t_rnd(&s) % 4 == 0) {
			void *p = realloc(keep[k], sz);

			T_REQUIRE(p);
			keep[k] = p;
		} else {
			free(keep[k]);
			keep[k] = malloc(sz);
			T_REQUIRE(keep[k]);
		}
		memset(keep[k], 1, sz < 8192 ? sz : 8192);
		atomic_fetch_add(&mallocs, 1);
		if (t_rnd(&s) % 2048 == 0)
			malloc_trim(0);
	}
	for (int k = 0; k < 128; k++)
		free(keep[k]);
	return NULL;
}

/* ---- setup, watchdog, report ---- */

/* Does this kernel move several VMAs in one mremap(MAYMOVE|FIXED)? (Linux
 * 6.17+.) Asked before any cache exists, so no monitor is involved. */
static bool probe_multi_vma_move(void)
{
	char *a = t_map(4 * page), *to = t_map(4 * page);
	bool ok;

	split_vmas(a, 4 * page);
	ok = mremap(a, 4 * page, 4 * page, MREMAP_MAYMOVE | MREMAP_FIXED, to) == to;
	munmap(a, 4 * page);
	munmap(to, 4 * page);
	return ok;
}

static bool probe_guards(void)
{
	char *a = t_map(page);
	bool ok = !madvise(a, page, MADV_GUARD_INSTALL) &&
		  !madvise(a, page, MADV_GUARD_REMOVE);

	munmap(a, page);
	return ok;
}

/* Any thread without progress for HANG_SECONDS, or a shutdown that takes
 * that long, fails the test instead of hanging CI. */
static atomic_bool finished;
static void *watchdog(void *arg)
{
	unsigned long last[NCHECKERS + NMUTATORS + NMALLOCERS] = { 0 };
	double since[NCHECKERS + NMUTATORS + NMALLOCERS];
	double stop_at = 0;

	(void)arg;
	for (int i = 0; i < NCHECKERS + NMUTATORS + NMALLOCERS; i++)
		since[i] = t_now();
	while (!atomic_load(&finished)) {
		usleep(200000);
		if (atomic_load(&stop)) {
			if (!stop_at)
				stop_at = t_now();
			if (t_now() - stop_at > HANG_SECONDS)
				break;
			continue;
		}
		for (int i = 0; i < NCHECKERS + NMUTATORS + NMALLOCERS; i++) {
			unsigned long hb = atomic_load(&heartbeat[i]);

			if (hb != last[i]) {
				last[i] = hb;
				since[i] = t_now();
			} else if (t_now() - since[i] > HANG_SECONDS) {
				fprintf(stderr, "chaos: HANG: thread %d made no "
					"progress for %d s\n", i, HANG_SECONDS);
				_exit(T_EXIT_FAIL);
			}
		}
	}
	if (!atomic_load(&finished)) {
		fprintf(stderr, "chaos: HANG: shutdown took more than %d s\n",
			HANG_SECONDS);
		_exit(T_EXIT_FAIL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = T_SECONDS(12), t0, elapsed;
	pthread_t th[NCHECKERS + NMUTATORS + NMALLOCERS], dog;
	struct regcache_stats st, sum = { 0 };
	const char *tmp = getenv("TMPDIR");
	unsigned flags = 0;
	int nt = 0;
	unsigned long gets;

	/* Line by line, so that a crash leaves what was printed before it
	 * (with a pipe for stdout, a full buffer would die with it). */
	setvbuf(stdout, NULL, _IOLBF, 0);
	seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--blind"))
			mode = M_BLIND;
		else if (!strcmp(argv[i], "--explicit"))
			mode = M_EXPLICIT;
		else {
			fprintf(stderr, "usage: %s [--seconds S] [--seed N] "
				"[--blind | --explicit]\n", argv[0]);
			return 2;
		}
	}
	if (!seed)
		seed = 1;
	page = sysconf(_SC_PAGESIZE);
	snprintf(tmpdir, sizeof(tmpdir), "%s", tmp ? tmp : "/tmp");
	multi_vma_move = probe_multi_vma_move();
	guards = probe_guards();

	if (mode != M_NORMAL)
		flags |= REGCACHE_FLAG_EXPLICIT_INVALIDATE;
	for (int i = 0; i < NCACHES; i++) {
		t_ring_init(&rings[i]);
		caches[i] = t_uring_cache(&rings[i], flags, 0, 0);
	}
	t_monitor_require();
	guards_need_invalidate = t_monitor_is("userfaultfd");
	mremap_documented = t_monitor_is("userfaultfd");
	if (mode != M_NORMAL && !t_monitor_is("none")) {
		printf("SKIP: --blind and --explicit need REGCACHE_MONITOR=none "
		       "(a kernel monitor would invalidate)\n");
		return T_EXIT_SKIP;
	}

	for (int i = 0; i < NSLOTS; i++) {
		unsigned s = seed + i * 7919u;

		pthread_mutex_init(&slots[i].lock, NULL);
		slots[i].kind = (enum kind)(i % K_NKINDS);
		slots[i].fd = -1;
		slot_fill(&slots[i], &s);
		note(&slots[i], "created");
	}
	printf("chaos: monitor %s, mode %s, %.0f s, seed %u, %d slots, "
	       "%d checkers, %d mutators, %d mallocers, multi-VMA moves %s, "
	       "guard pages %s\n", regcache_monitor_name(),
	       mode == M_BLIND ? "blind" : mode == M_EXPLICIT ? "explicit"
							  : "monitor",
	       seconds, seed, NSLOTS, NCHECKERS, NMUTATORS, NMALLOCERS,
	       multi_vma_move ? "on" : "off (kernel < 6.17)",
	       guards ? "on" : "off (no MADV_GUARD_INSTALL)");
	fflush(stdout);

	T_REQUIRE(pthread_create(&dog, NULL, watchdog, NULL) == 0);
	t0 = t_now();
	for (int i = 0; i < NCHECKERS; i++, nt++)
		T_REQUIRE(pthread_create(&th[nt], NULL, checker,
					 (void *)(uintptr_t)nt) == 0);
	for (int i = 0; i < NMUTATORS; i++, nt++)
		T_REQUIRE(pthread_create(&th[nt], NULL, mutator,
					 (void *)(uintptr_t)nt) == 0);
	for (int i = 0; i < NMALLOCERS; i++, nt++)
		T_REQUIRE(pthread_create(&th[nt], NULL, mallocer,
					 (void *)(uintptr_t)nt) == 0);
	while (t_now() - t0 < seconds && !atomic_load(&stop)) {
		usleep(100000);
		if (mode != M_BLIND && atomic_load(&stale) > 100)
			break;	/* enough evidence */
	}
	atomic_store(&stop, true);
	for (int i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	elapsed = t_now() - t0;

	for (int i = 0; i < NCACHES; i++) {
		regcache_get_stats(caches[i], &st);
		sum.hits += st.hits;
		sum.misses += st.misses;
		sum.uncached += st.uncached;
		sum.invalidations += st.invalidations;
		sum.overflows += st.overflows;
		sum.evictions += st.evictions;
		sum.reg_failures += st.reg_failures;
	}
	for (int i = 0; i < NSLOTS; i++) {
		unsigned s = seed;

		slot_release(&slots[i], &s);
		if (slots[i].fd >= 0)
			close(slots[i].fd);
	}
	for (int i = 0; i < NCACHES; i++) {
		regcache_destroy(caches[i]);
		io_uring_queue_exit(&rings[i]);
	}
	atomic_store(&finished, true);
	pthread_join(dog, NULL);

	printf("chaos: %.1f s: %lu checks (%.0f/s), %lu stale, %lu errors, "
	       "%lu changes, %lu mallocs\n", elapsed, atomic_load(&checks),
	       atomic_load(&checks) / elapsed, atomic_load(&stale),
	       atomic_load(&errors), atomic_load(&mutations),
	       atomic_load(&mallocs));
	gets = sum.hits + sum.misses + sum.uncached;
	printf("chaos: gets: %llu hits, %llu misses, %llu uncached, hit rate "
	       "%.1f%%; %llu invalidations, %llu \"everything\", %llu "
	       "evictions, %llu failed registrations\n",
	       (unsigned long long)sum.hits, (unsigned long long)sum.misses,
	       (unsigned long long)sum.uncached,
	       gets ? 100.0 * sum.hits / gets : 0.0,
	       (unsigned long long)sum.invalidations,
	       (unsigned long long)sum.overflows,
	       (unsigned long long)sum.evictions,
	       (unsigned long long)sum.reg_failures);
	if (atomic_load(&documented))
		printf("chaos: %lu multi-VMA mremap calls failed with EFAULT, "
		       "as docs/monitor-userfaultfd.md says this monitor "
		       "makes them\n", atomic_load(&documented));
	if (atomic_load(&checks) == 0) {
		fprintf(stderr, "chaos: FAIL: no check ran\n");
		return T_EXIT_FAIL;
	}
	if (mode == M_BLIND) {
		if (atomic_load(&stale) == 0) {
			fprintf(stderr, "chaos: FAIL: negative control: with "
				"nothing invalidating, the checker saw no stale "
				"byte, so it cannot see one\n");
			return T_EXIT_FAIL;
		}
		printf("chaos: negative control ok: the checker sees stale "
		       "registrations when nothing invalidates\n");
		/* Errors are expected here: a get that merges with a stale
		 * region may span what is now a hole (-EFAULT). */
		return T_EXIT_PASS;
	}
	if (atomic_load(&stale) || atomic_load(&errors)) {
		fprintf(stderr, "chaos: FAIL: %lu stale, %lu errors (seed %u)\n",
			atomic_load(&stale), atomic_load(&errors), seed);
		return T_EXIT_FAIL;
	}
	printf("chaos: PASS\n");
	return T_EXIT_PASS;
}
