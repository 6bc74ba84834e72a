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
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regcache.h>

#include "base/env.h"
#include "info.h"

/* As the library's "auto" tries them; a library without the node service's
 * backend says the name is unknown, and that is reported. */
const char *const monitor_names[N_MONITORS] = {
	"regcached", "bpf", "userfaultfd", "none",
};

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
	const char *msg = line, *p;
	size_t len;

	if (!strncmp(msg, "regcache ", 9)) {
		p = strstr(msg, ": ");
		if (p && (p = strstr(p + 2, ": ")))
			msg = p + 2;
	}
	if (!*msg || !strncmp(msg, "cache ", 6) ||
	    !strncmp(msg, "REGCACHE_MONITOR=", 17) ||
	    (strstr(msg, "monitor backend \"") && strstr(msg, "\" started")))
		return;
	if (m->nlog >= MAX_LOG)
		return;
	/* The pointer to this tool says nothing here. */
	p = strstr(msg, " (regcache-info says why)");
	len = p ? (size_t)(p - msg) : strlen(msg);
	copy_text(m->log[m->nlog], len + 1 < TEXT ? len + 1 : TEXT, msg);
	m->nlog++;
}

/* The bpf monitor's "attach mode MODE: why" line (bpf.c:bpf_start): how
 * its syscall stages attach, fentry or sys_enter/sys_exit, and why. */
static void keep_attach_mode(struct monitor_report *m, const char *log)
{
	const char *p = strstr(log, "attach mode ");
	size_t len;

	if (!p)
		return;
	p += strlen("attach mode ");
	len = strcspn(p, "\n");
	copy_text(m->how, len + 1 < TEXT ? len + 1 : TEXT, p);
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
	keep_attach_mode(m, buf);
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
			add_reason(m, "not in this library (building it "
				      "needs clang, bpftool, libbpf, kernel "
				      "BTF and x86_64; see cmake's output)");
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

/* The library's version, and the header's when they differ. */
static void version(struct info *in)
{
#ifdef REGCACHE_VERSION_MAJOR
	/* major * 10000 + minor * 100 + patch, as REGCACHE_VERSION. */
	int v = regcache_version();

	snprintf(in->version, sizeof(in->version), "%d.%d.%d", v / 10000,
		 v / 100 % 100, v % 100);
	snprintf(in->header_version, sizeof(in->header_version), "%d.%d.%d",
		 REGCACHE_VERSION_MAJOR, REGCACHE_VERSION_MINOR,
		 REGCACHE_VERSION_PATCH);
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
	info_gather_facts(&in);
	/* The children first: the library reads REGCACHE_LOG once per
	 * process, and they must read it before this process does. */
	fflush(stdout);
	try_monitors(&in);
	in.monitor_env = rc_env_str(RC_ENV_MONITOR);
	in.monitor = monitor_of_new_cache();
	if (json)
		info_print_json(&in);
	else
		info_print_text(&in);
	return 0;
}
