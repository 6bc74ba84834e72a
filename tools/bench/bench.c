/* SPDX-License-Identifier: MIT */
/*
 * regcache-bench: regcache against UCX's ucs_rcache, in the same run.
 *
 * Every figure is the median over --reps rounds. In a round, each group of
 * figures runs once per cache or monitor, each in its own child process,
 * because UCX's hooks and regcache's monitor are process-wide and the
 * monitor is chosen once per process:
 *   hits     get+put hit cost, 1 and 2 threads, same buffer and 1000
 *            distinct buffers, and 1 thread hitting 1000 regions another
 *            thread created (null device: only the cache is measured)
 *   scale    hit cost on a hot set of 1000 buffers while 1000 and while
 *            1000000 regions are cached; memory per cached region (RSS delta
 *            over regions)
 *   miss     miss overhead above the registrar's own cost (null device, and
 *            io_uring fixed buffers of 4 KiB)
 *   monitor  per monitor (REGCACHE_MONITOR=bpf / userfaultfd) and for UCX's
 *            hooks: hit cost, miss overhead, added munmap/madvise latency,
 *            growth of the VMA count; and, on io_uring buffers hit in a
 *            scattered order, the hits of a thread started after the
 *            creator cached them, on the creator's CPU and on the other
 *   regcached (only when named in --only; root) the node service against
 *            the in-process bpf monitor: the syscall tax on an unrelated
 *            process with 1-64 idle clients, hit, munmap, connect-to-ready,
 *            128 clients at once. These come from regcached-bench, which
 *            starts a private daemon; its table follows this one.
 * The regcache caches of "hits", "scale" and "miss" use
 * REGCACHE_FLAG_EXPLICIT_INVALIDATE with REGCACHE_MONITOR=none, which
 * measures the cache's own hit path whatever monitor the machine has; the
 * monitor groups measure what each monitor adds.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "device.h"
#include "rcache_ucx.h"

struct bench_opt bench_opt = { .reps = 5, .scale = 1 };

/* ------------------------------------------------------------------------
 * The parent: run every group in a child, collect, print
 * ---------------------------------------------------------------------- */

#define MAX_FIGS 4096
static struct fig figs[MAX_FIGS];
static int nfigs;

/* Replace the figures of every round by one figure per (key, who): the
 * median over rounds. */
static void aggregate(void)
{
	static struct fig out[MAX_FIGS];
	static double v[MAX_FIGS];
	int nout = 0;

	for (int i = 0; i < nfigs; i++) {
		int n = 0, j;

		for (j = 0; j < nout; j++)
			if (!strcmp(out[j].key, figs[i].key) &&
			    !strcmp(out[j].who, figs[i].who))
				break;
		if (j < nout)
			continue;
		for (int k = i; k < nfigs; k++)
			if (!strcmp(figs[k].key, figs[i].key) &&
			    !strcmp(figs[k].who, figs[i].who))
				v[n++] = figs[k].value;
		out[nout] = figs[i];
		out[nout++].value = median(v, n);
	}
	memcpy(figs, out, sizeof(out[0]) * nout);
	nfigs = nout;
}

#define CHILD_TIMEOUT_S 600

static const char *run_group(enum group g, const char *who)
{
	static char err[128];
	bool timed_out = false;
	double deadline;
	struct fig f;
	int fds[2], status;
	pid_t pid;

	if (pipe(fds))
		return "pipe failed";
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return "fork failed";
	if (pid == 0) {
		close(fds[0]);
		bench_child(g, who, fds[1]);
	}
	close(fds[1]);
	/* A child that hangs (hooks can deadlock) must not hang the run. */
	deadline = now_ns() + CHILD_TIMEOUT_S * 1e9;
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		double left = deadline - now_ns();

		if (left <= 0 || poll(&pfd, 1, (int)(left / 1e6) + 1) != 1) {
			kill(pid, SIGKILL);
			timed_out = true;
			break;
		}
		if (read(fds[0], &f, sizeof(f)) != sizeof(f))
			break;
		if (nfigs < MAX_FIGS)
			figs[nfigs++] = f;
	}
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (timed_out) {
		snprintf(err, sizeof(err), "%s for %s: no end within %d s, killed",
			 g == G_HITS ? "hits" : g == G_SCALE ? "scale" :
			 g == G_MISS ? "miss" : "monitor", who, CHILD_TIMEOUT_S);
		return err;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, sizeof(err), "%s for %s: %s %d",
			 g == G_HITS ? "hits" : g == G_SCALE ? "scale" :
			 g == G_MISS ? "miss" : "monitor", who,
			 WIFSIGNALED(status) ? "killed by signal" :
					       "exited with",
			 WIFSIGNALED(status) ? WTERMSIG(status)
					     : WEXITSTATUS(status));
		return err;
	}
	return NULL;
}

