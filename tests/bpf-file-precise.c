/*
 * Description: eBPF monitor: when pages of a watched file are taken away
 * through the file (a hole punched by another process, ftruncate or
 * fallocate by this one, MADV_REMOVE through another mapping), exactly our
 * addresses of those pages are invalidated, under every mapping of the
 * file, and nothing else. One memfd is mapped twice at different offsets
 * (so the two mappings put the same page at unrelated addresses); for each
 * change a cached region over the removed pages in each mapping must be
 * invalidated (DMA oracle: the held registration is stale, the next get is
 * a miss whose DMA is visible), while a region over pages the change did
 * not touch stays cached (a hit with visible DMA) and no "everything"
 * invalidation happens (stats.overflows). With a wrong address for either
 * mapping a stale region would be served; with "everything" the untouched
 * region would miss. A file mapped in more places than the programs
 * record falls back to "everything", and every region is still
 * invalidated.
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "helpers.h"

#define PG 4096
#define FILE_PAGES 64
#define SPAN 4		/* pages per region */

static struct io_uring ring;
static struct regcache *cache;

static int new_memfd(void)
{
	int fd = memfd_create("bpf-file-precise", MFD_CLOEXEC);

	T_REQUIRE(fd >= 0);
	T_REQUIRE(ftruncate(fd, FILE_PAGES * PG) == 0);
	return fd;
}

/* @npages of @fd from file page @pgoff, at an address of its own. */
static char *map_at(int fd, size_t pgoff, size_t npages)
{
	char *p = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, (off_t)(pgoff * PG));

	T_REQUIRE(p != MAP_FAILED);
	memset(p, 0x5a, npages * PG);
	return p;
}

static uint64_t overflows(void)
{
	struct regcache_stats st;

	regcache_get_stats(cache, &st);
	return st.overflows;
}

/* Cached before the change, and must still be a hit after it. */
static void cache_region(char *buf)
{
	struct regcache_region *r;

	T_REQUIRE(regcache_get(cache, buf, SPAN * PG, 0, &r) == 0);
	regcache_put(cache, r);
}

static void expect_hit(char *buf, const char *what)
{
	struct regcache_stats a, b;
	struct regcache_region *r;

	regcache_get_stats(cache, &a);
	T_REQUIRE(regcache_get(cache, buf, SPAN * PG, 0, &r) == 0);
	regcache_get_stats(cache, &b);
	if (b.hits != a.hits + 1)
		fprintf(stderr, "%s: a region over pages the change did not "
			"touch was invalidated\n", what);
	T_EXPECT_EQ(a.hits + 1, b.hits);
	T_CHECK(t_dma_visible(&ring, r, buf, SPAN * PG, 9));
	regcache_put(cache, r);
}

static void punch_in_child(int fd, size_t pgoff, size_t npages)
{
	pid_t parent = getpid(), pid = fork();
	int status;

	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		t_die_with_parent(parent);
		_exit(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				(off_t)(pgoff * PG), (off_t)(npages * PG)) ? 1
									     : 0);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

enum change { PUNCH_OTHER, FTRUNCATE_SELF, FALLOCATE_SELF, MADV_REMOVE_B };

/*
 * Mapping A holds file pages [0, 32) at a, mapping B file pages [8, 40) at
 * b (b + i * PG is file page 8 + i). The change removes file pages
 * [gone, gone_end); the held regions cover file pages [gone, gone + SPAN)
 * through A and through B; the untouched ones cover file pages [40 - ...]
 * outside the removed range.
 */
