/* SPDX-License-Identifier: MIT */
/*
 * regcache-demo: why regcache exists, in one command.
 *
 * A middleware-like message loop DMAs each message into an application
 * buffer through that buffer's registration (io_uring READ_FIXED from a
 * pipe: the device writes the bytes through the pages it pinned) and checks
 * every byte the application then sees. The buffers live the way they do
 * in real programs: long-lived buffers reused for every message, short-lived
 * ones of mixed sizes from malloc/free (including sizes glibc serves with
 * mmap, so addresses come back), and a share released the way custom
 * allocators and language runtimes do it: munmap or mremap or
 * madvise(MADV_DONTNEED) through libc or through a raw syscall, and
 * IORING_OP_MADVISE.
 *
 * The same workload (same seed, same sequence of buffers and messages) runs
 * once per mode, each in its own child process, because UCX's hooks and
 * regcache's monitor are process-wide:
 *   nocache       register before and deregister after every message
 *   naive         a cache keyed by address, as applications write without hooks
 *   ucx           UCX's ucs_rcache with the UCM memory hooks (libucx-dev)
 *   bpf, userfaultfd, none
 *                 regcache with that monitor (REGCACHE_MONITOR=...)
 *   regcached     regcache served by a private regcached that the demo
 *                 starts (root only), in a client that runs as an ordinary
 *                 user (demo_regcached.c)
 * A corrupted operation is a message whose bytes the application does not
 * see: the device wrote them through a stale registration into pages that no
 * longer back the buffer (or, after mremap, into another live buffer).
 *
 * Exit status: 0 if no regcache mode corrupted anything, 1 if one did,
 * 2 for bad usage, a regcache mode that could not run, or registrations
 * that failed (e.g. RLIMIT_MEMLOCK too low).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regcache.h>

#include "demo.h"
#include "rcache_ucx.h"

/* ------------------------------------------------------------------------
 * Options and modes
 * ---------------------------------------------------------------------- */

struct demo_opt demo_opt = {
	.iterations = 30000,
	.sizes = { 1 << 10, 16 << 10, 128 << 10, 1 << 20, 4 << 20, 16 << 20 },
	.nsizes = 6,
	.seed = 1,
	.long_slots = 8,
	.short_slots = 24,
	.long_share = 85,
	.lifetime = 12,
	.max_regions = 1024,
	.repeat = 3,
	.fill = true,
	.timeout = 300,
};

struct mode demo_modes[NMODES] = {
	{ "nocache", "no cache (reg+dereg per message)", K_NOCACHE, NULL, true },
	{ "naive", "naive address-keyed cache", K_NAIVE, NULL, true },
	{ "ucx", "UCX ucs_rcache + UCM hooks", K_UCX, NULL, true },
	{ "bpf", "regcache, monitor bpf", K_REGCACHE, "bpf", true },
	{ "userfaultfd", "regcache, monitor userfaultfd", K_REGCACHE,
	  "userfaultfd", true },
	{ "none", "regcache, monitor none", K_REGCACHE, "none", true },
	{ "regcached", "regcache via regcached, uid 65534", K_REGCACHE,
	  "regcached", true },
	{ "ucx-bridge", "UCX ucs_rcache + bridge, no hooks", K_UCX_BRIDGE,
	  NULL, true },
	{ "fabric", "libfabric MR cache, own monitor", K_FABRIC, NULL, true },
	{ "fabric-bridge", "libfabric MR cache + bridge", K_FABRIC_BRIDGE,
	  NULL, true },
};

static const char *const rel_names[R_NKINDS + 1] = {
	[R_FREE] = "free (glibc munmap/trim)",
	[R_MUNMAP] = "munmap (libc)",
	[R_RAW_MUNMAP] = "munmap (raw syscall)",
	[R_MREMAP] = "mremap (libc)",
	[R_RAW_MREMAP] = "mremap (raw syscall)",
	[R_MADVISE] = "MADV_DONTNEED (libc)",
	[R_RAW_MADVISE] = "MADV_DONTNEED (raw syscall)",
	[R_URING_MADVISE] = "MADV_DONTNEED (io_uring)",
	[R_NKINDS] = "(cause not found)",
};

struct dev demo_dev;
const struct mode *demo_cur;
uintptr_t demo_page_mask;
unsigned demo_round;
/* msgs/s of every mode in every round */
static double rate[NMODES][MAX_REPEAT];

