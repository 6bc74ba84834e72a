/*
 * Description: eBPF monitor: pages of a shared file mapping (memfd, a tmpfs
 * file in /dev/shm, and a regular file in $TMPDIR or /tmp when the kernel
 * lets the device pin it) taken away
 * through the file rather than through the mapping: fallocate(PUNCH_HOLE)
 * and ftruncate(0) + ftruncate(len) by this process, and a hole punched by
 * ANOTHER process holding the same file (caught by the page-cache hook,
 * since no syscall of ours is involved). Each must invalidate the cached
 * region; the negative control proves the old registration is stale.
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "helpers.h"

#define LEN 65536

static void punch_in_child(int fd)
{
	pid_t pid = fork();
	int status;

	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		/* Another process: a different tgid, no hooks of ours. */
		_exit(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				0, LEN) ? 1 : 0);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void run(struct io_uring *ring, struct regcache *c, int fd,
		const char *kind)
{
	struct t_case k;
	char what[128];
	char *buf;

	T_REQUIRE(ftruncate(fd, LEN) == 0);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_REQUIRE(buf != MAP_FAILED);
	{
		struct regcache_region *r;
		int ret = regcache_get(c, buf, LEN, 0, &r);

		if (ret == -EFAULT && !strcmp(kind, "regular file")) {
			/* FOLL_LONGTERM refuses writable shared mappings of
			 * file systems that track dirty pages. */
			printf("%s: the device cannot pin it (EFAULT); "
			       "nothing to cache\n", kind);
			munmap(buf, LEN);
			return;
		}
		T_EXPECT_EQ(0, ret);
		regcache_put(c, r);
	}

	t_case_begin(&k, ring, c, buf, LEN);
	T_REQUIRE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			    LEN) == 0);
	snprintf(what, sizeof(what), "%s: fallocate(PUNCH_HOLE)", kind);
	t_case_end(&k, what, true);

	t_case_begin(&k, ring, c, buf, LEN);
	T_REQUIRE(ftruncate(fd, 0) == 0);
	T_REQUIRE(ftruncate(fd, LEN) == 0);
	snprintf(what, sizeof(what), "%s: ftruncate(0) + ftruncate(len)", kind);
	t_case_end(&k, what, true);

	t_case_begin(&k, ring, c, buf, LEN);
	punch_in_child(fd);
	snprintf(what, sizeof(what), "%s: hole punched by another process",
		 kind);
	t_case_end(&k, what, true);

	T_REQUIRE(munmap(buf, LEN) == 0);
}

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	char path[256];
	const char *tmp = getenv("TMPDIR");
	int fd;

	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	fd = memfd_create("regcache-test", MFD_CLOEXEC);
	T_REQUIRE(fd >= 0);
	run(&ring, c, fd, "memfd");
	close(fd);

	/* tmpfs: shmem pages like memfd, but a named file. */
	snprintf(path, sizeof(path), "/dev/shm/regcache-bpf-XXXXXX");
	fd = mkstemp(path);
	if (fd >= 0) {
		unlink(path);
		run(&ring, c, fd, "tmpfs file");
		close(fd);
	} else {
		printf("/dev/shm: %s; tmpfs file not tested\n",
		       strerror(errno));
	}

	snprintf(path, sizeof(path), "%s/regcache-bpf-XXXXXX",
		 tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd >= 0) {
		unlink(path);
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      0, 4096) == 0)
			run(&ring, c, fd, "regular file");
		else
			printf("%s: no hole punching on this file system (%s); "
			       "only memfd tested\n", path, strerror(errno));
		close(fd);
	}

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
