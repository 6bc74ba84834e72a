/*
 * Description: regcached refuses to start where it cannot be correct, with
 * a clear message and exit status 1: as an ordinary user ("must run as
 * root"), and in a nested PID namespace ("initial PID namespace": the
 * kernel would name its clients by pids it cannot see). Needs root to set
 * both up; skips otherwise.
 *
 *   regcached-refuse PATH-OF-REGCACHED
 */
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include "helpers.h"
#include "reachable.h"

/* Run the daemon in a child prepared by @how; returns its exit status and
 * its stderr in @err. */
static int run(const char *daemon, int how, char *err, size_t len)
{
	int p[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	T_REQUIRE(pipe(p) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 2);
		if (how == 0) {
			T_REQUIRE(reach_path_for_all(daemon) == 0);
			T_REQUIRE(setgroups(0, NULL) == 0 &&
				  setresgid(65534, 65534, 65534) == 0 &&
				  setresuid(65534, 65534, 65534) == 0);
		} else {
			T_REQUIRE(unshare(CLONE_NEWPID) == 0);
			if (fork() != 0) {
				int st;

				wait(&st);
				_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 99);
			}
		}
		execl(daemon, daemon, "--socket", "/nonexistent/x.sock", NULL);
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], err + got, len - 1 - got)) > 0)
		got += n;
	err[got] = 0;
	close(p[0]);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv)
{
	char err[1024];
	int st;

	if (argc < 2)
		return T_EXIT_FAIL;
	if (geteuid() != 0) {
		printf("SKIP: needs root to set up both cases\n");
		return T_EXIT_SKIP;
	}
	st = run(argv[1], 0, err, sizeof(err));
	printf("as uid 65534: status %d: %s", st, err);
	T_EXPECT_EQ(1, st);
	T_CHECK(strstr(err, "must run as root") != NULL);
	st = run(argv[1], 1, err, sizeof(err));
	printf("in a new PID namespace: status %d: %s", st, err);
	T_EXPECT_EQ(1, st);
	T_CHECK(strstr(err, "initial PID namespace") != NULL);
	return t_exit_status();
}
