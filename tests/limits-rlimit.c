/*
 * Description: small resource limits: RLIMIT_NOFILE with 0 to 32 free
 * descriptors while the first cache starts its monitor; RLIMIT_MEMLOCK of
 * 256 KiB for an unprivileged user (a uid of its own, no capabilities), with the
 * cache's own byte limit and with one larger than the rlimit (so the
 * registrar runs out and the cache must evict and retry); RLIMIT_AS with 1
 * to 64 MiB of headroom. In every case the library falls back (another
 * monitor, or pass-through) or fails with a clear -errno; gets across
 * munmap, MAP_FIXED, mremap and MADV_DONTNEED of the buffer are DMA-checked
 * (0 stale); no descriptor leaks; nothing crashes or hangs (each case runs
 * in a child killed after 20 s, 60 s under a sanitizer).
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helpers.h"

/* Unprivileged uids no other test uses, one for each memlock case of each
 * monitor variant: the kernel counts pinned memory per user, and on 6.1 an
 * exited process's ring can stay counted for tens of seconds (seen in the
 * guest: uid 65534 after other tests, then this test's one uid after its
 * previous variant, unable to pin 192 KiB for 40 s with no process of the
 * uid alive). What a case checks is what one process gets at its own
 * limit, so it starts from a uid nothing before it has used. */
#define T_UID_BASE 65500

static uid_t case_uid(size_t max_bytes)
{
	static const char *const variants[] = { "bpf", "userfaultfd", "none",
						"regcached" };
	const char *mon = getenv("REGCACHE_MONITOR");
	unsigned v = sizeof(variants) / sizeof(variants[0]);

	for (unsigned i = 0; mon && i < v; i++)
		if (!strcmp(mon, variants[i]))
			v = i;
	return T_UID_BASE + 2 * v + (max_bytes != 0);
}

#define LEN 65536

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	T_REQUIRE(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the DIR's own */
}

static void set_limit(int res, rlim_t soft, rlim_t hard)
{
	struct rlimit rl = { soft, hard };

	T_REQUIRE(setrlimit(res, &rl) == 0);
}

/* Create the first cache under a limit; NULL (and a pass) when creation
 * fails with a clear -errno. */
static struct regcache *create(struct io_uring *ring, size_t max_bytes)
{
	struct regcache_params p = { .max_bytes = max_bytes };
	struct regcache *c;
	int ret = regcache_uring_create(ring, &p, &c);

	if (ret) {
		fprintf(stderr, "  regcache_uring_create failed: %s\n",
			strerror(-ret));
		if (ret >= 0)
			t_failures++;
		return NULL;
	}
	fprintf(stderr, "  monitor %s\n", regcache_monitor_name());
	return c;
}

/*
 * The library's log lines while the first cache is created go to a file,
 * then to stderr. When the wanted monitor did not start, the log must name
 * the cause (@cause, a strerror() text): a limit that is hit must not be
 * reported as a missing kernel feature.
 */
static FILE *log_file;
static int saved_stderr = -1;

static void capture_begin(void)
{
	log_file = tmpfile();
	T_REQUIRE(log_file);
	fflush(stderr);
	saved_stderr = dup(2);
	T_REQUIRE(saved_stderr >= 0);
	T_REQUIRE(dup2(fileno(log_file), 2) == 2);
}

static void capture_end(const char *cause)
{
	const char *want = getenv("REGCACHE_MONITOR");
	char text[8192];
	size_t n;

	fflush(stderr);
	T_REQUIRE(dup2(saved_stderr, 2) == 2);
	close(saved_stderr);
	rewind(log_file);
	n = fread(text, 1, sizeof(text) - 1, log_file);
	text[n] = 0;
	fclose(log_file);
	fputs(text, stderr);
	if (want && strcmp(want, "none") && strcmp(want, "auto") &&
	    !t_monitor_is(want) && !strstr(text, cause)) {
		fprintf(stderr, "  the %s monitor did not start, and the log "
			"does not say why (\"%s\")\n", want, cause);
		t_failures++;
	}
}

/* @free_fds descriptors left while the monitor starts. */
static int case_nofile(int free_fds)
{
	struct rlimit old;
	struct io_uring ring;
	struct regcache *c;
	char *buf = t_map(LEN);
	int fds;

	/* No holes below the limit: fds 0..n-1 are the only open ones. */
	T_REQUIRE(syscall(SYS_close_range, 3, ~0u, 0) == 0);
	t_ring_init(&ring);
	fds = count_fds();
	capture_begin();
	T_REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
	set_limit(RLIMIT_NOFILE, count_fds() + free_fds, old.rlim_max);
	c = create(&ring, 0);
	set_limit(RLIMIT_NOFILE, old.rlim_cur, old.rlim_max);
	capture_end(strerror(EMFILE));
	if (!c)
		return t_exit_status();
	t_churn_scenario(&ring, c, buf, LEN);
	regcache_destroy(c);
	if (count_fds() != fds) {
		fprintf(stderr, "  %d descriptors open after regcache_destroy, "
			"%d before regcache_uring_create: a leak\n",
			count_fds(), fds);
		t_failures++;
	}
	return t_exit_status();
}

/* An unprivileged user with 256 KiB of RLIMIT_MEMLOCK. @max_bytes 0: the
 * cache's default limit (3/4 of the rlimit); else larger than the rlimit, so
 * the registrar itself runs out and the cache must evict and retry. */