/* Does monitor @name work here? Asked in a child, since the monitor is
 * process-wide and chosen once. */
static bool monitor_available(const char *name, char *why, size_t len)
{
	int fds[2], status;
	char got[32] = "";
	pid_t pid;

	if (pipe(fds))
		return false;
	pid = fork();
	if (pid == 0) {
		struct regcache_params p = { .ops = &dev_regcache_ops,
					     .ctx = &demo_dev };
		struct regcache *c;

		setenv("REGCACHE_MONITOR", name, 1);
		/* The probe's fallback warning is the answer, not news. */
		setenv("REGCACHE_LOG", "error", 1);
		dev_init(&demo_dev, true);
		if (!regcache_create(&p, &c)) {
			snprintf(got, sizeof(got), "%s", regcache_monitor_name());
			regcache_destroy(c);
		}
		_exit(write(fds[1], got, sizeof(got)) == sizeof(got) ? 0 : 1);
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], got, sizeof(got)) != sizeof(got))
		got[0] = 0;
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (!strcmp(got, name))
		return true;
	snprintf(why, len, "not available on this machine%s",
		 !strcmp(name, "userfaultfd") ? " (or not built)" :
		 !strcmp(name, "bpf") ? " (needs CAP_BPF and a kernel with BTF)" : "");
	return false;
}

static int run_mode(const struct mode *m, struct result *res)
{
	struct pollfd pfd = { .events = POLLIN };
	bool timed_out = false;
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (demo_mode_regcached(m) && demo_regcached_start(res))
		return 0;	/* res says why */
	if (pipe(fds)) {
		pid = -1;
		goto out;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		goto out;
	}
	if (pid == 0) {
		close(fds[0]);
		if (m->kind == K_REGCACHE)
			setenv("REGCACHE_MONITOR", m->monitor, 1);
		if (demo_mode_regcached(m))
			demo_regcached_child(m, fds[1]);
		demo_bridge_child(m, fds[1]);
	}
	close(fds[1]);
	/* A child that hangs (hooks can deadlock) must not hang the demo. */
	pfd.fd = fds[0];
	n = poll(&pfd, 1, (int)demo_opt.timeout * 1000) == 1 ?
		    read(fds[0], res, sizeof(*res)) : -1;
	if (n < 0 && !waitpid(pid, &status, WNOHANG)) {
		kill(pid, SIGKILL);
		timed_out = true;
	}
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (n != sizeof(*res)) {
		res->status = -ECHILD;
		if (timed_out)
			snprintf(res->info, sizeof(res->info),
				 "hung: no result within %u s, killed",
				 demo_opt.timeout);
		else if (WIFSIGNALED(status))
			snprintf(res->info, sizeof(res->info),
				 "crashed: signal %d (%s)", WTERMSIG(status),
				 strsignal(WTERMSIG(status)));
		else
			snprintf(res->info, sizeof(res->info),
				 "child exited with status %d",
				 WEXITSTATUS(status));
	}
out:
	if (demo_mode_regcached(m))
		demo_regcached_stop(res);
	return pid < 0 ? -EIO : 0;
}

/* ------------------------------------------------------------------------
 * Main
 * ---------------------------------------------------------------------- */

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if ((*end && *end != ',') || !v || v > (1ull << 30))
		return -1;
	*out = v;
	return 0;
}

static int parse_sizes(char *list)
{
	demo_opt.nsizes = 0;
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		if (demo_opt.nsizes == MAX_SIZES || parse_size(tok, &demo_opt.sizes[demo_opt.nsizes]))
			return -1;
		demo_opt.nsizes++;
	}
	/* Ascending: the last is the largest. */
	for (unsigned i = 1; i < demo_opt.nsizes; i++)
		for (unsigned j = i; j && demo_opt.sizes[j] < demo_opt.sizes[j - 1]; j--) {
			size_t t = demo_opt.sizes[j];

			demo_opt.sizes[j] = demo_opt.sizes[j - 1];
			demo_opt.sizes[j - 1] = t;
		}
	return demo_opt.nsizes ? 0 : -1;
}