static const struct fig *find(const char *key, const char *who)
{
	for (int i = 0; i < nfigs; i++)
		if (!strcmp(figs[i].key, key) && !strcmp(figs[i].who, who))
			return &figs[i];
	return NULL;
}

static double val(const char *key, const char *who)
{
	const struct fig *f = find(key, who);

	return f ? f->value : NAN;
}

static void cell(double v, const char *fmt)
{
	char buf[32];

	if (isnan(v))
		printf(" %12s", "-");
	else {
		snprintf(buf, sizeof(buf), fmt, v);
		printf(" %12s", buf);
	}
}

/* A row of regcache vs UCX with their ratio. */
static void row_vs(const char *label, const char *key)
{
	double r = val(key, "regcache"), u = val(key, "ucx");

	printf("  %-40s", label);
	cell(r, "%.1f");
	cell(u, "%.1f");
	cell(u / r, "%.2fx");
	printf("\n");
}

static const char *const mon_cols[] = { "baseline", "bpf", "userfaultfd",
					"ucx" };
#define NMON_COLS 4

static bool mon_ran(const char *who)
{
	return !strcmp(who, "baseline") ||
	       (find("munmap_uncached", who) && !find("unavailable", who));
}

/* A row per monitor; @added: print the difference to the baseline column. */
static void row_mon(const char *label, const char *key, bool added)
{
	printf("  %-34s", label);
	for (int i = 0; i < NMON_COLS; i++) {
		double v = val(key, mon_cols[i]);
		double base = val(key, "baseline");
		char buf[40];

		if (!mon_ran(mon_cols[i]) || isnan(v)) {
			printf(" %13s", "-");
			continue;
		}
		if (added && i)
			snprintf(buf, sizeof(buf), "%.0f (%+.0f)", v, v - base);
		else
			snprintf(buf, sizeof(buf), "%.*f", v < 100 ? 1 : 0, v);
		printf(" %13s", buf);
	}
	printf("\n");
}

struct target {
	const char *text;
	double measured, limit;
	bool pass, known, info;	/* info: a figure to read, no limit */
	char detail[160];
};
static struct target targets[16];
static int ntargets;

static void target(const char *text, double measured, double limit,
		   bool at_most, const char *detail)
{
	struct target *t = &targets[ntargets++];

	t->text = text;
	t->measured = measured;
	t->limit = limit;
	t->known = !isnan(measured);
	t->pass = t->known && (at_most ? measured <= limit : measured >= limit);
	snprintf(t->detail, sizeof(t->detail), "%s", detail);
}

/* A ratio printed beside the targets that explains one, with no limit. */
static void target_info(const char *text, double measured, const char *detail)
{
	struct target *t = &targets[ntargets++];

	t->text = text;
	t->measured = measured;
	t->limit = NAN;
	t->known = !isnan(measured);
	t->info = true;
	snprintf(t->detail, sizeof(t->detail), "%s", detail);
}

/* A userfaultfd hit (@hit_key) against getppid() in the same child
 * (@getppid_key): at most 1.5x. */
static void uffd_hit_target(const char *text, const char *hit_key,
			    const char *getppid_key)
{
	double hit = val(hit_key, "userfaultfd");
	double getppid = val(getppid_key, "userfaultfd");
	char d[160];

	snprintf(d, sizeof(d), "%.1f ns vs getppid %.1f ns", hit, getppid);
	target(text, hit / getppid, 1.5, true, d);
}

/* Issue 18: hits of a thread started after the creator cached its
 * buffers (bpf monitor, io_uring, 1000 buffers in a scattered order). The
 * target compares time on the CPU where the kernel has schedstat: on a
 * loaded machine the wall clock also counts the other work that the
 * scheduler runs on that CPU, more of it in one thread than the other. */