static int case_memlock(size_t max_bytes)
{
	const size_t limit = 256 << 10;
	struct regcache_region *held[4];
	struct io_uring ring;
	struct regcache *c;
	char *buf = t_map_small_pages(LEN), *many = t_map_small_pages(16 * LEN),
	     *big = t_map_small_pages(1 << 20);
	const uid_t uid = case_uid(max_bytes);
	int ret, nheld = 0;

	set_limit(RLIMIT_MEMLOCK, limit, limit);
	T_REQUIRE(setgroups(0, NULL) == 0 || errno == EPERM);
	T_REQUIRE(setresgid(uid, uid, uid) == 0);
	T_REQUIRE(setresuid(uid, uid, uid) == 0);
	if (!t_user_memlock_free(limit))
		return T_EXIT_FAIL;
	t_ring_init(&ring);
	c = create(&ring, max_bytes);
	if (!c)
		return t_exit_status();
	t_churn_scenario(&ring, c, buf, LEN);
	/* 8 buffers of 64 KiB, twice the limit: idle ones must be evicted.
	 * (Where the kernel gives a released buffer back to the limit a
	 * second late, each registration after an eviction waits for that:
	 * src/registrar/io_uring.c.) */
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 8; i++)
			t_get_dma_checked(&ring, c, many + i * LEN, LEN, i);
	/* More than the limit at once: a clear error, then recovery. */
	ret = regcache_get(c, big, 1 << 20, 0, &held[0]);
	if (ret == 0) {
		fprintf(stderr, "  a 1 MiB get succeeded under a 256 KiB "
			"RLIMIT_MEMLOCK\n");
		t_failures++;
		regcache_put(c, held[0]);
	} else {
		printf("  1 MiB get: %s\n", strerror(-ret));
		/* -E2BIG: more than the process's whole pinned-memory
		 * budget, 3/4 of RLIMIT_MEMLOCK (include/regcache.h). */
		T_EXPECT_EQ(-E2BIG, ret);
	}
	for (int i = 0; i < 4; i++) {
		ret = regcache_get(c, many + i * LEN, LEN, 0, &held[nheld]);
		if (ret == 0)
			nheld++;
		else
			T_CHECK(ret == -ENOMEM || ret == -ENOSPC);
	}
	printf("  held %d of 4 buffers of 64 KiB at once\n", nheld);
	T_CHECK(nheld >= 2);
	while (nheld)
		regcache_put(c, held[--nheld]);
	t_churn_scenario(&ring, c, buf, LEN);
	regcache_destroy(c);
	return t_exit_status();
}

#ifndef REGCACHE_SANITIZE
/* @headroom bytes of address space beyond what the process maps now. */
static int case_as(size_t headroom)
{
	struct io_uring ring;
	struct regcache *c;
	char *buf = t_map(LEN);
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	T_REQUIRE(f && fscanf(f, "%lu", &pages) == 1);
	fclose(f);
	t_ring_init(&ring);
	capture_begin();
	set_limit(RLIMIT_AS, pages * sysconf(_SC_PAGESIZE) + headroom,
		  RLIM_INFINITY);
	c = create(&ring, 0);
	/* The start-up is the case; the scenario needs room of its own. */
	set_limit(RLIMIT_AS, RLIM_INFINITY, RLIM_INFINITY);
	capture_end(strerror(ENOMEM));
	if (!c)
		return t_exit_status();
	t_churn_scenario(&ring, c, buf, LEN);
	regcache_destroy(c);
	return t_exit_status();
}
#endif

static struct t_child_cases cases;

static void run(const char *what, int (*fn)(const void *), size_t arg)
{
	printf("%s:\n", what);
	t_child_case(&cases, what, fn, &arg);
}

static int nofile(const void *n) { return case_nofile((int)*(const size_t *)n); }
static int memlock(const void *n) { return case_memlock(*(const size_t *)n); }
#ifndef REGCACHE_SANITIZE
static int as(const void *n) { return case_as(*(const size_t *)n); }
#endif

int main(void)
{
	static const int free_fds[] = { 0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32 };
	char what[96];

	for (size_t i = 0; i < sizeof(free_fds) / sizeof(free_fds[0]); i++) {
		snprintf(what, sizeof(what), "RLIMIT_NOFILE: %d free "
			 "descriptors", free_fds[i]);
		run(what, nofile, free_fds[i]);
	}
	if (getuid() == 0) {
		int failed = cases.failed;

		snprintf(what, sizeof(what), "RLIMIT_MEMLOCK 256 KiB, uid %d, "
			 "default max_bytes", (int)case_uid(0));
		run(what, memlock, 0);
		snprintf(what, sizeof(what), "RLIMIT_MEMLOCK 256 KiB, uid %d, "
			 "max_bytes 64 MiB", (int)case_uid(64 << 20));
		run(what, memlock, 64 << 20);
		if (cases.failed > failed)
			t_io_uring_census();
	} else {
		printf("SKIP (part): RLIMIT_MEMLOCK cases drop to uids of "
		       "their own, which needs root\n");
	}
#ifdef REGCACHE_SANITIZE
	printf("SKIP (part): RLIMIT_AS cases: a sanitizer reserves terabytes "
	       "of address space\n");
#else
	static const size_t as_mib[] = { 1, 4, 16, 64 };

	for (size_t i = 0; i < sizeof(as_mib) / sizeof(as_mib[0]); i++) {
		snprintf(what, sizeof(what), "RLIMIT_AS: %zu MiB of headroom",
			 as_mib[i]);
		run(what, as, as_mib[i] << 20);
	}
#endif
	return t_child_cases_status(&cases);
}
