/* SPDX-License-Identifier: MIT */
/*
 * Description: pins the documented way the userfaultfd monitor changes the
 * application's mremap() (docs/monitor-userfaultfd.md, "What the
 * application sees"). The kernel refuses to move a range of several VMAs
 * when any of them is registered with a userfaultfd (Linux 6.17+ moves
 * such ranges otherwise), and a registered VMA does not merge with a new
 * unregistered neighbour, so:
 *  A. mremap(MAYMOVE|FIXED) of [registered VMA | other VMA] fails with
 *     EFAULT and moves nothing;
 *  B. mremap(MAYMOVE|FIXED) of [other VMA | registered VMA] fails with
 *     EFAULT after moving the first VMA;
 *  C. a mapping placed right after a registered one stays a VMA of its
 *     own, so an mremap() of both as one range fails with EFAULT.
 * Each case has a control on memory that no cache touched, where the same
 * calls succeed (A and B only on kernels that move multi-VMA ranges). If a
 * kernel or a new registration scheme changes any of this, this test
 * fails and the documentation must change with it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"

static size_t pg;
static struct regcache *cache;

/* The VMA of @addr from /proc/self/maps: its start, or 0 if unmapped. */
static uintptr_t vma_start_of(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long s, e;
	uintptr_t found = 0;
	char line[512];

	T_REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 &&
		    s <= (uintptr_t)addr && (uintptr_t)addr < e)
			found = s;
	fclose(f);
	return found;
}

static bool mapped(const void *addr)
{
	return vma_start_of(addr) != 0;
}

/* A free, page-aligned stretch of @n pages (reserved, then released). */
static char *hole(size_t n)
{
	char *p = mmap(NULL, n * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	T_REQUIRE(p != MAP_FAILED);
	munmap(p, n * pg);
	return p;
}

/* Two adjacent read-write pages that are two VMAs (MADV_DONTDUMP on the
 * second changes its flags), page i filled with 'a' + i. */
static char *two_vmas(void)
{
	char *p = t_map(2 * pg);

	memset(p, 'a', pg);
	memset(p + pg, 'b', pg);
	T_REQUIRE(madvise(p + pg, pg, MADV_DONTDUMP) == 0);
	T_REQUIRE(vma_start_of(p) != vma_start_of(p + pg));
	return p;
}

/* Cache [p, p + pg): its VMA is now registered with the userfaultfd. */
static void cache_page(char *p)
{
	struct regcache_region *r;

	T_REQUIRE(regcache_get(cache, p, pg, 0, &r) == 0);
	regcache_put(cache, r);
}

static void *move(char *p, size_t len, char *dst)
{
	return mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
}

/* Returns whether the kernel moves multi-VMA ranges at all. */
static bool control_multi_vma(void)
{
	char *p = two_vmas(), *dst = hole(2), *q;

	q = move(p, 2 * pg, dst);
	if (q == MAP_FAILED) {
		T_EXPECT_EQ(EFAULT, errno);
		munmap(p, 2 * pg);
		printf("control: this kernel does not move multi-VMA ranges "
		       "(Linux < 6.17): cases A and B are not checked\n");
		return false;
	}
	T_CHECK(q == dst && dst[0] == 'a' && dst[pg] == 'b' && !mapped(p));
	munmap(dst, 2 * pg);
	printf("control: a two-VMA range moved\n");
	return true;
}

static void case_a(void)
{
	char *p = two_vmas(), *dst = hole(2);

	cache_page(p);
	T_CHECK(move(p, 2 * pg, dst) == MAP_FAILED);
	T_EXPECT_EQ(EFAULT, errno);
	/* Nothing moved. */
	T_CHECK(mapped(p) && mapped(p + pg));
	T_CHECK(p[0] == 'a' && p[pg] == 'b');
	T_CHECK(!mapped(dst) && !mapped(dst + pg));
	munmap(p, 2 * pg);
	munmap(dst, 2 * pg);
	printf("A: [registered | other]: EFAULT, nothing moved\n");
}

static void case_b(void)
{
	char *p = two_vmas(), *dst = hole(2);

	cache_page(p + pg);
	T_CHECK(move(p, 2 * pg, dst) == MAP_FAILED);
	T_EXPECT_EQ(EFAULT, errno);
	/* The first VMA moved, the registered one did not. */
	T_CHECK(!mapped(p) && mapped(dst) && dst[0] == 'a');
	T_CHECK(mapped(p + pg) && p[pg] == 'b' && !mapped(dst + pg));
	munmap(p, 2 * pg);
	munmap(dst, 2 * pg);
	printf("B: [other | registered]: EFAULT after moving the first VMA\n");
}

/* A page mapped right after @p, with the same protection and flags. */
static char *map_after(char *p)
{
	char *q = mmap(p + pg, pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		       0);

	T_REQUIRE(q == p + pg);
	return q;
}

static void case_c(bool cached)
{
	char *p = hole(4), *q;

	T_REQUIRE(mmap(p, pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		       0) == p);
	memset(p, 'a', pg);
	if (cached)
		cache_page(p);
	map_after(p);
	if (!cached) {
		/* Control: the kernel merged the neighbours... */
		T_CHECK(vma_start_of(p) == vma_start_of(p + pg));
		/* ... so the pair grows as one mapping. */
		q = mremap(p, 2 * pg, 4 * pg, MREMAP_MAYMOVE);
		T_CHECK(q != MAP_FAILED && q[0] == 'a');
		if (q != MAP_FAILED)
			munmap(q, 4 * pg);
		printf("C control: adjacent mappings merge, mremap grows "
		       "them\n");
		return;
	}
	T_CHECK(vma_start_of(p) != vma_start_of(p + pg));
	T_CHECK(mremap(p, 2 * pg, 4 * pg, MREMAP_MAYMOVE) == MAP_FAILED);
	T_EXPECT_EQ(EFAULT, errno);
	T_CHECK(p[0] == 'a');
	munmap(p, 2 * pg);
	printf("C: a registered mapping does not merge with its new "
	       "neighbour; mremap of both: EFAULT\n");
}

int main(void)
{
	struct io_uring ring;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	t_ring_init(&ring);
	cache = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	/* The cache maps its first slab of regions at its first miss: let
	 * that happen now, not between a case's hole() and its checks that
	 * nothing is mapped there. */
	cache_page(t_map(pg));

	if (control_multi_vma()) {
		case_a();
		case_b();
	}
	case_c(false);
	case_c(true);
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