static int parse_modes(char *list)
{
	for (size_t i = 0; i < NMODES; i++)
		demo_modes[i].selected = false;
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		bool found = false;

		if (!strcmp(tok, "uffd"))
			tok = "userfaultfd";
		for (size_t i = 0; i < NMODES; i++)
			if (!strcmp(tok, demo_modes[i].key) ||
			    (!strcmp(tok, "regcache") &&
			     demo_modes[i].kind == K_REGCACHE) ||
			    !strcmp(tok, "all")) {
				demo_modes[i].selected = true;
				found = true;
			}
		if (!found) {
			fprintf(stderr, "unknown mode \"%s\"\n", tok);
			return -1;
		}
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: regcache-demo [options]\n"
"  -n, --iterations N   messages per mode (default %lu)\n"
"  -s, --sizes LIST     buffer sizes, e.g. 1K,16K,128K,1M,4M,16M (the default)\n"
"  -m, --modes LIST     any of nocache,naive,ucx,bpf,userfaultfd,none,\n"
"                       regcached,ucx-bridge,fabric,fabric-bridge;\n"
"                       regcache = every regcache monitor; all (default)\n"
"      --seed N         workload seed (default 1)\n"
"      --long-share P   %% of messages into long-lived buffers (default %u)\n"
"      --lifetime N     mean messages per short-lived buffer (default %u)\n"
"      --long N         long-lived buffers (default %u)\n"
"      --short N        short-lived buffers (default %u)\n"
"      --max-regions N  capacity of every cache (default %zu)\n"
"      --regcached-memlock SIZE|unlimited\n"
"                       RLIMIT_MEMLOCK of the regcached row's client, uid\n"
"                       65534 (default unlimited, as HPC sites set it for\n"
"                       RDMA; 8M is Debian's default: the row then runs the\n"
"                       workload fitted to it, with no ratio to the others)\n"
"      --verbs[=DEVICE] an RDMA device (the first one, or DEVICE) is the NIC:\n"
"                       ibv_reg_mr registrations, RDMA WRITEs over a loopback\n"
"                       RC queue pair (rows nocache, naive, regcache)\n"
"  -r, --repeat N       rounds of every mode; msgs/s is their median (default 3)\n"
"      --no-fill        do not write each new buffer before its first message\n"
"                       (then registration pays the page faults)\n"
"      --timeout S      kill a mode that gives no result in S seconds (300)\n"
"  -v, --verbose        registered bytes and regcache statistics per mode\n"
"      --profile        where each mode's time goes: the application's own\n"
"                       work, the cache, the registrar (adds a clock read per\n"
"                       step: msgs/s drop a little)\n"
"  -h, --help\n",
		demo_opt.iterations, demo_opt.long_share, demo_opt.lifetime, demo_opt.long_slots,
		demo_opt.short_slots, demo_opt.max_regions);
}

/* --profile: ms per round in each step of the timed loop. "cache" is what
 * get and put took beyond the registrar's calls made inside them. */
static void print_profile(const struct result *res, const bool *ran)
{
	double n = demo_opt.repeat;

	printf("\nwhere the time goes (--profile), ms per round, mean of %u rounds\n",
	       demo_opt.repeat);
	printf("%-34s %7s %7s %7s %7s %7s %7s %7s %7s\n", "mode", "loop",
	       "alloc", "release", "message", "get+put", "reg", "dereg",
	       "cache");
	printf("%-34s %7s %7s %7s %7s %7s %7s %7s %7s\n", "", "", "+fill",
	       "", "DMA+chk", "", "", "", "");
	for (size_t i = 0; i < NMODES; i++) {
		const struct result *r = &res[i];
		const double *p = r->phase_ns;
		double getput = (p[P_GET] + p[P_PUT]) / 1e6 / n;

		if (!ran[i] || r->status)
			continue;
		printf("%-34s %7.1f %7.1f %7.1f %7.1f %7.1f", demo_modes[i].label,
		       (p[P_ALLOC] + p[P_GET] + p[P_DMA] + p[P_PUT] +
			p[P_RELEASE]) / 1e6 / n,
		       p[P_ALLOC] / 1e6 / n, p[P_RELEASE] / 1e6 / n,
		       p[P_DMA] / 1e6 / n, getput);
		if (r->phases_known[P_REG])
			printf(" %7.1f %7.1f %7.1f\n", p[P_REG] / 1e6 / n,
			       p[P_DEREG] / 1e6 / n,
			       getput - (p[P_REG] + p[P_DEREG]) / 1e6 / n);
		else
			printf(" %7s %7s %7s\n", "-", "-", "-");
	}
	printf("(regs and deregs per round: ");
	for (size_t i = 0, first = 1; i < NMODES; i++) {
		if (!ran[i] || res[i].status)
			continue;
		printf("%s%s %.0f/%.0f", first ? "" : ", ", demo_modes[i].key,
		       res[i].regs / n, res[i].deregs / n);
		first = 0;
	}
	printf(")\n");
}