static void late_thread_targets(void)
{
	double cr = val("mon_late_creator", "bpf");
	double cr_on = val("mon_late_creator_on_cpu", "bpf");
	double same = val("mon_late_same", "bpf");
	double same_on = val("mon_late_same_on_cpu", "bpf");
	double other = val("mon_late_other", "bpf");
	double other_on = val("mon_late_other_on_cpu", "bpf");
	double wait = val("mon_late_other_waiting", "bpf");
	char d[160];

	if (isnan(cr_on) || isnan(same_on)) {
		snprintf(d, sizeof(d), "bpf, io_uring, 1000 scattered: wall "
			 "%.1f vs %.1f ns from the creator (no schedstat)",
			 same, cr);
		target("thread started after caching: hit <= 1.25x the "
		       "creator's", same / cr, 1.25, true, d);
	} else {
		snprintf(d, sizeof(d), "bpf, io_uring, 1000 scattered: %.1f "
			 "vs %.1f ns on the CPU; wall %.1f vs %.1f ns",
			 same_on, cr_on, same, cr);
		target("thread started after caching: hit <= 1.25x the "
		       "creator's", same_on / cr_on, 1.25, true, d);
	}
	/* Not a target: another vCPU's speed is not the cache's either. */
	snprintf(d, sizeof(d), "%.1f vs %.1f ns on the CPU; wall %.1f ns, "
		 "%.1f ns of it waiting for the CPU", other_on, cr_on, other,
		 wait);
	target_info("  ... on the other CPU", other_on / cr_on, d);
}

static void compute_targets(void)
{
	char d[160];
	double r1 = val("hit_1t_same", "regcache"), u1 = val("hit_1t_same", "ucx");
	double r1d = val("hit_1t_1000", "regcache"), u1d = val("hit_1t_1000", "ucx");
	double r2d = val("hit_2t_1000", "regcache"), u2d = val("hit_2t_1000", "ucx");
	double hs = val("hit_hot_of_1000", "regcache");
	double hb = val("hit_hot_of_1m", "regcache");
	double mem = val("mem_per_region", "regcache");
	double ro = val("hit_1t_other", "regcache");
	double mn = val("miss_null", "regcache"), un = val("miss_null", "ucx");
	double mf = val("miss_fill_1m", "regcache");
	double uf = val("miss_fill_1m", "ucx");

	snprintf(d, sizeof(d), "same buffer %.1f vs %.1f ns", r1, u1);
	target("1-thread hit <= 1/4 of UCX's (same buffer)", r1 / u1, 1.0 / 4,
	       true, d);
	snprintf(d, sizeof(d), "1000 buffers %.1f vs %.1f ns", r1d, u1d);
	target("1-thread hit <= 1/4 of UCX's (1000 buffers)", r1d / u1d,
	       1.0 / 4, true, d);
	snprintf(d, sizeof(d), "%.1f ns from another thread vs %.1f ns from "
		 "the creator", ro, r1d);
	target("hit on another thread's region <= 1.25x the creator's",
	       ro / r1d, 1.25, true, d);
	snprintf(d, sizeof(d), "%.1f ns per thread vs %.1f ns alone; control "
		 "%.2fx", r2d, r1d, val("hit_2t_separate", "regcache") / r1d);
	target("2 threads, distinct buffers: <= 1.3x the 1-thread cost",
	       r2d / r1d, 1.3, true, d);
	snprintf(d, sizeof(d), "UCX: %.1f ns per thread vs %.1f ns alone",
		 u2d, u1d);
	target("(peer) UCX degrades > 10x with 2 threads", u2d / u1d, 10,
	       false, d);
	snprintf(d, sizeof(d), "%.1f ns with 1000000 cached vs %.1f ns with 1000",
		 hb, hs);
	target("hot-set hit with 1M cached <= 2x with 1000 cached", hb / hs, 2,
	       true, d);
	snprintf(d, sizeof(d), "%.0f bytes of RSS per region (UCX: %.0f)", mem,
		 val("mem_per_region", "ucx"));
	target("memory per cached region <= 64 bytes", mem, 64, true, d);
	snprintf(d, sizeof(d), "%.0f vs UCX %.0f ns", mn, un);
	target("miss overhead <= UCX's (null device)", mn / un, 1, true, d);
	snprintf(d, sizeof(d), "%.0f vs UCX %.0f ns", mf, uf);
	target("miss while filling to 1M <= UCX's", mf / uf, 1, true, d);
	late_thread_targets();
	uffd_hit_target("userfaultfd hit <= 1.5x getppid()",
			"mon_hit_1t_same", "mon_getppid");
	uffd_hit_target("  ... in a process with a second thread",
			"mon_hit_mt_same", "mon_getppid_mt");
}

