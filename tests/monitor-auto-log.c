/* SPDX-License-Identifier: MIT */
/*
 * Description: the info line that names the monitor backend says where the
 * choice came from, truthfully. With REGCACHE_MONITOR=auto, and with it
 * unset, it reads 'monitor backend "X" started' without "(from
 * REGCACHE_MONITOR)"; control: with REGCACHE_MONITOR=X, the backend that
 * auto chose, the line carries that suffix. Each case runs in a fresh
 * child, since a process chooses its monitor once.
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

/* In a child with REGCACHE_MONITOR=@want (unset if NULL), create a cache
 * with stderr in a memfd; the log lines, then "monitor=<name>", in @out. */
static void run(const char *want, char *out, size_t len)
{
	int fd = memfd_create("log", 0), status;
	ssize_t n;
	pid_t pid;

	T_REQUIRE(fd >= 0);
	fflush(NULL);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		struct io_uring ring;
		struct regcache *c;

		if (want)
			setenv("REGCACHE_MONITOR", want, 1);
		else
			unsetenv("REGCACHE_MONITOR");
		setenv("REGCACHE_LOG", "info", 1);
		if (dup2(fd, STDERR_FILENO) != STDERR_FILENO)
			_exit(3);
		t_ring_init(&ring);
		c = t_uring_cache(&ring, 0, 0, 0);
		dprintf(fd, "monitor=%s\n", regcache_monitor_name());
		regcache_destroy(c);
		io_uring_queue_exit(&ring);
		_exit(0);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	n = pread(fd, out, len - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = 0;
}

/* The "started" line of @log, or NULL. */
static const char *started_line(const char *log, char *line, size_t len)
{
	const char *p = strstr(log, "\" started");
	const char *b, *e;

	if (!p)
		return NULL;
	for (b = p; b > log && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	snprintf(line, len, "%.*s", (int)((e ? e : p + strlen(p)) - b), b);
	return line;
}

int main(void)
{
	static char log[3][16384];
	char name[64], line[512];
	const char *m;

	run("auto", log[0], sizeof(log[0]));
	m = strstr(log[0], "monitor=");
	T_REQUIRE(m && sscanf(m, "monitor=%63s", name) == 1);
	if (!strcmp(name, "none")) {
		printf("SKIP: no monitor backend starts here, so none logs "
		       "\"started\"\n");
		return T_EXIT_SKIP;
	}
	run(NULL, log[1], sizeof(log[1]));
	run(name, log[2], sizeof(log[2]));

	for (int i = 0; i < 3; i++) {
		bool want_suffix = i == 2;

		if (!started_line(log[i], line, sizeof(line))) {
			fprintf(stderr, "case %d: no \"started\" line in:\n%s",
				i, log[i]);
			t_failures++;
			continue;
		}
		printf("%s: %s\n", i == 0 ? "REGCACHE_MONITOR=auto" :
		       i == 1 ? "REGCACHE_MONITOR unset" : name, line);
		if (!strstr(line, name) ||
		    !!strstr(line, "(from REGCACHE_MONITOR)") != want_suffix) {
			fprintf(stderr, "case %d: wrong line for %s\n", i,
				name);
			t_failures++;
		}
	}
	return t_exit_status();
}