/* Corrupted messages by the change that made the registration stale, one
 * column per mode that ran. */
static void print_causes(const struct result *res, const bool *ran)
{
	unsigned long total = 0;

	for (size_t i = 0; i < NMODES; i++)
		if (ran[i] && !res[i].status)
			total += res[i].corrupt;
	if (!total)
		return;
	printf("\ncorrupted messages by what made the registration stale "
	       "(releases in the run)\n%-36s", "");
	for (size_t i = 0; i < NMODES; i++)
		if (ran[i] && !res[i].status)
			printf(" %11s", demo_modes[i].key);
	for (int k = 0; k <= R_NKINDS; k++) {
		char name[64];
		bool any = k < R_NKINDS;
		const struct result *first = NULL;

		for (size_t i = 0; i < NMODES; i++)
			if (ran[i] && !res[i].status) {
				any |= res[i].corrupt_by[k] != 0;
				first = first ? first : &res[i];
			}
		if (!any)
			continue;
		if (k < R_NKINDS && first)
			snprintf(name, sizeof(name), "%s (%lu)", rel_names[k],
				 first->released_by[k]);
		else
			snprintf(name, sizeof(name), "%s", rel_names[k]);
		printf("\n  %-34s", name);
		for (size_t i = 0; i < NMODES; i++)
			if (ran[i] && !res[i].status)
				printf(" %11lu", res[i].corrupt_by[k]);
	}
	printf("\n  %-34s", "DMA landed in another live buffer");
	for (size_t i = 0; i < NMODES; i++)
		if (ran[i] && !res[i].status)
			printf(" %11lu", res[i].into_live);
	printf("\n");
}

/* Each caching regcache mode's speed against the naive cache (what safety
 * costs) and against no cache (what caching gains), in the same run.
 * docs/benchmarks.md has the figures expected on the default workload. */
static void print_ratios(const struct result *res, const bool *ran)
{
	int nocache = -1, naive = -1;

	for (size_t i = 0; i < NMODES; i++) {
		if (!ran[i] || res[i].status)
			continue;
		if (demo_modes[i].kind == K_NOCACHE)
			nocache = (int)i;
		else if (demo_modes[i].kind == K_NAIVE)
			naive = (int)i;
	}
	for (size_t i = 0; i < NMODES; i++) {
		double v[MAX_REPEAT];

		/* The regcached row runs a workload fitted to an ordinary
		 * user's memlock limit: no ratio to the others unless that is
		 * the workload they ran too (--sizes, or sizes that fit). */
		if (!ran[i] || res[i].status || demo_modes[i].kind != K_REGCACHE ||
		    !strcmp(demo_modes[i].monitor, "none") ||
		    (demo_mode_regcached(&demo_modes[i]) &&
		     !demo_opt.sizes_given &&
		     demo_fit_nsizes(demo_regcached_client_memlock()) != demo_opt.nsizes) ||
		    (naive < 0 && nocache < 0))
			continue;
		/* Ratios within a round (the modes ran back to back), then
		 * their median: steadier than a ratio of medians. */
		printf("\n%s:", demo_modes[i].label);
		if (naive >= 0) {
			for (unsigned r = 0; r < demo_opt.repeat; r++)
				v[r] = rate[i][r] / rate[naive][r];
			printf(" %.2fx the naive cache's msgs/s%s",
			       median(v, (int)demo_opt.repeat),
			       nocache >= 0 ? "," : "");
		}
		if (nocache >= 0) {
			for (unsigned r = 0; r < demo_opt.repeat; r++)
				v[r] = rate[i][r] / rate[nocache][r];
			printf(" %.1fx no cache's",
			       median(v, (int)demo_opt.repeat));
		}
	}
	printf("\n");
}

