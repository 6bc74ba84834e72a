/* SPDX-License-Identifier: MIT */
/*
 * Description: libfabric's real MR cache (ofi_mr_cache from Debian's static
 * libfabric 1.17.0) never serves a stale registration once regcache's
 * monitor is imported into it with fi_open("mr_cache") + fi_import_fid().
 *
 * No provider that caches host memory (verbs, efa) runs without RDMA
 * hardware, so this drives the cache directly, exactly as those providers
 * do: ofi_mr_cache_init() with the process's default monitor,
 * ofi_mr_cache_search() per lookup (valid() on every hit, subscribe() per
 * new entry), ofi_mr_cache_delete() per release. The provider's add_region
 * registers io_uring fixed buffers, and READ_FIXED through them proves with
 * data whether the application's pages are the pinned ones.
 *
 * Argument (the monitor under test):
 *   memhooks     libfabric's libc hooks: stale registrations after raw
 *                syscalls and io_uring (negative control)
 *   userfaultfd  libfabric's userfaultfd monitor: results reported; it
 *                must see what it is built to see (libc and raw munmap)
 *   bridge       regcache's monitor, imported by the bridge's constructor
 *   bridge-call  the same, imported by regcache_fabric_import()
 *   override     FI_MR_CACHE_MONITOR is set: the bridge must refuse to
 *                import and say so
 *   bench        numbers, not a property: a hit (search + delete) in a
 *                cache on libfabric's memhooks monitor and in one on the
 *                bridge, in the same run (docs/bridges.md)
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>

#include <regcache/fabric.h>

#include "helpers.h"

/* ------------------------------------------------------------------------
 * libfabric 1.17.0's internal cache ABI (include/ofi_mr.h, ofi_util.h at
 * tag v1.17.0), as laid out in Debian's build; checked below against the
 * offsets its code uses.
 * ---------------------------------------------------------------------- */

struct lf_list { void *next, *prev; };

struct lf_mr_info {
	struct iovec iov;
	int iface;		/* enum fi_hmem_iface: FI_HMEM_SYSTEM = 0 */
	uint64_t device;
	void *ipc_mapped_addr;
	uint8_t ipc_handle[64];
};

struct lf_mr_entry {
	struct lf_mr_info info;
	void *node;
	int use_cnt;
	struct lf_list list_entry;
	uint64_t hmem_info;
	void *handle;		/* data[]: the provider's part */
};

struct lf_mr_cache {
	void *domain;
	void *monitors[6];
	struct lf_list notify_entries[6];
	size_t entry_data_size;
	struct {
		void *root;
		struct { void *left, *right, *parent; int color; void *data; } sentinel;
		void *free_list;
		void *compare;
	} tree;
	struct lf_list lru_list, dead_region_list;
	pthread_mutex_t lock;
	size_t cached_cnt, cached_size, uncached_cnt, uncached_size;
	size_t search_cnt, delete_cnt, hit_cnt, notify_cnt;
	void *entry_pool;
	int (*add_region)(struct lf_mr_cache *cache, struct lf_mr_entry *entry);
	void (*delete_region)(struct lf_mr_cache *cache, struct lf_mr_entry *entry);
};

_Static_assert(offsetof(struct lf_mr_entry, node) == 0x68, "1.17 entry");
_Static_assert(offsetof(struct lf_mr_entry, use_cnt) == 0x70, "1.17 entry");
_Static_assert(offsetof(struct lf_mr_cache, tree) == 0xa0, "1.17 cache");
_Static_assert(offsetof(struct lf_mr_cache, lock) == 0x100, "1.17 cache");
_Static_assert(offsetof(struct lf_mr_cache, delete_cnt) == 0x150, "1.17 cache");
_Static_assert(offsetof(struct lf_mr_cache, add_region) == 0x170, "1.17 cache");

/* struct util_domain: only ref (0x90) and prov (0x98) are used. */
#define LF_DOMAIN_REF 0x90
#define LF_DOMAIN_PROV 0x98

int ofi_mr_cache_init(void *domain, void **monitors, struct lf_mr_cache *c);
void ofi_mr_cache_cleanup(struct lf_mr_cache *c);
int ofi_mr_cache_search(struct lf_mr_cache *c, const struct lf_mr_info *info,
			struct lf_mr_entry **entry);
void ofi_mr_cache_delete(struct lf_mr_cache *c, struct lf_mr_entry *entry);
extern void *default_monitor, *memhooks_monitor, *uffd_monitor;
extern char core_prov[];

/* ------------------------------------------------------------------------
 * The device
 * ---------------------------------------------------------------------- */

static struct t_registrar treg;
static struct lf_mr_cache cache;
static size_t page;

