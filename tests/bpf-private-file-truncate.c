/*
 * Description: eBPF monitor: a MAP_PRIVATE mapping of a regular file whose
 * copy-on-write pages are thrown away when ANOTHER process truncates the
 * file, while the page cache holds none of the file's pages (so no page
 * leaves the page cache and the page-cache hook hears nothing). A get after
 * the truncation must reach the pages the application now sees: DMA through
 * it is visible. Negative control: DMA through a registration held across
 * the truncation is not visible, so the truncation really stranded the old
 * pages.
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "helpers.h"

#define LEN 65536

static void truncate_in_child(int fd)
{
	pid_t pid = fork();
	int status;

	T_REQUIRE(pid >= 0);
	if (pid == 0)	/* another tgid: none of its syscalls are ours */
		_exit(ftruncate(fd, 0) || ftruncate(fd, LEN) ? 1 : 0);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct regcache_region *held, *r;
	struct io_uring ring;
	struct regcache *c;
	char path[256];
	char *buf;
	int fd;

	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	snprintf(path, sizeof(path), "%s/regcache-private-XXXXXX",
		 tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	T_REQUIRE(fd >= 0);
	unlink(path);
	T_REQUIRE(ftruncate(fd, LEN) == 0);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	T_REQUIRE(buf != MAP_FAILED);
	memset(buf, 0x5a, LEN);	/* every page is now a private copy */
	T_REQUIRE(fsync(fd) == 0);
	T_REQUIRE(posix_fadvise(fd, 0, LEN, POSIX_FADV_DONTNEED) == 0);

	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 1));
	regcache_put(c, r);
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &held) == 0);

	truncate_in_child(fd);

	if (t_dma_visible(&ring, held, buf, LEN, 2)) {
		fprintf(stderr, "negative control failed: DMA through the "
			"registration held across the truncation is visible, "
			"so the truncation stranded nothing\n");
		t_failures++;
	}
	regcache_put(c, held);
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	if (!t_dma_visible(&ring, r, buf, LEN, 3)) {
		fprintf(stderr, "stale: DMA after another process truncated "
			"the privately mapped file is not visible\n");
		t_failures++;
	} else {
		printf("ok: private file mapping truncated by another "
		       "process\n");
	}
	regcache_put(c, r);

	T_REQUIRE(munmap(buf, LEN) == 0);
	close(fd);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