static const char *fmt_count(char *buf, unsigned long v)
{
	if (v >= 10000000)
		sprintf(buf, "%luM", v / 1000000);
	else if (v >= 100000)
		sprintf(buf, "%luk", v / 1000);
	else
		sprintf(buf, "%lu", v);
	return buf;
}

/* Bytes the workload keeps pinned at once, about: every long-lived
 * buffer, and the short-lived ones at their mean size (each size class half
 * as likely as the next smaller one), +25%. */
static size_t working_set(void)
{
	size_t n = 0;
	double mean = 0, p = 0.5;

	for (unsigned i = 0; i < demo_opt.long_slots; i++)
		n += demo_opt.sizes[demo_opt.nsizes - 1 - i % demo_opt.nsizes];
	for (unsigned i = 0; i < demo_opt.nsizes; i++, p /= 2)
		mean += p * (double)demo_opt.sizes[i];
	n += (size_t)(mean * demo_opt.short_slots);
	return n / 4 * 5;
}

/* Whether this process has capability @cap in its effective set. */
bool demo_has_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = { 0 };

	return !syscall(SYS_capget, &hdr, data) &&
	       (data[CAP_TO_INDEX(cap)].effective & CAP_TO_MASK(cap));
}

/* Half of regcache's budget, 3/4 of @memlock, holds the workload of
 * the first sizes this returns. */
unsigned demo_fit_nsizes(unsigned long long memlock)
{
	unsigned keep = demo_opt.nsizes, fit;
	size_t budget = memlock / 4 * 3;

	while (demo_opt.nsizes > 2 && working_set() > budget / 2)
		demo_opt.nsizes--;
	fit = demo_opt.nsizes;
	demo_opt.nsizes = keep;
	return fit;
}

/*
 * Without CAP_IPC_LOCK the kernel lets this process pin RLIMIT_MEMLOCK
 * bytes, and regcache keeps 3/4 of that for itself. With the default sizes,
 * drop the largest until the workload fits in half of that budget (every
 * cache, naive ones too, then holds its set without thrashing), and say
 * so; with --sizes, warn.
 */
static void fit_memlock(void)
{
	struct rlimit rl;
	size_t budget, before = demo_opt.nsizes;

	if (demo_has_cap(CAP_IPC_LOCK) || getrlimit(RLIMIT_MEMLOCK, &rl) ||
	    rl.rlim_cur == RLIM_INFINITY)
		return;
	budget = rl.rlim_cur / 4 * 3;
	if (working_set() <= budget / 2)
		return;
	if (demo_opt.sizes_given) {
		fprintf(stderr, "warning: RLIMIT_MEMLOCK is %llu KiB; pinning "
			"these buffers needs about %zu KiB, so some "
			"registrations will fail\n  (run as root, raise "
			"`ulimit -l`, or use smaller --sizes)\n",
			(unsigned long long)rl.rlim_cur >> 10,
			working_set() * 2 / 3 >> 10);
		return;
	}
	demo_opt.nsizes = demo_fit_nsizes(rl.rlim_cur);
	printf("RLIMIT_MEMLOCK is %llu KiB and this process lacks "
	       "CAP_IPC_LOCK: regcache's\npinned-memory budget is %zu KiB, so "
	       "the workload drops its %u largest buffer\nsize%s to fit (raise "
	       "`ulimit -l`, or run as root, for the full workload).\n",
	       (unsigned long long)rl.rlim_cur >> 10, budget >> 10,
	       (unsigned)(before - demo_opt.nsizes),
	       before - demo_opt.nsizes > 1 ? "s" : "");
}

/*
 * Messages served by a registration made before them and delivered where
 * the application looks, in percent. A failed get is no hit, and neither
 * is a corrupted message: the cache answered with a registration of pages
 * that no longer back the buffer, which saved a registration only by
 * losing the data.
 */
static double hit_rate(const struct result *r)
{
	unsigned long misses = r->regs + r->get_errors + r->corrupt;

	return r->ops ? 100.0 * (r->ops > misses ? r->ops - misses : 0) /
				r->ops : 0.0;
}

