/*
 * Description: seccomp filters that deny a system call the library uses:
 * bpf, userfaultfd and membarrier before the first cache exists, and
 * membarrier, ioctl and openat after it exists (the monitor is running),
 * each once failing with EPERM and once with ENOSYS. In every case the
 * library falls back or fails with a clear error: creating a cache, gets
 * and puts across munmap, MAP_FIXED, mremap and MADV_DONTNEED of the
 * buffer, DMA-checked (0 stale), a second cache, and regcache_destroy()
 * all return. Each case runs in a child that is killed after CASE_SECONDS,
 * so a hang fails the test instead of hanging CI.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#ifdef REGCACHE_SANITIZE
#define CASE_SECONDS 60
#else
#define CASE_SECONDS 20
#endif
#define LEN 65536

struct deny {
	const char *name;
	long nr;
	bool after;	/* installed once a cache (and the monitor) exists */
	const char *needed_by;	/* the monitor that cannot run without it */
};

static const struct deny denies[] = {
	{ "bpf", SYS_bpf, false, "bpf" },
	{ "userfaultfd", SYS_userfaultfd, false, NULL /* /dev/userfaultfd */ },
	{ "membarrier", SYS_membarrier, false, NULL },
	{ "membarrier", SYS_membarrier, true, NULL },
	{ "ioctl", SYS_ioctl, true, NULL },
	{ "openat", SYS_openat, true, NULL },
};

/* Where a hang happened: the last step printed before the kill. */
static void step(const char *what)
{
	printf("  %s\n", what);
	fflush(stdout);
}

static int run_case(const struct deny *d, int err)
{
	const char *want = getenv("REGCACHE_MONITOR");
	struct regcache_params p = { 0 };
	struct io_uring ring, ring2;
	struct regcache *c, *c2;
	char *buf = t_map(LEN);
	int ret;

	if (!d->after)
		T_REQUIRE(t_seccomp_deny(d->nr, err) == 0);
	t_ring_init(&ring);
	ret = regcache_uring_create(&ring, &p, &c);
	if (ret) {
		/* Failing clearly is allowed; a crash or hang is not. */
		printf("  regcache_uring_create failed: %s\n", strerror(-ret));
		return ret < 0 ? T_EXIT_PASS : T_EXIT_FAIL;
	}
	/* A denied call that the wanted monitor needs may make it fall
	 * back; anything else must not change which monitor runs. */
	if (!(d->needed_by && want && !strcmp(want, d->needed_by)))
		t_monitor_require();
	printf("  monitor %s\n", regcache_monitor_name());
	fflush(stdout);
	t_churn_scenario(&ring, c, buf, LEN);
	if (d->after) {
		T_REQUIRE(t_seccomp_deny(d->nr, err) == 0);
		step("filter installed");
	}
	t_churn_scenario(&ring, c, buf, LEN);
	step("second cache");
	t_ring_init(&ring2);
	ret = regcache_uring_create(&ring2, &p, &c2);
	if (ret == 0) {
		t_churn_scenario(&ring2, c2, buf, LEN);
		regcache_destroy(c2);
	} else {
		printf("  second regcache_uring_create failed: %s\n",
		       strerror(-ret));
	}
	t_churn_scenario(&ring, c, buf, LEN);
	step("regcache_destroy");
	regcache_destroy(c);
	return t_exit_status();
}

/* Where each thread of a hung child sleeps, for the report. */
static void print_wchans(pid_t pid)
{
	char path[384], wchan[128], state[512];
	struct dirent *e;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		FILE *f;
		size_t n = 0;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan",
			 (int)pid, e->d_name);
		f = fopen(path, "r");
		wchan[0] = 0;
		if (f) {
			n = fread(wchan, 1, sizeof(wchan) - 1, f);
			wchan[n] = 0;
			fclose(f);
		}
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat",
			 (int)pid, e->d_name);
		f = fopen(path, "r");
		state[0] = 0;
		if (f) {
			n = fread(state, 1, sizeof(state) - 1, f);
			state[n] = 0;
			fclose(f);
		}
		fprintf(stderr, "    thread %s: %.40s ... sleeping in %s\n",
			e->d_name, state, wchan);
	}
	closedir(dir);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	static const int errs[] = { EPERM, ENOSYS };
	int passed = 0, skipped = 0, failed = 0;

	for (size_t i = 0; i < sizeof(denies) / sizeof(denies[0]); i++)
		for (size_t j = 0; j < 2; j++) {
			const struct deny *d = &denies[i];
			const char *what = errs[j] == EPERM ? "EPERM" : "ENOSYS";
			double t0 = now();
			int status = 0;
			pid_t pid, parent = getpid();

			printf("deny %s with %s %s the first cache:\n", d->name,
			       what, d->after ? "after" : "before");
			fflush(stdout);
			pid = fork();
			T_REQUIRE(pid >= 0);
			if (pid == 0) {
				int rc;

				t_die_with_parent(parent);
				rc = run_case(d, errs[j]);

				fflush(stdout);
				fflush(stderr);
				/* _exit: no atexit work (sanitizer reports
				 * open files) under the filter */
				_exit(rc);
			}
			while (waitpid(pid, &status, WNOHANG) == 0) {
				if (now() - t0 > CASE_SECONDS) {
					print_wchans(pid);
					kill(pid, SIGKILL);
					waitpid(pid, &status, 0);
					fprintf(stderr, "  HANG: deny %s (%s): no "
						"exit after %d s, killed\n",
						d->name, what, CASE_SECONDS);
					status = T_EXIT_FAIL << 8;
					break;
				}
				usleep(10000);
			}
			if (WIFSIGNALED(status)) {
				fprintf(stderr, "  CRASH: deny %s (%s): signal "
					"%d\n", d->name, what, WTERMSIG(status));
				failed++;
			} else if (WEXITSTATUS(status) == T_EXIT_SKIP) {
				skipped++;
			} else if (WEXITSTATUS(status) == T_EXIT_PASS) {
				printf("  ok (%.1f s)\n", now() - t0);
				passed++;
			} else {
				fprintf(stderr, "  FAIL: deny %s (%s)\n",
					d->name, what);
				failed++;
			}
		}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	if (failed)
		return T_EXIT_FAIL;
	return passed ? T_EXIT_PASS : T_EXIT_SKIP;
}