static void print_table(const char *machine, const char **errors, int nerr)
{
	printf("regcache-bench: medians of %d rounds; %s\n", bench_opt.reps, machine);
	printf("UCX: %s\n\n", ucx_version() ? ucx_version() :
			      "not built (install libucx-dev and rebuild)");
	printf("Cache core (null device; regcache with EXPLICIT_INVALIDATE)\n");
	printf("  %-40s %12s %12s %12s\n", "get+put hit, ns", "regcache",
	       "UCX", "UCX/regcache");
	row_vs("1 thread, same buffer", "hit_1t_same");
	row_vs("1 thread, 1000 buffers", "hit_1t_1000");
	row_vs("1 thread, 1000 another thread created", "hit_1t_other");
	row_vs("2 threads, same buffer (per thread)", "hit_2t_same");
	row_vs("2 threads, 1000 buffers each", "hit_2t_1000");
	row_vs("  control: 2 threads, a cache each", "hit_2t_separate");
	row_vs("hot 1000 of 1000 cached", "hit_hot_of_1000");
	row_vs("hot 1000 of 1000000 cached", "hit_hot_of_1m");
	printf("  %-40s\n", "miss overhead above the registrar, ns");
	row_vs("null device", "miss_null");
	row_vs("io_uring 4 KiB", "miss_uring4k");
	printf("  %-40s", "  (io_uring 4 KiB registration alone)");
	cell(val("reg_uring4k", "regcache"), "%.0f");
	printf("\n");
	row_vs("miss while filling to 1000000 regions", "miss_fill_1m");
	row_vs("memory per cached region, bytes (RSS)", "mem_per_region");

	printf("\nMonitors (regcache defaults; UCX with its UCM hooks)\n");
	printf("  %-34s", "");
	for (int i = 0; i < NMON_COLS; i++)
		printf(" %13s", i == 3 ? "UCX hooks" : mon_cols[i]);
	printf("\n");
	row_mon("hit, 1 thread, same buffer, ns", "mon_hit_1t_same", false);
	row_mon("hit, 1 thread, 1000 buffers, ns", "mon_hit_1t_1000", false);
	row_mon("  ... with NO_HIT_PROBE, ns", "mon_hit_noprobe_1000", false);
	row_mon("hit, same buffer, 2-thread process", "mon_hit_mt_same", false);
	row_mon("io_uring, 1000 scattered: creator", "mon_late_creator",
		false);
	row_mon("  ... its time on the CPU", "mon_late_creator_on_cpu", false);
	row_mon("  thread started later, same CPU", "mon_late_same", false);
	row_mon("  ... its time on the CPU", "mon_late_same_on_cpu", false);
	row_mon("  ... on the other CPU", "mon_late_other", false);
	row_mon("  ... its time on that CPU", "mon_late_other_on_cpu", false);
	row_mon("getppid() in the same process, ns", "mon_getppid", false);
	row_mon("miss overhead, io_uring 4 KiB, ns", "mon_miss_uring4k", false);
	row_mon("munmap 1 page, not cached, ns", "munmap_uncached", true);
	row_mon("munmap 1 page, cached, ns", "munmap_cached", true);
	row_mon("MADV_DONTNEED 1 page, cached, ns", "madvise_cached", true);
	row_mon("VMA growth, 10000 cached regions", "vma_growth", false);
	for (int i = 1; i < NMON_COLS; i++)
		if (!mon_ran(mon_cols[i]))
			printf("  %s: not available on this machine\n",
			       mon_cols[i]);

	printf("\nTargets (ratios from this run)\n");
	for (int i = 0; i < ntargets; i++)
		if (!targets[i].known)
			printf("  [n/a ] %s\n", targets[i].text);
		else
			printf("  [%s] %-55s %6.2f (%s)\n",
			       targets[i].info ? "info" :
			       targets[i].pass ? "PASS" : "MISS",
			       targets[i].text, targets[i].measured,
			       targets[i].detail);
	for (int i = 0; i < nerr; i++)
		printf("  error: %s\n", errors[i]);
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s >= 0x20)
			putchar(*s);
	putchar('"');
}

static void print_json(const char *machine, const char **errors, int nerr)
{
	time_t now = time(NULL);
	char date[64];

	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	printf("{\n  \"date\": \"%s\",\n  \"machine\": ", date);
	json_str(machine);
	printf(",\n  \"ucx\": ");
	if (ucx_version())
		json_str(ucx_version());
	else
		printf("null");
	printf(",\n  \"reps\": %d,\n  \"figures\": [", bench_opt.reps);
	for (int i = 0; i < nfigs; i++) {
		printf("%s\n    {\"key\": ", i ? "," : "");
		json_str(figs[i].key);
		printf(", \"who\": ");
		json_str(figs[i].who);
		printf(", \"value\": %.3f, \"unit\": ", figs[i].value);
		json_str(figs[i].unit);
		printf("}");
	}
	printf("\n  ],\n  \"targets\": [");
	for (int i = 0; i < ntargets; i++) {
		printf("%s\n    {\"target\": ", i ? "," : "");
		json_str(targets[i].text);
		if (targets[i].known)
			printf(", \"measured\": %.4f", targets[i].measured);
		else
			printf(", \"measured\": null");
		if (targets[i].info)
			printf(", \"limit\": null");
		else
			printf(", \"limit\": %.4f", targets[i].limit);
		printf(", \"pass\": %s, \"detail\": ",
		       !targets[i].known || targets[i].info ? "null" :
		       targets[i].pass ? "true" : "false");
		json_str(targets[i].detail);
		printf("}");
	}
	printf("\n  ],\n  \"errors\": [");
	for (int i = 0; i < nerr; i++) {
		printf("%s", i ? ", " : "");
		json_str(errors[i]);
	}
	printf("]\n}\n");
}

