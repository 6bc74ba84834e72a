/* SPDX-License-Identifier: MIT */
/*
 * regcache-demo's regcached row (docs/regcached.md): regcache in a process
 * of an ordinary user, served by the node service. As root, the demo
 * starts a private regcached on a socket in a fresh directory before each
 * run of the row and stops it after, so it taxes no other row's syscalls.
 * The row's child drops to what an ordinary user has (uid/gid 65534, no
 * capabilities) with the RLIMIT_MEMLOCK of --regcached-memlock (by default
 * none, as HPC sites configure their users for RDMA) and re-executes the
 * demo with REGCACHE_MONITOR=regcached and REGCACHE_SOCKET set: a fresh
 * image holds nothing of root's. It runs the workload fitted to that
 * memlock limit, the one the demo itself runs for such a user: with no
 * limit, the workload of every other row.
 */
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "demo.h"
#include "reachable.h"
#include "socket_answers.h"

#define CLIENT_ID 65534		/* nobody/nogroup */

unsigned long long demo_regcached_memlock = RLIM_INFINITY;

static char dir[64], sock_path[108];
static pid_t daemon_pid = -1, demo_pid;
static struct sigaction saved[3];
static const int stop_signals[3] = { SIGINT, SIGTERM, SIGHUP };

/*
 * Where an installed demo finds what was installed with it: @rel_from_bindir
 * (bin/ to sbin/ or lib/ as CMake installed them) below the demo's own
 * directory, so that an installed tree still works after it was moved. NULL
 * when the demo runs from the build tree, whose files the build names.
 */
const char *demo_installed_path(const char *rel_from_bindir, const char *name,
				char *path, size_t len)
{
	char self[4096], built[PATH_MAX];
	ssize_t n;
	char *slash;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = 0;
	/* The kernel's path is canonical; the build's may hold symlinks. */
	if (!strcmp(self, realpath(DEMO_SELF_BUILT, built) ? built :
						       DEMO_SELF_BUILT))
		return NULL;
	slash = strrchr(self, '/');
	*slash = 0;
	if (snprintf(path, len, "%s/%s%s%s", self, rel_from_bindir,
		     *name ? "/" : "", name) >= (int)len)
		return NULL;
	return path;
}

#ifdef DEMO_REGCACHED
/* The daemon this demo starts: the one built beside it from the build
 * tree, otherwise the installed one. */
static const char *regcached_path(void)
{
	static char path[4096];

	if (path[0])
		return path;
	if (!demo_installed_path(DEMO_REGCACHED_FROM_BINDIR, "regcached", path,
				 sizeof(path)))
		return DEMO_REGCACHED;
	return path;
}
#endif

bool demo_regcached_available(char *why, size_t len)
{
#ifndef DEMO_REGCACHED
	snprintf(why, len, "regcached not built (needs the eBPF monitor's "
		 "toolchain)");
	return false;
#else
	if (geteuid() != 0) {
		snprintf(why, len, "left out: starting a private regcached "
			 "needs root");
		return false;
	}
	if (access(regcached_path(), X_OK)) {
		snprintf(why, len, "no regcached at %.100s", regcached_path());
		return false;
	}
	return true;
#endif
}

/* Wait up to @ms for the daemon to exit; true if it did. */
static bool reap(int *status, int ms)
{
	const struct timespec tick = { 0, 2000000 };

	for (; ms > 0; ms -= 2) {
		if (waitpid(daemon_pid, status, WNOHANG) == daemon_pid)
			return true;
		nanosleep(&tick, NULL);
	}
	return false;
}

/* Stop the daemon (SIGTERM, then SIGKILL after 5 s) and remove its socket
 * directory. Async-signal-safe: stop_on_signal() calls it. Returns the
 * daemon's wait status. */
static int stop_daemon(void)
{
	int status = 0;

	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		if (!reap(&status, 5000)) {
			kill(daemon_pid, SIGKILL);
			waitpid(daemon_pid, &status, 0);
		}
		daemon_pid = -1;
	}
	unlink(sock_path);
	rmdir(dir);
	return status;
}