static void run(enum change ch, const char *what)
{
	int fd = new_memfd();
	char *a = map_at(fd, 0, 32), *b = map_at(fd, 8, 32);
	size_t gone = 12, gone_end;
	struct t_case ka, kb;
	uint64_t ov;
	char *keep_a = a + 2 * PG;	/* file pages 2..5 */
	char *keep_b = b + 26 * PG;	/* file pages 34..37 */

	switch (ch) {
	case FTRUNCATE_SELF:
		gone_end = FILE_PAGES;	/* ftruncate to 12 pages, back */
		break;
	default:
		gone_end = 20;
	}
	cache_region(keep_a);
	if (ch != FTRUNCATE_SELF)
		cache_region(keep_b);
	t_case_begin(&ka, &ring, cache, a + gone * PG, SPAN * PG);
	t_case_begin(&kb, &ring, cache, b + (gone - 8) * PG, SPAN * PG);
	/* t_case_end() compares the cache's hit count with the one at
	 * begin: take it once both cases hold their regions. */
	regcache_get_stats(cache, &ka.before);
	kb.before = ka.before;
	ov = overflows();

	switch (ch) {
	case PUNCH_OTHER:
		punch_in_child(fd, gone, gone_end - gone);
		break;
	case FTRUNCATE_SELF:
		T_REQUIRE(ftruncate(fd, (off_t)(gone * PG)) == 0);
		T_REQUIRE(ftruncate(fd, FILE_PAGES * PG) == 0);
		break;
	case FALLOCATE_SELF:
		T_REQUIRE(fallocate(fd, FALLOC_FL_PUNCH_HOLE |
					FALLOC_FL_KEEP_SIZE,
				    (off_t)(gone * PG),
				    (off_t)((gone_end - gone) * PG)) == 0);
		break;
	case MADV_REMOVE_B:
		/* Through B; A's pages of the same file go too. */
		T_REQUIRE(madvise(b + (gone - 8) * PG, (gone_end - gone) * PG,
				  MADV_REMOVE) == 0);
		break;
	}
	memset(a, 0x5b, 32 * PG);
	memset(b, 0x5b, 32 * PG);

	{
		char w[160];

		snprintf(w, sizeof(w), "%s: mapping A", what);
		t_case_end(&ka, w, true);
		snprintf(w, sizeof(w), "%s: mapping B", what);
		t_case_end(&kb, w, true);
	}
	expect_hit(keep_a, what);
	if (ch != FTRUNCATE_SELF)
		expect_hit(keep_b, what);
	if (overflows() != ov)
		fprintf(stderr, "%s: invalidated everything\n", what);
	T_EXPECT_EQ(ov, overflows());
	printf("%s: both mappings invalidated, untouched pages still cached, "
	       "no \"everything\"\n", what);
	munmap(a, 32 * PG);
	munmap(b, 32 * PG);
	close(fd);
}

/* Six mappings at six places: more than the programs record. */
static void run_many(void)
{
	int fd = new_memfd();
	struct t_case k[6];
	char *m[6];
	uint64_t ov;

	for (int i = 0; i < 6; i++) {
		m[i] = map_at(fd, (size_t)i, 32);
		/* File pages 20..23 in every mapping. */
		t_case_begin(&k[i], &ring, cache, m[i] + (20 - i) * PG,
			     SPAN * PG);
	}
	regcache_get_stats(cache, &k[0].before);
	for (int i = 1; i < 6; i++)
		k[i].before = k[0].before;
	ov = overflows();
	punch_in_child(fd, 20, SPAN);
	for (int i = 0; i < 6; i++) {
		char w[80];

		memset(m[i], 0x5c, 32 * PG);
		snprintf(w, sizeof(w), "six mappings: mapping %d", i);
		t_case_end(&k[i], w, true);
		munmap(m[i], 32 * PG);
	}
	T_CHECK(overflows() > ov);
	printf("six mappings: every one invalidated (through \"everything\")\n");
	close(fd);
}

int main(void)
{
	t_monitor_only("bpf");
	t_monitor_skip_unavailable("bpf");
	t_ring_init(&ring);
	cache = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	run(PUNCH_OTHER, "hole punched by another process");
	run(FTRUNCATE_SELF, "ftruncate by this process");
	run(FALLOCATE_SELF, "fallocate(PUNCH_HOLE) by this process");
	run(MADV_REMOVE_B, "MADV_REMOVE through the other mapping");
	run_many();

	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