/* Does @only (NULL: all) name a group measured here, not regcached's? */
static bool main_groups(const char *only)
{
	static const char *const names[] = { "hits", "scale", "miss",
					     "monitor" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!only || strstr(only, names[i]))
			return true;
	return false;
}

/* regcached-bench, installed beside this program, with as many rounds. */
static int run_regcached_bench(void)
{
	char self[PATH_MAX], path[PATH_MAX + 32], rounds[16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status;
	pid_t pid;

	if (n < 0)
		return 1;
	self[n] = 0;
	snprintf(path, sizeof(path), "%s/regcached-bench", dirname(self));
	snprintf(rounds, sizeof(rounds), "%d", bench_opt.reps);
	printf("\nNode service (%s --rounds %s)\n", path, rounds);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execl(path, path, "--rounds", rounds, (char *)NULL);
		fprintf(stderr, "regcache-bench: %s: %s\n", path,
			strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: regcache-bench [options]\n"
"  -r, --reps N      rounds; each figure is the median over rounds (default 5)\n"
"  -s, --scale X     multiply iteration counts (and the 1000000 regions) by X\n"
"      --only LIST   groups to run: hits,scale,miss,monitor (default all);\n"
"                    regcached (root: the node service, after the table)\n"
"      --json        machine-readable output on stdout\n"
"  -h, --help\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "scale", required_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static const char *const whos[] = { "regcache", "ucx" };
	const char *errors[32], *e;
	int nerr = 0, c;
	char machine[256];
	bool tty;

	while ((c = getopt_long(argc, argv, "r:s:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'r': bench_opt.reps = atoi(optarg); break;
		case 's': bench_opt.scale = atof(optarg); break;
		case 'o': bench_opt.only = optarg; break;
		case 'j': bench_opt.json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (bench_opt.reps < 1 || bench_opt.reps > MAX_REPS || !(bench_opt.scale > 0) ||
	    optind != argc) {
		usage(stderr);
		return 2;
	}
	machine_info(machine, sizeof(machine));
	tty = isatty(STDERR_FILENO);

	static const struct {
		enum group g;
		const char *name;
	} groups[] = { { G_HITS, "hits" }, { G_SCALE, "scale" },
		       { G_MISS, "miss" }, { G_MONITOR, "monitor" } };
	/* Rounds: every child measures once, and the rounds interleave the
	 * caches and monitors, so that a change in the machine's background
	 * load affects them alike. Each figure is the median over rounds. */
	for (int round = 0; round < bench_opt.reps; round++)
		for (size_t gi = 0; gi < 4; gi++) {
			bool mon = groups[gi].g == G_MONITOR;

			if (bench_opt.only && !strstr(bench_opt.only, groups[gi].name))
				continue;
			for (int i = 0; i < (mon ? NMON_COLS : 2); i++) {
				const char *who = mon ? mon_cols[i] : whos[i];

				if (!strcmp(who, "ucx") && !ucx_version())
					continue;
				/* A monitor missing in round 1 stays missing. */
				if (mon && round && !mon_ran(who))
					continue;
				fprintf(stderr, tty ? "\r  round %d/%d: %s %-16s" :
					"  round %d/%d: %s %s\n", round + 1,
					bench_opt.reps, groups[gi].name, who);
				if ((e = run_group(groups[gi].g, who)) &&
				    nerr < 32)
					errors[nerr++] = strdup(e);
			}
		}
	if (tty)
		fprintf(stderr, "\r%50s\r", "");
	if (main_groups(bench_opt.only)) {
		aggregate();
		compute_targets();
		if (bench_opt.json)
			print_json(machine, errors, nerr);
		else
			print_table(machine, errors, nerr);
	}
	if (!bench_opt.json && bench_opt.only &&
	    strstr(bench_opt.only, "regcached") && run_regcached_bench())
		nerr++;
	return nerr ? 1 : 0;
}