static int add_region(struct lf_mr_cache *c, struct lf_mr_entry *e)
{
	(void)c;
	return t_registrar_ops.reg(&treg, e->info.iov.iov_base,
				   e->info.iov.iov_len, 0, &e->handle);
}

static void delete_region(struct lf_mr_cache *c, struct lf_mr_entry *e)
{
	(void)c;
	t_registrar_ops.dereg(&treg, e->handle);
}

static bool dma_visible(void *handle, void *buf, size_t len, unsigned seed)
{
	static unsigned char src[65536];
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int fds[2], ret;

	T_REQUIRE(len <= sizeof(src) && pipe(fds) == 0);
	fcntl(fds[0], F_SETPIPE_SZ, 1 << 17);
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(seed * 131 + i * 7 + 1);
	T_REQUIRE(write(fds[1], src, len) == (ssize_t)len);
	memset(buf, 0, len);
	sqe = io_uring_get_sqe(&treg.ring);
	io_uring_prep_read_fixed(sqe, fds[0], buf, len, 0,
				 (int)((uintptr_t)handle - 1));
	T_REQUIRE(io_uring_submit(&treg.ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(&treg.ring, &cqe) == 0);
	ret = cqe->res;
	io_uring_cqe_seen(&treg.ring, cqe);
	close(fds[0]);
	close(fds[1]);
	T_REQUIRE(ret == (int)len);
	return !memcmp(buf, src, len);
}

/* ns per hit (search + delete of a cached range) in @c. */
static double hits(struct lf_mr_cache *c, char *buf, size_t len, long n)
{
	struct lf_mr_info info = { .iov = { buf, len } };
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		struct lf_mr_entry *e;

		if (ofi_mr_cache_search(c, &info, &e))
			exit(T_EXIT_FAIL);
		ofi_mr_cache_delete(c, e);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

/* Two caches in one process: libfabric's memhooks monitor, and the bridge. */
static int bench(void *domain, void *bridged)
{
	static struct lf_mr_cache alone;
	void *monitors[6] = { memhooks_monitor };
	double a[11], b[11], ratio[11];
	long n = T_SCALE(200000);
	char *buf = t_map(1 << 20);

	memset(buf, 1, 1 << 20);
	alone.entry_data_size = sizeof(void *);
	alone.add_region = add_region;
	alone.delete_region = delete_region;
	T_REQUIRE(ofi_mr_cache_init(domain, monitors, &alone) == 0);
	hits(&alone, buf, 1 << 20, 1000);
	hits(&cache, buf, 1 << 20, 1000);
	for (int r = 0; r < 11; r++) {
		a[r] = hits(&alone, buf, 1 << 20, n);
		b[r] = hits(&cache, buf, 1 << 20, n);
		ratio[r] = b[r] / a[r];
	}
	printf("libfabric 1.17 MR cache hit (search+delete, 1 MiB, 1 thread), "
	       "median of 11 rounds of %ld:\n"
	       "  libfabric's memhooks monitor %6.1f ns\n"
	       "  regcache bridge (%s)%*s %6.1f ns\n"
	       "  ratio %.2f (median of per-round ratios)\n", n,
	       median(a, 11), regcache_monitor_name(),
	       (int)(10 - strlen(regcache_monitor_name())), "", median(b, 11),
	       median(ratio, 11));
	(void)bridged;
	ofi_mr_cache_cleanup(&alone);
	return T_EXIT_PASS;
}

static bool lookup_visible(void *buf, size_t len, unsigned seed)
{
	struct lf_mr_info info = { .iov = { buf, len } };
	struct lf_mr_entry *e;
	bool ok;
	int ret = ofi_mr_cache_search(&cache, &info, &e);

	if (ret) {
		fprintf(stderr, "ofi_mr_cache_search: %d\n", ret);
		exit(T_EXIT_FAIL);
	}
	ok = dma_visible(e->handle, buf, len, seed);
	ofi_mr_cache_delete(&cache, e);
	return ok;
}

static char *map_at(void *hint, size_t len)
{
	char *p = mmap(hint, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS |
			       (hint ? MAP_FIXED_NOREPLACE : 0), -1, 0);

	T_REQUIRE(p != MAP_FAILED && (!hint || p == hint));
	memset(p, 0x5a, len);
	return p;
}

static int uring_dontneed(void *addr, size_t len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&treg.ring);
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_prep_madvise(sqe, addr, (off_t)len, MADV_DONTNEED);
	T_REQUIRE(io_uring_submit(&treg.ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(&treg.ring, &cqe) == 0);
	ret = cqe->res;
	io_uring_cqe_seen(&treg.ring, cqe);
	return ret;
}

enum change { LIBC_MUNMAP, RAW_MUNMAP, RAW_MREMAP, RAW_DONTNEED,
	      URING_DONTNEED, FREE_MMAPPED, NCHANGES };
static const char *const change_name[] = {
	"libc munmap", "raw munmap", "raw mremap", "raw MADV_DONTNEED",
	"io_uring MADV_DONTNEED", "free of an mmap-served block",
};

/* 1 if the lookup after the change was stale, 0 if fresh, -1 if the case
 * could not be set up (malloc moved). */
static int scenario(enum change what)
{
	size_t len = 16 * page;
	char *buf, *other = NULL;
	bool stale;

	buf = what == FREE_MMAPPED ? malloc(1 << 20) : map_at(NULL, len);
	T_REQUIRE(buf);
	memset(buf, 1, len);
	T_CHECK(lookup_visible(buf, len, 1));
	T_CHECK(lookup_visible(buf, len, 2));
	switch (what) {
	case LIBC_MUNMAP:
		T_REQUIRE(munmap(buf, len) == 0);
		map_at(buf, len);
		break;
	case RAW_MUNMAP:
		T_REQUIRE(syscall(SYS_munmap, buf, len) == 0);
		map_at(buf, len);
		break;
	case RAW_MREMAP:
		other = map_at(NULL, len);
		T_REQUIRE(syscall(SYS_munmap, other, len) == 0);
		T_REQUIRE((char *)syscall(SYS_mremap, buf, len, len,
					  MREMAP_MAYMOVE | MREMAP_FIXED,
					  other) == other);
		map_at(buf, len);
		break;
	case RAW_DONTNEED:
		T_REQUIRE(syscall(SYS_madvise, buf, len, MADV_DONTNEED) == 0);
		break;
	case URING_DONTNEED:
		T_REQUIRE(uring_dontneed(buf, len) == 0);
		break;
	case FREE_MMAPPED: {
		char *again;

		free(buf);
		again = malloc(1 << 20);
		T_REQUIRE(again);
		if (again != buf) {
			fprintf(stderr, "  %-30s (malloc moved: proves "
				"nothing)\n", change_name[what]);
			free(again);
			return -1;
		}
		break;
	}
	default:
		break;
	}
	stale = !lookup_visible(buf, len, 3);
	fprintf(stderr, "  %-30s %s\n", change_name[what],
		stale ? "STALE registration" : "fresh registration");
	if (what == FREE_MMAPPED)
		free(buf);
	else
		munmap(buf, len);
	if (other)
		munmap(other, len);
	return stale;
}

/* The cross-thread race (see bridge-ucx.c): another thread replaces the
 * pages with a raw mmap(MAP_FIXED); a lookup counts only if no change was in
 * progress around it. */
static _Atomic unsigned long change_seq;
static _Atomic bool race_done;
static char *race_buf;
static size_t race_len;

static void *changer(void *arg)
{
	(void)arg;
	while (!atomic_load(&race_done)) {
		atomic_fetch_add(&change_seq, 1);
		T_REQUIRE((char *)syscall(SYS_mmap, race_buf, race_len,
					  PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
					  -1, 0) == race_buf);
		atomic_fetch_add(&change_seq, 1);
		for (volatile int spin = 0; spin < 20000; spin++)
			;
	}
	return NULL;
}

static unsigned long race(unsigned long lookups, unsigned long *checked)
{
	unsigned long stale = 0, seed = 10;
	time_t until = time(NULL) + 10;
	pthread_t t;

	race_len = 4 * page;
	race_buf = map_at(NULL, race_len);
	T_CHECK(lookup_visible(race_buf, race_len, 4));
	T_REQUIRE(pthread_create(&t, NULL, changer, NULL) == 0);
	*checked = 0;
	while (*checked < lookups && time(NULL) < until) {
		unsigned long s1 = atomic_load(&change_seq);
		struct lf_mr_info info = { .iov = { race_buf, race_len } };
		struct lf_mr_entry *e;
		bool ok;

		if (s1 & 1)
			continue;
		if (ofi_mr_cache_search(&cache, &info, &e))
			continue;
		ok = dma_visible(e->handle, race_buf, race_len, (unsigned)seed++);
		ofi_mr_cache_delete(&cache, e);
		if (atomic_load(&change_seq) != s1)
			continue;
		(*checked)++;
		stale += !ok;
	}
	atomic_store(&race_done, true);
	pthread_join(t, NULL);
	munmap(race_buf, race_len);
	return stale;
}

int main(int argc, char **argv)
{
	int (*import)(void) = regcache_fabric_import;
	int (*stats)(unsigned long *) = regcache_fabric_bridge_stats;
	const char *mode = argc > 1 ? argv[1] : "bridge";
	bool bridge = !strncmp(mode, "bridge", 6) || !strcmp(mode, "bench");
	static _Alignas(64) char domain[4096];
	void *monitors[6] = { 0 };
	struct fi_info *info = NULL;
	struct regcache *c;
	unsigned long stale_by[NCHANGES] = { 0 }, race_stale, checked, st[3];
	int ret;

	page = (size_t)sysconf(_SC_PAGESIZE);
	t_registrar_init(&treg, 4096);
	c = t_registrar_cache(&treg, 0, 0, 0);
	if (bridge || !strcmp(mode, "override"))
		t_monitor_require();
	if (!strcmp(mode, "bridge-call") || !strcmp(mode, "bench")) {
		T_REQUIRE(import);
		ret = import();
		if (ret) {
			fprintf(stderr, "regcache_fabric_import: %s\n", strerror(-ret));
			return T_EXIT_FAIL;
		}
	}
	/* fi_ini(): the providers and the monitors' settings. */
	fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info);
	fi_freeinfo(info);
	if (!strcmp(mode, "override")) {
		/* The constructor saw FI_MR_CACHE_MONITOR and stood back. */
		T_CHECK(stats && !stats(st));
		T_EXPECT_EQ(-EPERM, import());
		monitors[0] = default_monitor;
		T_CHECK(default_monitor == memhooks_monitor ||
			default_monitor == uffd_monitor);
	} else if (bridge) {
		T_REQUIRE(stats);
		T_CHECK(stats(st) == 1);
		monitors[0] = default_monitor;
		T_CHECK(default_monitor != memhooks_monitor &&
			default_monitor != uffd_monitor && default_monitor);
	} else {
		monitors[0] = !strcmp(mode, "memhooks") ? memhooks_monitor :
							  uffd_monitor;
	}
	*(const void **)(domain + LF_DOMAIN_PROV) = core_prov;
	cache.entry_data_size = sizeof(void *);
	cache.add_region = add_region;
	cache.delete_region = delete_region;
	ret = ofi_mr_cache_init(domain, monitors, &cache);
	if (ret) {
		fprintf(stderr, "ofi_mr_cache_init with %s: %d%s\n", mode, ret,
			!strcmp(mode, "userfaultfd") ? " (no userfaultfd here)" : "");
		return !strcmp(mode, "userfaultfd") ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	fprintf(stderr, "libfabric 1.17 MR cache, monitor: %s; regcache "
		"monitor %s\n", mode, regcache_monitor_name());
	if (!strcmp(mode, "bench")) {
		ret = bench(domain, monitors[0]);
		ofi_mr_cache_cleanup(&cache);
		return ret;
	}

	for (int k = 0; k < NCHANGES; k++) {
		int r = scenario(k);

		stale_by[k] = r > 0;
	}
	if (!strcmp(mode, "userfaultfd")) {
		/* Measured: libfabric 1.17's userfaultfd monitor registers
		 * ranges in MISSING mode and never resolves page faults, so
		 * the first fault on fresh pages of a registered range blocks
		 * its thread forever. The race faults on every change. */
		fprintf(stderr, "  cross-thread race: not run (libfabric's "
			"userfaultfd monitor blocks page faults: it hangs)\n");
		race_stale = 0;
		checked = 1;
	} else {
		race_stale = race(T_SCALE(5000), &checked);
		fprintf(stderr, "  cross-thread race: %lu stale of %lu "
			"checked lookups\n", race_stale, checked);
	}
	T_CHECK(checked > 0);
	if (stats && stats(st))
		fprintf(stderr, "  bridge: %lu notifies, %lu subscriptions "
			"refused, %lu hits found invalid\n", st[0], st[1], st[2]);

	if (bridge) {
		for (int k = 0; k < NCHANGES; k++)
			T_EXPECT_EQ(0, stale_by[k]);
		T_EXPECT_EQ(0, race_stale);
		T_CHECK(st[2] > 0);	/* valid() did the work */
	} else if (!strcmp(mode, "userfaultfd")) {
		/* What uffd is built to see, single-threaded. */
		T_EXPECT_EQ(0, stale_by[LIBC_MUNMAP]);
		T_EXPECT_EQ(0, stale_by[RAW_MUNMAP]);
	} else {
		/* memhooks (also when FI_MR_CACHE_MONITOR overrides): libc
		 * calls are seen, raw syscalls and io_uring are not. */
		if (default_monitor == memhooks_monitor || !strcmp(mode, "memhooks")) {
			T_EXPECT_EQ(0, stale_by[LIBC_MUNMAP]);
			T_EXPECT_EQ(1, stale_by[RAW_MUNMAP]);
			T_EXPECT_EQ(1, stale_by[RAW_DONTNEED]);
			T_EXPECT_EQ(1, stale_by[URING_DONTNEED]);
			T_CHECK(race_stale > 0);
		}
	}
	ofi_mr_cache_cleanup(&cache);
	regcache_destroy(c);
	t_registrar_fini(&treg);
	return t_exit_status();
}
