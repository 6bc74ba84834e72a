/* SPDX-License-Identifier: MIT */
/*
 * regcache-info: what regcache offers a process like this one on this
 * machine, and why not more.
 *
 * It creates a cache the way an application does and names the monitor the
 * process got. Then, for every monitor, it says whether this process could
 * run it and, where not, why: capabilities, sysctls, kernel BTF, seccomp,
 * userfaultfd, the node service's socket. Each monitor is tried for real in
 * a child process of its own (the monitor is process-wide and chosen once),
 * with the library's log captured, so the verdict is the library's and the
 * reasons are the facts behind it. It also prints the pinned-memory limit,
 * the registrars built in and the version. --json prints the same for
 * machines. Run it as the user (and in the container) whose processes you
 * want to know about: the answer depends on who asks.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/types.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regcache.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef MEMBARRIER_CMD_QUERY
#define MEMBARRIER_CMD_QUERY 0
#endif

/* Capability numbers (linux/capability.h of 5.8+, where CAP_BPF appeared). */
enum {
	INFO_CAP_IPC_LOCK = 14,
	INFO_CAP_SYS_PTRACE = 19,
	INFO_CAP_SYS_ADMIN = 21,
	INFO_CAP_PERFMON = 38,
	INFO_CAP_BPF = 39,
};

static const struct {
	const char *name;
	int bit;
} caps_shown[] = {
	{ "CAP_BPF", INFO_CAP_BPF },
	{ "CAP_PERFMON", INFO_CAP_PERFMON },
	{ "CAP_SYS_ADMIN", INFO_CAP_SYS_ADMIN },
	{ "CAP_IPC_LOCK", INFO_CAP_IPC_LOCK },
	{ "CAP_SYS_PTRACE", INFO_CAP_SYS_PTRACE },
};
#define N_CAPS (sizeof(caps_shown) / sizeof(caps_shown[0]))

static const char *const sysctls_shown[] = {
	"kernel.unprivileged_bpf_disabled",
	"vm.unprivileged_userfaultfd",
	"vm.max_map_count",
	"kernel.io_uring_disabled",
	"kernel.perf_event_paranoid",
};
#define N_SYSCTLS (sizeof(sysctls_shown) / sizeof(sysctls_shown[0]))
enum { SC_BPF, SC_UFFD, SC_MAP_COUNT, SC_URING, SC_PERF };

/* Syscalls a monitor or a registrar needs; each probe is a call that the
 * kernel rejects with EINVAL or EFAULT (or answers harmlessly) when the
 * syscall itself is allowed, so only a filter or a missing syscall gives
 * something else. */
enum { SYS_P_BPF, SYS_P_UFFD, SYS_P_PERF, SYS_P_URING, SYS_P_MEMBARRIER, N_SYS_P };
static const char *const syscall_names[N_SYS_P] = {
	"bpf", "userfaultfd", "perf_event_open", "io_uring_setup", "membarrier",
};

/* The monitors in the order REGCACHE_MONITOR=auto tries them. */
static const char *const monitor_names[] = {
	"regcached", "bpf", "userfaultfd", "none",
};
#define N_MONITORS (sizeof(monitor_names) / sizeof(monitor_names[0]))
#define MAX_REASONS 8
#define MAX_LOG 6
#define TEXT 400

struct monitor_report {
	const char *name;
	bool known;		/* this library has the backend */
	bool works;		/* REGCACHE_MONITOR=name got it */
	int nreasons;
	char reasons[MAX_REASONS][TEXT];
	int nlog;
	char log[MAX_LOG][TEXT];	/* the library's own lines, if it failed */
};

