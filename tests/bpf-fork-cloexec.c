/*
 * Description: eBPF monitor: after fork, every fd that regcache opened is
 * still close-on-exec, so a child that forks and execs a helper program
 * leaks none of them into it. The monitor's fork handler replaces each
 * inherited BPF fd in the child with /dev/null, and dup2() would clear
 * FD_CLOEXEC on the way.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "helpers.h"

static bool before[4096];

static void snapshot(bool *set)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	T_REQUIRE(d);
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd >= 0 && fd < 4096 &&
		    fd != dirfd(d))
			set[fd] = true;
	}
	closedir(d);
}

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	int status;
	pid_t pid;

	t_monitor_only("bpf");
	snapshot(before);
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		bool now[4096] = { false };
		int leaks = 0;

		snapshot(now);
		for (int fd = 0; fd < 4096; fd++) {
			char path[64], target[256] = "";
			int flags;

			if (!now[fd] || before[fd] || fd == ring.ring_fd)
				continue;
			flags = fcntl(fd, F_GETFD);
			if (flags >= 0 && (flags & FD_CLOEXEC))
				continue;
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			if (readlink(path, target, sizeof(target) - 1) < 0)
				strcpy(target, "?");
			fprintf(stderr, "child: fd %d (%s) is not close-on-exec\n",
				fd, target);
			leaks++;
		}
		_exit(leaks ? 1 : 0);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_EXPECT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (!t_failures)
		printf("ok: every regcache fd in a forked child is close-on-exec\n");
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