/* Ctrl-C or a kill of the demo: no daemon or directory left behind. */
static void stop_on_signal(int sig)
{
	if (getpid() == demo_pid)
		stop_daemon();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void fail(struct result *res, int status, const char *what, int wstatus)
{
	res->status = status;
	snprintf(res->info, sizeof(res->info), "%s (wait status %#x)", what,
		 (unsigned)wstatus);
}

int demo_regcached_start(struct result *res)
{
#ifdef DEMO_REGCACHED
	struct sigaction sa = { .sa_handler = stop_on_signal };
	int status = 0;

	demo_pid = getpid();
	snprintf(dir, sizeof(dir), "/tmp/regcache-demo.XXXXXX");
	/* The client, uid 65534, must reach the socket (mode 0666). */
	if (!mkdtemp(dir) || chmod(dir, 0755)) {
		res->status = -errno;
		snprintf(res->info, sizeof(res->info), "socket directory: %s",
			 strerror(errno));
		rmdir(dir);
		return -1;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/regcached.sock", dir);
	for (int i = 0; i < 3; i++)
		sigaction(stop_signals[i], &sa, &saved[i]);
	fflush(NULL);
	daemon_pid = fork();
	if (daemon_pid == 0) {
		/* Never outlive the demo, even when it is SIGKILLed. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != demo_pid)
			_exit(1);
		execl(regcached_path(), "regcached", "--socket", sock_path,
		      (char *)NULL);
		perror(regcached_path());
		_exit(127);
	}
	for (int ms = 0; daemon_pid > 0 && ms < 10000; ms += 2) {
		if (waitpid(daemon_pid, &status, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			/* Not in the initial PID namespace, no BPF: this
			 * machine cannot run it, as the tests skip. */
			fail(res, 1, "left out: regcached did not start here "
			     "(its log above says why)", status);
			break;
		}
		if (regcached_socket_answers(sock_path))
			return 0;
		usleep(2000);
	}
	if (!res->status)
		fail(res, daemon_pid < 0 ? -errno : -ETIMEDOUT,
		     daemon_pid < 0 ? "could not start regcached" :
		     "regcached did not answer within 10 s", 0);
	demo_regcached_stop(res);
	return -1;
#else
	fail(res, 1, "regcached not built", 0);
	return -1;
#endif
}

void demo_regcached_stop(struct result *res)
{
	int status = 0;
	bool died = daemon_pid > 0 &&
		    waitpid(daemon_pid, &status, WNOHANG) == daemon_pid;

	if (died)
		daemon_pid = -1;
	else if (daemon_pid > 0)
		status = stop_daemon();
	stop_daemon();	/* the directory, in every case */
	for (int i = 0; i < 3; i++)
		sigaction(stop_signals[i], &saved[i], NULL);
	if (res->status < 0)
		return;	/* the first failure is the one to report */
	if (died)
		fail(res, -ECHILD, "regcached died during the run", status);
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail(res, -ECHILD, "regcached stopped with an error", status);
}

/* Whether this process may set RLIMIT_MEMLOCK as high as it likes. */
static bool can_raise_memlock(void)
{
	struct rlimit rl;

	return demo_has_cap(CAP_SYS_RESOURCE) ||
	       (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_max == RLIM_INFINITY);
}

/*
 * A root that lacks CAP_SYS_RESOURCE (some containers and sandboxes) cannot
 * raise RLIMIT_MEMLOCK above its own hard limit. For an unlimited client
 * the row then keeps CAP_IPC_LOCK alone instead, where root has it, which
 * lets the client pin as much as an unlimited RLIMIT_MEMLOCK would (neither
 * regcache's budget nor the kernel's accounting limits it) and grants
 * nothing else: no CAP_BPF, so the client still cannot load a monitor of
 * its own.
 */
bool demo_regcached_lock_cap(void)
{
	return demo_regcached_memlock == RLIM_INFINITY && !can_raise_memlock() &&
	       demo_has_cap(CAP_IPC_LOCK);
}

unsigned long long demo_regcached_client_memlock(void)
{
	struct rlimit rl;

	if (demo_regcached_lock_cap())
		return RLIM_INFINITY;
	/* Neither: the most this root can give, and the workload fitted to
	 * it. */
	if (!can_raise_memlock() && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
	    demo_regcached_memlock > rl.rlim_max)
		return rl.rlim_max;
	return demo_regcached_memlock;
}

/* After setresuid() away from 0 with PR_SET_KEEPCAPS: CAP_IPC_LOCK only,
 * effective, and ambient so that it survives the exec. */
static int keep_only_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = { 0 };
	__u32 bit = CAP_TO_MASK(CAP_IPC_LOCK);
	int i = CAP_TO_INDEX(CAP_IPC_LOCK);

	data[i].effective = data[i].permitted = data[i].inheritable = bit;
	if (syscall(SYS_capset, &hdr, data))
		return -1;
	return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_IPC_LOCK, 0, 0);
}

/* The re-executed demo and the libregcache.so.0 it loads through its
 * RUNPATH, made reachable for uid 65534 (reachable.h): a build tree in
 * root's home is closed to it. */
static int reach_demo_files(void)
{
	int err = reach_path_for_all("/proc/self/exe");
	Dl_info lib;

	if (!err && dladdr((void *)regcache_version, &lib) && lib.dli_fname &&
	    strchr(lib.dli_fname, '/'))
		err = reach_path_for_all(lib.dli_fname);
	return err;
}

void demo_regcached_child(const struct mode *m, int fd)
{
	unsigned long long memlock = demo_regcached_client_memlock();
	struct rlimit rl = { memlock, memlock };
	struct result res = { 0 };
	bool lock_cap = demo_regcached_lock_cap();
	int err;

	setenv("REGCACHE_SOCKET", sock_path, 1);
	if (!demo_opt.sizes_given)
		demo_opt.nsizes = demo_fit_nsizes(memlock);
	/* Leaving uid 0 for good clears every capability set, unless
	 * PR_SET_KEEPCAPS keeps the permitted one for keep_only_ipc_lock(). */
	err = reach_demo_files();
	if (err) {
		res.status = err;
		snprintf(res.info, sizeof(res.info), "uid %d cannot reach this "
			 "demo's files: %s", CLIENT_ID, strerror(-err));
	} else if ((!lock_cap && setrlimit(RLIMIT_MEMLOCK, &rl)) ||
	    (lock_cap && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)) ||
	    setgroups(0, NULL) ||
	    setresgid(CLIENT_ID, CLIENT_ID, CLIENT_ID) ||
	    setresuid(CLIENT_ID, CLIENT_ID, CLIENT_ID) ||
	    (lock_cap && keep_only_ipc_lock()) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		res.status = -errno;
		snprintf(res.info, sizeof(res.info),
			 "could not drop privileges: %s", strerror(errno));
	} else {
		demo_reexec(m, fd);
		res.status = 1;
		snprintf(res.info, sizeof(res.info), "left out: uid %d cannot "
			 "execute this demo (%s)", CLIENT_ID, strerror(errno));
	}
	if (write(fd, &res, sizeof(res)) != sizeof(res))
		_exit(3);
	_exit(0);
}