struct info {
	char version[64];
	char header_version[64];
	char kernel[3 * sizeof(((struct utsname *)0)->release)];
	uid_t uid, euid;
	const char *monitor;		/* what regcache_create() got */
	const char *monitor_env;	/* $REGCACHE_MONITOR, or NULL */
	struct monitor_report mon[N_MONITORS];
	bool verbs, io_uring;
	uint64_t cap_eff;
	bool caps_known;
	long sysctl[N_SYSCTLS];		/* -1: unreadable */
	long map_count;
	bool btf;
	char btf_err[64];
	char tracefs[TEXT];		/* mount point, or "" */
	int seccomp;			/* -1 unknown, 0 off, 1 strict, 2 filter */
	int sys_err[N_SYS_P];		/* 0: allowed, else the errno */
	int uffd_syscall_err;		/* 0: a userfaultfd was created */
	int uffd_dev_err;		/* same through /dev/userfaultfd */
	bool procmap_query;
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool socket_from_env;
	bool socket_exists, socket_connects;
	int socket_err;			/* why not, if not */
	struct rlimit memlock;
	bool memlock_known;
	size_t default_max_bytes;
	const char *max_bytes_rule;
	bool charged;			/* pinning counts against RLIMIT_MEMLOCK */
};

/* Copy @s into @out[@len], cut to fit. */
static void copy_text(char *out, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n >= len)
		n = len - 1;
	memcpy(out, s, n);
	out[n] = 0;
}

static bool has_cap(const struct info *in, int bit)
{
	return in->caps_known && (in->cap_eff >> bit) & 1;
}

