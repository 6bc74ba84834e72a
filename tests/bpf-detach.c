/*
 * Description: eBPF monitor lifetime, checked in the kernel's own lists of
 * BPF programs and links: the first cache attaches the monitor's programs;
 * a forked child that uses regcache loads its own set and, when it exits,
 * leaves the parent's attached and working; a forked child that never
 * calls regcache again does not keep the parent's programs alive; and when
 * the last cache is destroyed, none of the programs or links exist any
 * more (syscall tracepoints would otherwise tax every process).
 */
#include <bpf/bpf.h>
#include <dirent.h>
#include <sys/wait.h>

#include "helpers.h"

#define LEN 16384
#define MAXIDS 4096

struct ids {
	unsigned n;
	__u32 id[MAXIDS];
};

/* The programs and links this process holds, found through its own fds
 * (/proc/self/fd -> anon_inode:bpf-prog / bpf_link), so that other
 * processes loading the same programs at the same time do not count.
 * Only programs named rc_* (src/monitor/bpf/rc_monitor.bpf.c). */
static bool prog_is_ours(__u32 id)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);
	bool ours;

	if (fd < 0)
		return false;
	ours = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
	       !strncmp(info.name, "rc_", 3);
	close(fd);
	return ours;
}

static void list_held(struct ids *s, bool links)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	T_REQUIRE(d);
	s->n = 0;
	while ((e = readdir(d))) {
		char path[300], target[64];
		ssize_t n;
		int fd = atoi(e->d_name);

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (links && !strcmp(target, "anon_inode:bpf_link")) {
			struct bpf_link_info info = { 0 };
			__u32 len = sizeof(info);

			if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
			    prog_is_ours(info.prog_id) && s->n < MAXIDS)
				s->id[s->n++] = info.id;
		} else if (!links && !strcmp(target, "anon_inode:bpf-prog")) {
			struct bpf_prog_info info = { 0 };
			__u32 len = sizeof(info);

			if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
			    !strncmp(info.name, "rc_", 3) && s->n < MAXIDS)
				s->id[s->n++] = info.id;
		}
	}
	closedir(d);
}

/* Does the kernel still list this program / link? */
static bool exists(__u32 id, bool links)
{
	int fd = links ? bpf_link_get_fd_by_id(id) : bpf_prog_get_fd_by_id(id);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static bool has(const struct ids *s, __u32 id)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return true;
	return false;
}

static unsigned still_present(const struct ids *mine, bool links)
{
	unsigned n = 0;

	for (unsigned i = 0; i < mine->n; i++)
		n += exists(mine->id[i], links);
	return n;
}

/* Links go at once; a program is freed after an RCU grace period (tasks
 * trace RCU for syscall tracepoints), so wait for that, bounded. */
static unsigned settled(const struct ids *mine, bool links)
{
	unsigned n = still_present(mine, links);

	for (int i = 0; n && i < 1000; i++) {
		usleep(10000);
		n = still_present(mine, links);
	}
	return n;
}

static bool munmap_case(struct io_uring *ring, struct regcache *c,
			const char *what)
{
	struct t_case k;
	char *buf = t_map(LEN);
	int failures = t_failures;

	t_case_begin(&k, ring, c, buf, LEN);
	T_REQUIRE(munmap(buf, LEN) == 0);
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0) == buf);
	t_case_end(&k, what, true);
	munmap(buf, LEN);
	return failures == t_failures;
}

/* A child that uses regcache: its own ring, cache and monitor. Writes the
 * IDs of the programs it loaded to @fd. */
static int child_user(int fd)
{
	struct ids mine;
	struct io_uring ring;
	struct regcache *c;
	char *buf = t_map(LEN);
	struct regcache_region *r;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	/* The first get notices the fork and starts a monitor for us. */
	if (regcache_get(c, buf, LEN, 0, &r))
		return 2;
	regcache_put(c, r);
	if (strcmp(regcache_monitor_name(), "bpf"))
		return 3;
	list_held(&mine, false);
	if (write(fd, &mine, sizeof(mine)) != sizeof(mine))
		return 4;
	if (!munmap_case(&ring, c, "child: munmap with its own monitor"))
		return 5;
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return 0;
}

int main(void)
{
	struct ids progs, links, child;
	struct io_uring ring;
	struct regcache *c;
	int pfd[2], idle[2], status;
	pid_t user, sleeper;

	t_monitor_only("bpf");
	t_monitor_skip_unavailable("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	list_held(&progs, false);
	list_held(&links, true);
	printf("monitor attached: %u programs, %u links\n", progs.n, links.n);
	T_CHECK(progs.n >= 6);
	T_CHECK(links.n >= 6);

	/* A child that never calls regcache again, alive past our stop. */
	T_REQUIRE(pipe(idle) == 0);
	sleeper = fork();
	T_REQUIRE(sleeper >= 0);
	if (sleeper == 0) {
		char ch;

		close(idle[1]);
		(void)!read(idle[0], &ch, 1);
		_exit(0);
	}
	close(idle[0]);

	/* A child that uses regcache and exits. */
	T_REQUIRE(pipe(pfd) == 0);
	user = fork();
	T_REQUIRE(user >= 0);
	if (user == 0) {
		close(pfd[0]);
		_exit(child_user(pfd[1]));
	}
	close(pfd[1]);
	memset(&child, 0, sizeof(child));
	T_REQUIRE(read(pfd[0], &child, sizeof(child)) == sizeof(child));
	T_REQUIRE(waitpid(user, &status, 0) == user);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "child using regcache: status %#x\n", status);
	printf("child loaded %u programs of its own\n", child.n);
	T_CHECK(child.n >= 6);
	for (unsigned i = 0; i < child.n; i++)
		T_CHECK(!has(&progs, child.id[i]));
	T_EXPECT_EQ(0, settled(&child, false));

	/* The parent's monitor survived both children. */
	T_EXPECT_EQ(progs.n, still_present(&progs, false));
	T_EXPECT_EQ(links.n, still_present(&links, true));
	T_CHECK(munmap_case(&ring, c, "parent: munmap after the children"));

	regcache_destroy(c);
	T_EXPECT_EQ(0, still_present(&links, true));
	T_EXPECT_EQ(0, settled(&progs, false));
	printf("after the last cache: %u of our links and %u programs left "
	       "(sleeping child still alive)\n", still_present(&links, true),
	       still_present(&progs, false));

	close(idle[1]);
	T_REQUIRE(waitpid(sleeper, &status, 0) == sleeper);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
