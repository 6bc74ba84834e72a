/*
 * Description: a client in its own PID and mount namespaces (a container)
 * that reaches regcached only through a bind mount of the socket's
 * directory is served correctly. The test (root, regcached-launch --root)
 * unshares both namespaces, bind-mounts the socket directory elsewhere,
 * hides the original under an empty tmpfs, mounts the namespace's own
 * /proc, and runs cases of the catalogue of changes (changes-uring) there
 * as pid 1's child with uid 65534: the daemon knows it by its global pid (SO_PEERCRED), and
 * the DMA oracle must pass, including the shared-memory watch the daemon
 * checks against the client's own mapping.
 *
 *   regcached-namespaces CHANGES-PROGRAM CASE ...
 */
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include "helpers.h"
#include "reachable.h"

int main(int argc, char **argv)
{
	char newdir[64] = "/tmp/regcached-ns-XXXXXX", tmp[108], sockdir[108];
	char path[160];
	const char *sock = getenv("REGCACHE_SOCKET");
	int status;
	pid_t pid;

	if (argc < 3 || !sock) {
		fprintf(stderr, "usage: %s SCENARIOS CASE (under "
			"regcached-launch --root)\n", argv[0]);
		return T_EXIT_FAIL;
	}
	if (geteuid() != 0) {
		printf("SKIP: needs root for namespaces; run by "
		       "regcached-launch --root\n");
		return T_EXIT_SKIP;
	}
	snprintf(tmp, sizeof(tmp), "%s", sock);
	snprintf(sockdir, sizeof(sockdir), "%s", dirname(tmp));
	T_REQUIRE(mkdtemp(newdir) && chmod(newdir, 0755) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		pid_t inner;

		T_CHILD_REQUIRE(unshare(CLONE_NEWNS | CLONE_NEWPID) == 0);
		T_CHILD_REQUIRE(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
		T_CHILD_REQUIRE(mount(sockdir, newdir, NULL, MS_BIND, NULL) == 0);
		/* The original path is gone in here. */
		T_CHILD_REQUIRE(mount("tmpfs", sockdir, "tmpfs", 0, "size=4k") == 0);
		inner = fork();
		T_CHILD_REQUIRE(inner >= 0);
		if (inner == 0) {
			T_CHILD_REQUIRE(mount("proc", "/proc", "proc", 0, NULL) == 0);
			T_CHILD_REQUIRE(access(sock, F_OK) != 0);
			snprintf(path, sizeof(path), "%s/regcached.sock", newdir);
			setenv("REGCACHE_SOCKET", path, 1);
			printf("in the container: pid %d, socket %s\n",
			       (int)getpid(), path);
			fflush(stdout);
			T_CHILD_REQUIRE(reach_path_for_all(argv[1]) == 0);
			T_CHILD_REQUIRE(setgroups(0, NULL) == 0 &&
				  setresgid(65534, 65534, 65534) == 0 &&
				  setresuid(65534, 65534, 65534) == 0);
			execv(argv[1], argv + 1);
			_exit(127);
		}
		T_CHILD_REQUIRE(waitpid(inner, &status, 0) == inner);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	rmdir(newdir);
	T_CHECK(WIFEXITED(status));
	return WIFEXITED(status) ? WEXITSTATUS(status) : T_EXIT_FAIL;
}