static int add_reason(struct monitor_report *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int add_reason(struct monitor_report *m, const char *fmt, ...)
{
	va_list ap;

	if (m->nreasons >= MAX_REASONS)
		return -1;
	va_start(ap, fmt);
	vsnprintf(m->reasons[m->nreasons++], TEXT, fmt, ap);
	va_end(ap);
	return 0;
}

/* ---------------------------------------------------------------------
 * Facts about this process and this kernel
 * ------------------------------------------------------------------- */

/* A "Name:\tvalue" line of /proc/self/status, or false. */
static bool status_field(const char *name, char *out, size_t len)
{
	char line[256];
	size_t n = strlen(name);
	bool found = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, n) && line[n] == ':') {
			char *v = line + n + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = 0;
			copy_text(out, len, v);
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

static long read_sysctl(const char *name)
{
	char path[128], buf[64];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	for (char *p = path + strlen("/proc/sys/"); *p; p++)
		if (*p == '.')
			*p = '/';
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

static long count_maps(void)
{
	long n = 0;
	int c;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void find_tracefs(char *out, size_t len)
{
	char line[1024];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	out[0] = 0;
	if (!f)
		return;
	/* "id parent maj:min root mountpoint opts [tags] - fstype src opts" */
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		char mnt[512], type[64];

		if (!sep || sscanf(sep + 3, "%63s", type) != 1 ||
		    strcmp(type, "tracefs"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) {
			copy_text(out, len, mnt);
			break;
		}
	}
	fclose(f);
}

static int probe_syscall(int which)
{
	long ret;

	errno = 0;
	switch (which) {
	case SYS_P_BPF:
		/* An unknown command. */
		ret = syscall(SYS_bpf, 0x7fff, NULL, 0);
		break;
	case SYS_P_UFFD:
		/* Unknown flags (checked after the privilege test, which
		 * UFFD_USER_MODE_ONLY passes). */
		ret = syscall(SYS_userfaultfd, ~0u);
		break;
	case SYS_P_PERF:
		/* Unknown flags. */
		ret = syscall(SYS_perf_event_open, NULL, 0, -1, -1, ~0ul);
		break;
	case SYS_P_URING:
		/* No parameters. */
		ret = syscall(SYS_io_uring_setup, 0, NULL);
		break;
	default:
		ret = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
		break;
	}
	if (ret >= 0) {
		if (which != SYS_P_MEMBARRIER)
			close((int)ret);
		return 0;
	}
	return errno == EINVAL || errno == EFAULT ? 0 : errno;
}

static void probe_userfaultfd(struct info *in)
{
	int fd = (int)syscall(SYS_userfaultfd,
			      O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	in->uffd_syscall_err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	in->uffd_dev_err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
}

/* The kernel's struct procmap_query (Linux 6.11, not in Debian 12's
 * headers); only its leading fields matter to a probe. */
struct info_procmap_query {
	__u64 size, query_flags, query_addr, vma_start, vma_end, vma_flags,
		vma_page_size, vma_offset, inode;
	__u32 dev_major, dev_minor, vma_name_size, build_id_size;
	__u64 vma_name_addr, build_id_addr;
};
#define INFO_PROCMAP_QUERY _IOWR('f', 17, struct info_procmap_query)

static bool probe_procmap_query(void)
{
	struct info_procmap_query q = {
		.size = sizeof(q),
		.query_flags = 0x10,	/* covering or next */
		.query_addr = (uintptr_t)&q,
	};
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = ioctl(fd, INFO_PROCMAP_QUERY, &q) == 0 &&
	     q.vma_start <= (uintptr_t)&q && (uintptr_t)&q < q.vma_end;
	close(fd);
	return ok;
}

/* The node service's socket: present, and does something accept on it? */
static void probe_socket(struct info *in)
{
	const char *env = getenv("REGCACHE_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static const int types[] = { SOCK_SEQPACKET, SOCK_STREAM };
	struct stat st;

	in->socket_from_env = env && *env;
	copy_text(in->socket_path, sizeof(in->socket_path),
		  in->socket_from_env ? env : "/run/regcache/regcached.sock");
	if (stat(in->socket_path, &st)) {
		in->socket_err = errno;
		return;
	}
	in->socket_exists = true;
	if (!S_ISSOCK(st.st_mode)) {
		in->socket_err = ENOTSOCK;
		return;
	}
	copy_text(sa.sun_path, sizeof(sa.sun_path), in->socket_path);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			in->socket_err = errno;
			return;
		}
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(fd);
			in->socket_connects = true;
			in->socket_err = 0;
			return;
		}
		in->socket_err = errno;
		close(fd);
		/* The other socket type, if this one was the wrong one. */
		if (in->socket_err != EPROTOTYPE)
			return;
	}
}

/* What the cache does when params.max_bytes is 0 (include/regcache.h). */
static void memlock_budget(struct info *in)
{
	const char *env = getenv("REGCACHE_MAX_BYTES");
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	in->memlock_known = !getrlimit(RLIMIT_MEMLOCK, &in->memlock);
	/* io_uring and ibv_reg_mr charge pinned pages to RLIMIT_MEMLOCK
	 * unless the process has CAP_IPC_LOCK. */
	in->charged = !has_cap(in, INFO_CAP_IPC_LOCK);
	if (env && *env) {
		in->default_max_bytes = 0;
		in->max_bytes_rule = "from REGCACHE_MAX_BYTES";
	} else if (in->memlock_known &&
		   in->memlock.rlim_cur != RLIM_INFINITY && geteuid() != 0) {
		in->default_max_bytes = in->memlock.rlim_cur / 4 * 3;
		in->max_bytes_rule = "3/4 of the soft RLIMIT_MEMLOCK";
	} else {
		in->default_max_bytes =
			pages > 0 ? (size_t)pages * (size_t)page / 4 : 0;
		in->max_bytes_rule = "1/4 of physical memory (root or no "
				     "finite RLIMIT_MEMLOCK)";
	}
}

static void gather_facts(struct info *in)
{
	char buf[64];
	struct utsname u;

	in->uid = getuid();
	in->euid = geteuid();
	if (!uname(&u))
		snprintf(in->kernel, sizeof(in->kernel), "%s %s %s", u.sysname,
			 u.release, u.machine);
	if (status_field("CapEff", buf, sizeof(buf))) {
		in->cap_eff = strtoull(buf, NULL, 16);
		in->caps_known = true;
	}
	in->seccomp = status_field("Seccomp", buf, sizeof(buf)) ? atoi(buf) : -1;
	for (size_t i = 0; i < N_SYSCTLS; i++)
		in->sysctl[i] = read_sysctl(sysctls_shown[i]);
	in->map_count = count_maps();
	in->btf = !access("/sys/kernel/btf/vmlinux", R_OK);
	if (!in->btf)
		copy_text(in->btf_err, sizeof(in->btf_err), strerror(errno));
	find_tracefs(in->tracefs, sizeof(in->tracefs));
	for (int i = 0; i < N_SYS_P; i++)
		in->sys_err[i] = probe_syscall(i);
	probe_userfaultfd(in);
	in->procmap_query = probe_procmap_query();
	probe_socket(in);
	memlock_budget(in);
	/* The registrars are exported calls of the library itself. */
	in->io_uring = dlsym(RTLD_DEFAULT, "regcache_uring_create") != NULL;
	in->verbs = dlsym(RTLD_DEFAULT, "regcache_verbs_create") != NULL;
}

/* ---------------------------------------------------------------------
 * The monitors, each tried in a child of its own
 * ------------------------------------------------------------------- */

static int null_reg(void *ctx, void *addr, size_t len, unsigned access,
		    void **handle)
{
	(void)ctx, (void)addr, (void)len, (void)access, (void)handle;
	return -ENODEV;
}

static void null_dereg(void *ctx, void *handle)
{
	(void)ctx, (void)handle;
}

static const struct regcache_ops null_ops = {
	.reg = null_reg,
	.dereg = null_dereg,
};

/* What an application gets: a cache with default parameters, then the name
 * of the monitor behind it. */
static const char *monitor_of_new_cache(void)
{
	struct regcache_params params = { .ops = &null_ops };
	struct regcache *cache;
	const char *name;

	if (regcache_create(&params, &cache))
		return NULL;
	name = regcache_monitor_name();
	regcache_destroy(cache);
	return name;
}

/* Keep a library log line that says something about the backend: drop the
 * "regcache <level>: func:line: " prefix and the lines every run prints. */
static void keep_log_line(struct monitor_report *m, const char *line)
{
	const char *msg = line;

	if (!strncmp(msg, "regcache ", 9)) {
		const char *p = strstr(msg, ": ");

		if (p && (p = strstr(p + 2, ": ")))
			msg = p + 2;
	}
	if (!*msg || !strncmp(msg, "cache ", 6) ||
	    !strncmp(msg, "REGCACHE_MONITOR=", 17) ||
	    (strstr(msg, "monitor backend \"") && strstr(msg, "\" started")))
		return;
	if (m->nlog < MAX_LOG)
		copy_text(m->log[m->nlog++], TEXT, msg);
}

/*
 * Try monitor @m->name with REGCACHE_MONITOR set, in a child: whether the
 * process got it, and the library's info-level log of the attempt. A
 * library that does not know the name says so in its log ("is unknown").
 */
static void try_monitor(struct monitor_report *m)
{
	char buf[8192];
	size_t len = 0;
	int pfd[2], status;
	pid_t pid;
	ssize_t n;

	m->known = true;
	if (pipe2(pfd, O_CLOEXEC)) {
		add_reason(m, "cannot try it: pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		add_reason(m, "cannot try it: fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (pid == 0) {
		const char *got;

		dup2(pfd[1], STDERR_FILENO);
		setenv("REGCACHE_MONITOR", m->name, 1);
		setenv("REGCACHE_LOG", "info", 1);
		alarm(60);
		got = monitor_of_new_cache();
		_exit(!got ? 2 : strcmp(got, m->name) ? 1 : 0);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) > 0 ||
	       (n < 0 && errno == EINTR))
		if (n > 0)
			len += (size_t)n;
	close(pfd[0]);
	buf[len] = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	m->works = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 2)
		add_reason(m, "the trial process failed (%s)",
			   WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) :
						 "regcache_create() failed");
	if (strstr(buf, "is unknown"))
		m->known = false;
	if (m->works || !m->known)
		return;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		keep_log_line(m, line);
}

static const char *syscall_refusal(const struct info *in, int which)
{
	static char s[N_SYS_P][TEXT];
	int err = in->sys_err[which];

	snprintf(s[which], TEXT, "the %s syscall is refused (%s%s)",
		 syscall_names[which], strerror(err),
		 in->seccomp == 2 ? ", by this process's seccomp filter" :
		 err == ENOSYS	  ? ", not in this kernel" : "");
	return s[which];
}

/* The facts that explain why @m does not work for this process. */
static void explain(const struct info *in, struct monitor_report *m)
{
	bool admin = has_cap(in, INFO_CAP_SYS_ADMIN);

	if (!strcmp(m->name, "regcached")) {
		if (!m->known)
			add_reason(m, "not in this library (it does not know "
				      "REGCACHE_MONITOR=regcached)");
		if (!in->socket_exists && in->socket_err == EACCES)
			add_reason(m, "cannot reach %s: %s (a directory on "
				      "the path shuts this user out)",
				   in->socket_path, strerror(in->socket_err));
		else if (!in->socket_exists)
			add_reason(m, "no socket at %s (%s): the node service "
				      "regcached does not run here%s",
				   in->socket_path, strerror(in->socket_err),
				   in->socket_from_env ? "" :
				   ", or listens elsewhere (set REGCACHE_SOCKET)");
		else if (!in->socket_connects)
			add_reason(m, "cannot connect to %s: %s%s",
				   in->socket_path, strerror(in->socket_err),
				   in->socket_err == EACCES ?
				   " (the socket's or its directory's mode "
				   "shuts this user out)" :
				   in->socket_err == ECONNREFUSED ?
				   " (nothing listens on it: regcached is not running)" : "");
	} else if (!strcmp(m->name, "bpf")) {
		if (!m->known)
			add_reason(m, "not in this library (it was built "
				      "without clang, bpftool, libbpf or "
				      "kernel BTF)");
		if (!has_cap(in, INFO_CAP_BPF) && !admin)
			add_reason(m, "no CAP_BPF (nor CAP_SYS_ADMIN): loading "
				      "the tracing programs needs CAP_BPF and "
				      "CAP_PERFMON, or root%s",
				   in->sysctl[SC_BPF] > 0 ?
				   "; kernel.unprivileged_bpf_disabled is set"
				   : "");
		if (!has_cap(in, INFO_CAP_PERFMON) && !admin)
			add_reason(m, "no CAP_PERFMON (nor CAP_SYS_ADMIN)");
		if (!in->btf)
			add_reason(m, "no kernel BTF: /sys/kernel/btf/vmlinux: "
				      "%s (a kernel built without "
				      "CONFIG_DEBUG_INFO_BTF)", in->btf_err);
		if (in->sys_err[SYS_P_BPF])
			add_reason(m, "%s", syscall_refusal(in, SYS_P_BPF));
	} else if (!strcmp(m->name, "userfaultfd")) {
		if (!m->known)
			add_reason(m, "not in this library");
		if (in->uffd_syscall_err && in->uffd_dev_err) {
			add_reason(m, "cannot create a userfaultfd: "
				      "userfaultfd(UFFD_USER_MODE_ONLY): %s; "
				      "/dev/userfaultfd: %s",
				   strerror(in->uffd_syscall_err),
				   strerror(in->uffd_dev_err));
			if (in->sys_err[SYS_P_UFFD])
				add_reason(m, "%s",
					   syscall_refusal(in, SYS_P_UFFD));
		}
	}
	if (!m->nreasons && !m->nlog)
		add_reason(m, "unexplained: run with REGCACHE_LOG=debug");
}

static void try_monitors(struct info *in)
{
	for (size_t i = 0; i < N_MONITORS; i++) {
		struct monitor_report *m = &in->mon[i];

		m->name = monitor_names[i];
		try_monitor(m);
		if (!m->works)
			explain(in, m);
	}
}

/* ---------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------- */

static const char *human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4)
		v /= 1024, u++;
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

