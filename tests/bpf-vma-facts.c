/*
 * Description: eBPF monitor: a miss reuses what an earlier miss learned
 * about a VMA (private anonymous memory, nothing to subscribe to) only
 * while nothing changed the mappings there. A get in an anonymous mapping
 * is cached and teaches the monitor its VMA; an unrelated munmap elsewhere
 * keeps that knowledge (a second get there is cached too); then part of
 * the same VMA is replaced (MAP_FIXED) by a private mapping of a regular
 * file, which no monitor can watch. A get there must be served
 * pass-through, not cached on the strength of the old VMA. DMA oracle:
 * another process truncates the file, which throws the private pages away
 * without telling anyone; a get after that must reach the pages the
 * application now sees (a region cached on stale VMA facts would still
 * hold the old pages). Negative control: DMA through a registration held
 * across the truncation is not visible, so the truncation really
 * stranded the old pages.
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "helpers.h"

#define PAGES 16

static void truncate_in_child(int fd, size_t len)
{
	pid_t pid = fork();
	int status;

	T_REQUIRE(pid >= 0);
	if (pid == 0)	/* another tgid: none of its syscalls are ours */
		_exit(ftruncate(fd, 0) || ftruncate(fd, (off_t)len) ? 1 : 0);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static struct regcache_stats stats(struct regcache *c)
{
	struct regcache_stats st;

	regcache_get_stats(c, &st);
	return st;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	size_t page = (size_t)sysconf(_SC_PAGESIZE), half = PAGES / 2 * page;
	struct regcache_region *held, *r;
	struct regcache_stats before;
	struct io_uring ring;
	struct regcache *c;
	char path[256], *buf, *other, *file_part;
	int fd;

	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	buf = t_map(PAGES * page);
	other = t_map(page);
	memset(buf, 1, PAGES * page);

	/* Cached: the lookup finds private anonymous memory. */
	before = stats(c);
	T_REQUIRE(regcache_get(c, buf, page, 0, &r) == 0);
	T_CHECK(t_dma_visible(&ring, r, buf, page, 1));
	regcache_put(c, r);
	T_EXPECT_EQ(before.misses + 1, stats(c).misses);

	/* A change elsewhere moves the generation but not this VMA. */
	T_REQUIRE(munmap(other, page) == 0);
	before = stats(c);
	T_REQUIRE(regcache_get(c, buf + 2 * page, page, 0, &r) == 0);
	T_CHECK(t_dma_visible(&ring, r, buf + 2 * page, page, 2));
	regcache_put(c, r);
	T_EXPECT_EQ(before.misses + 1, stats(c).misses);
	T_EXPECT_EQ(before.uncached, stats(c).uncached);

	/* The second half of the same VMA becomes a private file mapping. */
	snprintf(path, sizeof(path), "%s/regcache-facts-XXXXXX",
		 tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	T_REQUIRE(fd >= 0);
	unlink(path);
	T_REQUIRE(ftruncate(fd, (off_t)half) == 0);
	file_part = mmap(buf + half, half, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_FIXED, fd, 0);
	T_REQUIRE(file_part == buf + half);
	memset(file_part, 0x5a, half);	/* every page a private copy */
	T_REQUIRE(fsync(fd) == 0);
	T_REQUIRE(posix_fadvise(fd, 0, (off_t)half, POSIX_FADV_DONTNEED) == 0);

	before = stats(c);
	T_REQUIRE(regcache_get(c, file_part, half, 0, &r) == 0);
	T_CHECK(t_dma_visible(&ring, r, file_part, half, 3));
	regcache_put(c, r);
	if (stats(c).misses != before.misses) {
		fprintf(stderr, "stale VMA facts: a private file mapping made "
			"over part of a known anonymous VMA was cached\n");
		t_failures++;
	}
	T_EXPECT_EQ(before.uncached + 1, stats(c).uncached);

	/* DMA oracle: the truncation strands any registration of the old
	 * private pages; a get after it must not be one. */
	T_REQUIRE(regcache_get(c, file_part, half, 0, &held) == 0);
	truncate_in_child(fd, half);
	if (t_dma_visible(&ring, held, file_part, half, 4)) {
		fprintf(stderr, "negative control failed: DMA through the "
			"registration held across the truncation is visible, "
			"so the truncation stranded nothing\n");
		t_failures++;
	}
	regcache_put(c, held);
	T_REQUIRE(regcache_get(c, file_part, half, 0, &r) == 0);
	if (!t_dma_visible(&ring, r, file_part, half, 5)) {
		fprintf(stderr, "stale: DMA after the truncation is not "
			"visible\n");
		t_failures++;
	} else {
		printf("ok: a mapping changed inside a known VMA is looked up "
		       "again\n");
	}
	regcache_put(c, r);

	/* The anonymous half is still cached (a hit, no new registration). */
	before = stats(c);
	T_REQUIRE(regcache_get(c, buf, page, 0, &r) == 0);
	T_CHECK(t_dma_visible(&ring, r, buf, page, 6));
	regcache_put(c, r);
	T_EXPECT_EQ(before.hits + 1, stats(c).hits);

	T_REQUIRE(munmap(buf, PAGES * page) == 0);
	close(fd);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