/* The first @n of the buffer sizes. */
static void print_sizes(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		size_t v = demo_opt.sizes[i];
		bool mib = v >= (1 << 20) && !(v & 0xfffff);

		printf(mib ? " %zuM" : " %zuK", mib ? v >> 20 : v >> 10);
	}
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "iterations", required_argument, NULL, 'n' },
		{ "sizes", required_argument, NULL, 's' },
		{ "modes", required_argument, NULL, 'm' },
		{ "seed", required_argument, NULL, 'S' },
		{ "long-share", required_argument, NULL, 'L' },
		{ "lifetime", required_argument, NULL, 'T' },
		{ "long", required_argument, NULL, 'l' },
		{ "short", required_argument, NULL, 'x' },
		{ "max-regions", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "profile", no_argument, NULL, 'P' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "no-fill", no_argument, NULL, 'F' },
		{ "timeout", required_argument, NULL, 't' },
		{ "regcached-memlock", required_argument, NULL, 'M' },
		{ "verbs", optional_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct result res[NMODES];
	bool ran[NMODES] = { 0 }, runnable[NMODES] = { 0 };
	char machine[256], a[32], b[32], verbs_dev[128];
	int c, status = 0;
	bool failures = false;

	demo_bridge_exec_child();	/* returns unless re-executed as a child */
	while ((c = getopt_long(argc, argv, "n:s:m:r:vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'n': demo_opt.iterations = strtoul(optarg, NULL, 0); break;
		case 's':
			demo_opt.sizes_given = true;
			if (parse_sizes(optarg)) {
				fprintf(stderr, "bad --sizes (sizes from 1 to 1G, "
					"comma-separated, K/M suffixes)\n");
				return 2;
			}
			break;
		case 'm': if (parse_modes(optarg)) return 2; break;
		case 'S': demo_opt.seed = strtoul(optarg, NULL, 0); break;
		case 'L': demo_opt.long_share = (unsigned)atoi(optarg); break;
		case 'T': demo_opt.lifetime = (unsigned)atoi(optarg); break;
		case 'l': demo_opt.long_slots = (unsigned)atoi(optarg); break;
		case 'x': demo_opt.short_slots = (unsigned)atoi(optarg); break;
		case 'R': demo_opt.max_regions = strtoul(optarg, NULL, 0); break;
		case 'v': demo_opt.verbose = true; break;
		case 'P': demo_opt.profile = true; break;
		case 'r': demo_opt.repeat = (unsigned)atoi(optarg); break;
		case 'F': demo_opt.fill = false; break;
		case 't': demo_opt.timeout = (unsigned)atoi(optarg); break;
		case 'M': {
			size_t lim;

			if (!strcmp(optarg, "unlimited")) {
				demo_regcached_memlock = RLIM_INFINITY;
			} else if (!parse_size(optarg, &lim)) {
				demo_regcached_memlock = lim;
			} else {
				fprintf(stderr, "bad --regcached-memlock (a size "
					"with K/M suffix, at most 1G, or unlimited)\n");
				return 2;
			}
			break;
		}
		case 'V':
			demo_opt.verbs = true;
			snprintf(demo_opt.ibdev, sizeof(demo_opt.ibdev), "%s",
				 optarg ? optarg : "");
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!demo_opt.iterations || !demo_opt.long_slots || demo_opt.long_share > 100 ||
	    !demo_opt.lifetime || demo_opt.long_slots + demo_opt.short_slots > MAX_SLOTS ||
	    !demo_opt.max_regions || !demo_opt.repeat || demo_opt.repeat > MAX_REPEAT ||
	    !demo_opt.timeout || demo_opt.timeout > 86400 ||
	    optind != argc) {
		usage(stderr);
		return 2;
	}
	demo_page_mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
	if (ucx_version()) {
		static char label[64];

		snprintf(label, sizeof(label), "UCX %s ucs_rcache + UCM hooks",
			 ucx_version());
		demo_modes[2].label = label;
	}
	demo_opt.progress = isatty(STDERR_FILENO);
	machine_info(machine, sizeof(machine));
	fit_memlock();

	if (demo_opt.verbs && !demo_verbs_available(verbs_dev,
						    sizeof(verbs_dev))) {
		fprintf(stderr, "regcache-demo --verbs: %s\n", verbs_dev);
		return 2;
	}
	printf("regcache-demo: %lu messages per mode into %u long-lived and %u "
	       "short-lived buffers\n", demo_opt.iterations, demo_opt.long_slots,
	       demo_opt.short_slots);
	printf("  buffer sizes:");
	print_sizes(demo_opt.nsizes);
	if (demo_opt.verbs)
		printf(" (+-25%%). Every message is an RDMA WRITE by %s\n"
		       "  over a loopback RC queue pair through the buffer's "
		       "ibv_reg_mr rkey, and every\n  byte is checked where the "
		       "application looks. Short-lived buffers ", verbs_dev);
	else
		printf(" (+-25%%). Every message is DMAed by io_uring\n"
		       "  READ_FIXED through the buffer's registration, and "
		       "every byte is checked\n  where the application looks. "
		       "Short-lived buffers ");
	printf("end by free, munmap,\n  mremap or MADV_DONTNEED (through libc "
	       "or a raw syscall) or io_uring MADVISE.\n"
	       "  machine: %s\n\n", machine);

	for (size_t i = 0; i < NMODES; i++) {
		char why[128];

		if (!demo_modes[i].selected)
			continue;
		if (demo_opt.verbs && demo_modes[i].kind != K_NOCACHE &&
		    demo_modes[i].kind != K_NAIVE &&
		    demo_modes[i].kind != K_REGCACHE) {
			res[i].status = 1;
			snprintf(res[i].info, sizeof(res[i].info),
				 "not in --verbs mode (it registers through "
				 "its own transport)");
			ran[i] = true;
			continue;
		}
		if (demo_modes[i].kind == K_UCX && !ucx_version()) {
			res[i].status = 1;
			snprintf(res[i].info, sizeof(res[i].info),
				 "not built (libucx-dev missing at build time)");
			ran[i] = true;
			continue;
		}
		if (demo_modes[i].kind >= K_UCX_BRIDGE &&
		    !demo_bridge_available(&demo_modes[i], why, sizeof(why))) {
			res[i].status = 1;
			snprintf(res[i].info, sizeof(res[i].info), "%s", why);
			ran[i] = true;
			continue;
		}
		if (demo_mode_regcached(&demo_modes[i])) {
			if (!demo_regcached_available(why, sizeof(why))) {
				res[i].status = 1;
				snprintf(res[i].info, sizeof(res[i].info), "%s", why);
				ran[i] = true;
				continue;
			}
			char lim[80] = "RLIMIT_MEMLOCK unlimited";

			if (demo_regcached_lock_cap())
				snprintf(lim, sizeof(lim), "CAP_IPC_LOCK alone (this "
					 "root cannot raise\n  RLIMIT_MEMLOCK)");
			else if (demo_regcached_client_memlock() != RLIM_INFINITY)
				snprintf(lim, sizeof(lim), "RLIMIT_MEMLOCK %llu KiB",
					 demo_regcached_client_memlock() >> 10);
			printf("  %s: a private regcached, started\n"
			       "  by the demo for each run, serves a client, uid "
			       "65534, without CAP_BPF,\n  with %s, "
			       "on the workload such a user gets: buffer sizes\n ",
			       demo_modes[i].label, lim);
			print_sizes(demo_opt.sizes_given ? demo_opt.nsizes :
				    demo_fit_nsizes(demo_regcached_client_memlock()));
			printf(".\n\n");
		} else if (demo_modes[i].kind == K_REGCACHE &&
		    !monitor_available(demo_modes[i].monitor, why, sizeof(why))) {
			res[i].status = 1;
			snprintf(res[i].info, sizeof(res[i].info), "%s", why);
			ran[i] = true;
			continue;
		}
		ran[i] = true;
		runnable[i] = true;
	}

	/* Rounds interleave the modes, so a change in the machine's load hits
	 * them alike; msgs/s is the median over rounds, counts are totals. */
	for (unsigned round = 0; round < demo_opt.repeat; round++)
		for (size_t i = 0; i < NMODES; i++) {
			struct result one;

			if (!runnable[i])
				continue;
			if (!demo_opt.progress)
				fprintf(stderr, "  running %s (round %u/%u)\n",
					demo_modes[i].label, round + 1, demo_opt.repeat);
			demo_round = round;
			if (run_mode(&demo_modes[i], &one)) {
				one.status = -EIO;
				snprintf(one.info, sizeof(one.info),
					 "could not start a child process");
			}
			rate[i][round] = one.status || !one.secs ? 0 :
					 one.ops / one.secs;
			if (round == 0) {
				res[i] = one;
				continue;
			}
			if (one.status && !res[i].status) {
				res[i].status = one.status;
				memcpy(res[i].info, one.info, sizeof(one.info));
			}
			res[i].ops += one.ops;
			res[i].regs += one.regs;
			res[i].reg_bytes += one.reg_bytes;
			res[i].corrupt += one.corrupt;
			res[i].io_errors += one.io_errors;
			res[i].get_errors += one.get_errors;
			res[i].into_live += one.into_live;
			res[i].deregs += one.deregs;
			for (int k = 0; k < P_NPHASES; k++)
				res[i].phase_ns[k] += one.phase_ns[k];
			for (int k = 0; k <= R_NKINDS; k++)
				res[i].corrupt_by[k] += one.corrupt_by[k];
			for (int k = 0; k < R_NKINDS; k++)
				res[i].released_by[k] += one.released_by[k];
		}
	for (size_t i = 0; i < NMODES; i++) {
		double v[MAX_REPEAT];

		if (!runnable[i] || res[i].status)
			continue;
		/* The table prints ops / secs; median() sorts, so a copy. */
		memcpy(v, rate[i], sizeof(v));
		res[i].secs = res[i].ops / median(v, (int)demo_opt.repeat);
	}

	if (demo_opt.repeat > 1)
		printf("medians of msgs/s over %u rounds; regs, hit rate and "
		       "corrupted messages are\nover all rounds; a corrupted "
		       "message is no hit\n", demo_opt.repeat);
	printf("%-34s %10s %9s %8s %10s\n", "mode", "msgs/s", "regs",
	       "hit rate", "corrupted");
	for (size_t i = 0; i < NMODES; i++) {
		struct result *r = &res[i];

		if (!ran[i])
			continue;
		if (r->status) {
			printf("%-34s %s\n", demo_modes[i].label, r->info);
			if (r->status < 0 && demo_kind_guarded(demo_modes[i].kind))
				status = status ? status : 2;
			continue;
		}
		printf("%-34s %10.0f %9s %7.1f%% %10s", demo_modes[i].label,
		       r->ops / r->secs, fmt_count(a, r->regs), hit_rate(r),
		       fmt_count(b, r->corrupt));
		if (r->io_errors || r->get_errors)
			printf("  (%lu I/O errors, %lu failed gets)",
			       r->io_errors, r->get_errors);
		putchar('\n');
		if (demo_kind_guarded(demo_modes[i].kind) && r->corrupt)
			status = 1;
		else if (demo_kind_guarded(demo_modes[i].kind) &&
			 (r->io_errors || r->get_errors) && !status)
			status = 3;
		failures |= r->io_errors || r->get_errors;
	}

	print_ratios(res, ran);
	print_causes(res, ran);
	if (demo_opt.profile)
		print_profile(res, ran);
	if (demo_opt.verbose) {
		for (size_t i = 0; i < NMODES; i++) {
			struct regcache_stats *st = &res[i].st;

			if (!ran[i] || res[i].status)
				continue;
			printf("%s: %llu MiB registered in %lu registrations\n",
			       demo_modes[i].label, res[i].reg_bytes >> 20,
			       res[i].regs);
			if (demo_modes[i].kind != K_REGCACHE)
				continue;
			printf("%s: hits %llu, misses %llu, uncached %llu, "
			       "invalidations %llu, evictions %llu, merges %llu\n",
			       demo_modes[i].label, (unsigned long long)st->hits,
			       (unsigned long long)st->misses,
			       (unsigned long long)st->uncached,
			       (unsigned long long)st->invalidations,
			       (unsigned long long)st->evictions,
			       (unsigned long long)st->merges);
		}
	}
	if (failures)
		printf("\nSome gets or DMAs failed (see the first error above); "
		       "registrations of large\nbuffers fail when "
		       "RLIMIT_MEMLOCK is low: run as root, raise `ulimit -l`, "
		       "or\nuse smaller --sizes.\n");
	printf("\n%s\n", status == 1 ? "FAILED: regcache corrupted data" :
		status == 3 ? "FAILED: regcache could not register some buffers" :
		status ? "FAILED: a regcache mode could not run" :
		"regcache: zero corrupted messages.");
	return status == 3 ? 2 : status;
}