static const char *rlim_text(rlim_t v, char *buf, size_t len)
{
	if (v == RLIM_INFINITY)
		return "unlimited";
	return human(v, buf, len);
}

static const char *sys_text(int err)
{
	return err ? strerror(err) : "allowed";
}

static void print_text(const struct info *in)
{
	char a[32], b[32];

	printf("regcache %s", in->version);
	if (in->header_version[0] && strcmp(in->header_version, in->version))
		printf(" (built against the header of %s)", in->header_version);
	printf("\n%-13s %s, uid %u, euid %u\n", "kernel:", in->kernel,
	       (unsigned)in->uid, (unsigned)in->euid);
	printf("%-13s %s", "monitor:", in->monitor ? in->monitor : "(no cache)");
	if (in->monitor_env)
		printf("  (REGCACHE_MONITOR=%s)", in->monitor_env);
	else
		printf("  (what regcache_create() gives a process like this)");
	printf("\n%-13s io_uring%s%s\n", "registrars:",
	       in->io_uring ? "" : " (missing!)", in->verbs ? ", verbs" : "");

	printf("\nmonitors, in the order REGCACHE_MONITOR=auto tries them:\n");
	for (size_t i = 0; i < N_MONITORS; i++) {
		const struct monitor_report *m = &in->mon[i];
		bool chosen = in->monitor && !strcmp(in->monitor, m->name);

		printf("  %-12s %s%s\n", m->name,
		       m->works ? "available" : "unavailable",
		       chosen ? " (this process gets it)" : "");
		for (int r = 0; r < m->nreasons; r++)
			printf("      why: %s\n", m->reasons[r]);
		for (int l = 0; l < m->nlog; l++)
			printf("      library: %s\n", m->log[l]);
	}

	printf("\npinned memory:\n");
	if (in->memlock_known)
		printf("  RLIMIT_MEMLOCK  soft %s, hard %s; pinning is %s\n",
		       rlim_text(in->memlock.rlim_cur, a, sizeof(a)),
		       rlim_text(in->memlock.rlim_max, b, sizeof(b)),
		       in->charged ? "charged to it" :
				     "not charged to it (CAP_IPC_LOCK)");
	if (in->default_max_bytes)
		printf("  default max_bytes of a cache: %s (%s)\n",
		       human(in->default_max_bytes, a, sizeof(a)),
		       in->max_bytes_rule);
	else
		printf("  max_bytes of a cache: %s\n", in->max_bytes_rule);

	printf("\nwhat the monitors depend on:\n");
	printf("  capabilities   ");
	for (size_t i = 0; i < N_CAPS; i++)
		printf("%s%s %s", i ? ", " : "", caps_shown[i].name,
		       !in->caps_known ? "unknown" :
		       has_cap(in, caps_shown[i].bit) ? "yes" : "no");
	printf("\n");
	for (size_t i = 0; i < N_SYSCTLS; i++) {
		if (in->sysctl[i] < 0)
			printf("  %-37s unreadable\n", sysctls_shown[i]);
		else
			printf("  %-37s %ld\n", sysctls_shown[i], in->sysctl[i]);
	}
	printf("  %-37s %ld\n", "VMAs of this process", in->map_count);
	printf("  %-37s %s\n", "kernel BTF (/sys/kernel/btf/vmlinux)",
	       in->btf ? "present" : in->btf_err);
	printf("  %-37s %s\n", "tracefs", in->tracefs[0] ? in->tracefs :
	       "not mounted (not needed: the bpf monitor uses BTF tracepoints)");
	printf("  %-37s %s\n", "PROCMAP_QUERY",
	       in->procmap_query ? "available" :
	       "unavailable (Linux < 6.11): misses read /proc/self/maps");
	printf("  %-37s %s\n", "seccomp",
	       in->seccomp < 0 ? "unknown" : in->seccomp == 0 ? "off" :
	       in->seccomp == 1 ? "strict" : "filter");
	for (int i = 0; i < N_SYS_P; i++)
		printf("    %-35s %s\n", syscall_names[i],
		       sys_text(in->sys_err[i]));
	printf("  %-37s %s\n", "userfaultfd(UFFD_USER_MODE_ONLY)",
	       in->uffd_syscall_err ? strerror(in->uffd_syscall_err) : "created");
	printf("  %-37s %s\n", "/dev/userfaultfd",
	       in->uffd_dev_err ? strerror(in->uffd_dev_err) : "opened");
	printf("  %-37s %s%s: %s\n", "node service socket", in->socket_path,
	       in->socket_from_env ? " (REGCACHE_SOCKET)" : "",
	       in->socket_connects ? "accepts connections" :
	       strerror(in->socket_err));
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			printf("\\n");
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_key(const char *key)
{
	json_str(key);
	printf(": ");
}

static void json_rlim(rlim_t v)
{
	if (v == RLIM_INFINITY)
		printf("null");
	else
		printf("%llu", (unsigned long long)v);
}

static void json_err(int err, const char *ok)
{
	json_str(err ? strerror(err) : ok);
}

static void print_json(const struct info *in)
{
	printf("{\n  ");
	json_key("version");
	json_str(in->version);
	printf(",\n  ");
	json_key("kernel");
	json_str(in->kernel);
	printf(",\n  \"uid\": %u,\n  \"euid\": %u,\n  ", (unsigned)in->uid,
	       (unsigned)in->euid);
	json_key("monitor");
	if (in->monitor)
		json_str(in->monitor);
	else
		printf("null");
	printf(",\n  ");
	json_key("monitor_env");
	if (in->monitor_env)
		json_str(in->monitor_env);
	else
		printf("null");
	printf(",\n  \"monitors\": [");
	for (size_t i = 0; i < N_MONITORS; i++) {
		const struct monitor_report *m = &in->mon[i];

		printf("%s\n    {\"name\": ", i ? "," : "");
		json_str(m->name);
		printf(", \"available\": %s, \"in_library\": %s, \"reasons\": [",
		       m->works ? "true" : "false", m->known ? "true" : "false");
		for (int r = 0; r < m->nreasons; r++) {
			printf(r ? ", " : "");
			json_str(m->reasons[r]);
		}
		printf("], \"library_log\": [");
		for (int l = 0; l < m->nlog; l++) {
			printf(l ? ", " : "");
			json_str(m->log[l]);
		}
		printf("]}");
	}
	printf("\n  ],\n  \"registrars\": [\"io_uring\"%s],\n",
	       in->verbs ? ", \"verbs\"" : "");
	printf("  \"memlock\": {\"soft\": ");
	if (in->memlock_known)
		json_rlim(in->memlock.rlim_cur);
	else
		printf("null");
	printf(", \"hard\": ");
	if (in->memlock_known)
		json_rlim(in->memlock.rlim_max);
	else
		printf("null");
	printf(", \"charged\": %s, \"default_max_bytes\": ",
	       in->charged ? "true" : "false");
	if (in->default_max_bytes)
		printf("%zu", in->default_max_bytes);
	else
		printf("null");
	printf(", \"default_max_bytes_rule\": ");
	json_str(in->max_bytes_rule);
	printf("},\n  \"capabilities\": {");
	for (size_t i = 0; i < N_CAPS; i++) {
		printf("%s", i ? ", " : "");
		json_key(caps_shown[i].name);
		printf("%s", !in->caps_known ? "null" :
		       has_cap(in, caps_shown[i].bit) ? "true" : "false");
	}
	printf("},\n  \"sysctls\": {");
	for (size_t i = 0; i < N_SYSCTLS; i++) {
		printf("%s", i ? ", " : "");
		json_key(sysctls_shown[i]);
		if (in->sysctl[i] < 0)
			printf("null");
		else
			printf("%ld", in->sysctl[i]);
	}
	printf("},\n  \"vma_count\": %ld,\n  \"btf\": %s,\n  \"tracefs\": ",
	       in->map_count, in->btf ? "true" : "false");
	if (in->tracefs[0])
		json_str(in->tracefs);
	else
		printf("null");
	printf(",\n  \"procmap_query\": %s,\n  \"seccomp\": ",
	       in->procmap_query ? "true" : "false");
	if (in->seccomp < 0)
		printf("null");
	else
		json_str(in->seccomp == 0 ? "off" :
			 in->seccomp == 1 ? "strict" : "filter");
	printf(",\n  \"syscalls\": {");
	for (int i = 0; i < N_SYS_P; i++) {
		printf("%s", i ? ", " : "");
		json_key(syscall_names[i]);
		json_err(in->sys_err[i], "allowed");
	}
	printf("},\n  \"userfaultfd\": {\"syscall\": ");
	json_err(in->uffd_syscall_err, "created");
	printf(", \"dev\": ");
	json_err(in->uffd_dev_err, "opened");
	printf("},\n  \"node_socket\": {\"path\": ");
	json_str(in->socket_path);
	printf(", \"from_env\": %s, \"exists\": %s, \"connects\": %s, "
	       "\"error\": ",
	       in->socket_from_env ? "true" : "false",
	       in->socket_exists ? "true" : "false",
	       in->socket_connects ? "true" : "false");
	if (in->socket_connects)
		printf("null");
	else
		json_str(strerror(in->socket_err));
	printf("}\n}\n");
}

#ifdef REGCACHE_VERSION_MAJOR
static void version_str(char *out, const char *v)
{
	copy_text(out, 64, v);
}

static void version_num(char *out, unsigned long long v)
{
	snprintf(out, 64, "%llu", v);
}
#endif

/* The library's version, and the header's when they differ. */
static void version(struct info *in)
{
#ifdef REGCACHE_VERSION_MAJOR
#ifdef REGCACHE_VERSION_PATCH
	snprintf(in->header_version, sizeof(in->header_version), "%d.%d.%d",
		 (int)REGCACHE_VERSION_MAJOR, (int)REGCACHE_VERSION_MINOR,
		 (int)REGCACHE_VERSION_PATCH);
#else
	snprintf(in->header_version, sizeof(in->header_version), "%d.%d",
		 (int)REGCACHE_VERSION_MAJOR, (int)REGCACHE_VERSION_MINOR);
#endif
	_Generic(regcache_version(), const char *: version_str,
		 char *: version_str, default: version_num)(in->version,
							    regcache_version());
#else
	/* A library without regcache_version(): the project's version at
	 * build time. */
	copy_text(in->version, sizeof(in->version), INFO_BUILD_VERSION);
#endif
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: regcache-info [--json]\n"
		"Prints which monitor regcache gives a process like this one\n"
		"here, why each other monitor is unavailable, the pinned-memory\n"
		"limit, the registrars built in and the version. Run it as the\n"
		"user and in the container whose processes you care about.\n"
		"  --json   the same, as one JSON object\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static struct info in;
	bool json = false;
	int c;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	version(&in);
	gather_facts(&in);
	/* The children first: the library reads REGCACHE_LOG once per
	 * process, and they must read it before this process does. */
	fflush(stdout);
	try_monitors(&in);
	in.monitor_env = getenv("REGCACHE_MONITOR");
	if (in.monitor_env && !*in.monitor_env)
		in.monitor_env = NULL;
	in.monitor = monitor_of_new_cache();
	if (json)
		print_json(&in);
	else
		print_text(&in);
	return 0;
}
