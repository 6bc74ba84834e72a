/* SPDX-License-Identifier: MIT */
/*
 * regcache-info's parts: info.c (each monitor tried in a child, the reasons
 * it is unavailable, main), info_facts.c (the facts about this process and
 * kernel the reasons rest on) and info_print.c (text and JSON).
 */
#ifndef TOOLS_INFO_H
#define TOOLS_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/utsname.h>

/* Capability numbers (linux/capability.h of 5.8+, where CAP_BPF appeared). */
enum {
	INFO_CAP_IPC_LOCK = 14,
	INFO_CAP_SYS_PTRACE = 19,
	INFO_CAP_SYS_ADMIN = 21,
	INFO_CAP_PERFMON = 38,
	INFO_CAP_BPF = 39,
};

/* The capabilities shown, by name and bit. */
enum { N_CAPS = 5 };
extern const struct info_cap {
	const char *name;
	int bit;
} caps_shown[N_CAPS];

/* The sysctls shown (names as in sysctl(8)), indexed by SC_*. */
enum { SC_BPF, SC_UFFD, SC_MAP_COUNT, SC_URING, SC_PERF, N_SYSCTLS };
extern const char *const sysctls_shown[N_SYSCTLS];

/* Syscalls a monitor or a registrar needs, probed for seccomp filters. */
enum { SYS_P_BPF, SYS_P_UFFD, SYS_P_PERF, SYS_P_URING, SYS_P_MEMBARRIER, N_SYS_P };
extern const char *const syscall_names[N_SYS_P];

/* The monitors in the order REGCACHE_MONITOR=auto tries them. */
enum { N_MONITORS = 4 };
extern const char *const monitor_names[N_MONITORS];

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
	char how[TEXT];		/* how it attaches, and why (bpf), or "" */
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
static inline void copy_text(char *out, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n >= len)
		n = len - 1;
	memcpy(out, s, n);
	out[n] = 0;
}

static inline bool has_cap(const struct info *in, int bit)
{
	return in->caps_known && (in->cap_eff >> bit) & 1;
}

/* Fill in everything but the version and the monitors. */
void info_gather_facts(struct info *in);

void info_print_text(const struct info *in);
void info_print_json(const struct info *in);

#endif
