/*
 * Description: eBPF monitor: a shared mapping of a file on overlayfs
 * (every container image) whose upper layer is tmpfs, so the device may pin
 * it. /proc/self/maps and PROCMAP_QUERY report the overlay inode, but the
 * page cache belongs to the real tmpfs inode, which is what the page-cache
 * hook sees. A hole punched by another process must not leave a stale
 * cached region: either the region is invalidated or the mapping is served
 * pass-through (uncached). Negative control: the old registration is
 * really stale.
 */
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "helpers.h"

#define LEN 65536

int main(void)
{
	char base[] = "/tmp/regcache-ovl-XXXXXX", path[512], opts[1024];
	struct io_uring ring;
	struct regcache *c;
	struct regcache_region *r;
	struct t_case k;
	int fd, status;
	char *buf;
	pid_t pid;

	t_monitor_only("bpf");
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		printf("SKIP: no private mount namespace: %s\n",
		       strerror(errno));
		return T_EXIT_SKIP;
	}
	T_REQUIRE(mkdtemp(base));
	T_REQUIRE(mount("tmpfs", base, "tmpfs", 0, NULL) == 0);
	for (const char *d = "lower\0upper\0work\0merged\0"; *d;
	     d += strlen(d) + 1) {
		snprintf(path, sizeof(path), "%s/%s", base, d);
		T_REQUIRE(mkdir(path, 0700) == 0);
	}
	snprintf(opts, sizeof(opts),
		 "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work", base,
		 base, base);
	snprintf(path, sizeof(path), "%s/merged", base);
	if (mount("overlay", path, "overlay", 0, opts)) {
		printf("SKIP: overlayfs: %s\n", strerror(errno));
		return T_EXIT_SKIP;
	}
	snprintf(path, sizeof(path), "%s/merged/f", base);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	T_REQUIRE(fd >= 0 && ftruncate(fd, LEN) == 0);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_REQUIRE(buf != MAP_FAILED);

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	{
		struct regcache_stats st;

		T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
		regcache_put(c, r);
		regcache_get_stats(c, &st);
		if (st.uncached) {
			printf("ok: overlayfs mapping served uncached\n");
			goto out;
		}
	}

	t_case_begin(&k, &ring, c, buf, LEN);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		/* Another process, through its own fd of the same file. */
		int cfd = open(path, O_RDWR);

		_exit(cfd < 0 || fallocate(cfd, FALLOC_FL_PUNCH_HOLE |
						  FALLOC_FL_KEEP_SIZE, 0, LEN));
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	t_case_end(&k, "overlayfs (tmpfs upper): hole punched by another "
		       "process", true);
out:
	munmap(buf, LEN);
	close(fd);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	snprintf(path, sizeof(path), "%s/merged", base);
	umount2(path, MNT_DETACH);
	umount2(base, MNT_DETACH);
	rmdir(base);
	return t_exit_status();
}
