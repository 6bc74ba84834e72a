/* SPDX-License-Identifier: MIT */
/*
 * regcache-info: the facts about this process and this kernel that decide
 * which monitor it can run (see info.c): capabilities, sysctls, BTF,
 * tracefs, seccomp, userfaultfd, PROCMAP_QUERY, the node service's socket
 * and the pinned-memory limit.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/env.h"
#include "info.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef MEMBARRIER_CMD_QUERY
#define MEMBARRIER_CMD_QUERY 0
#endif

const struct info_cap caps_shown[N_CAPS] = {
	{ "CAP_BPF", INFO_CAP_BPF },
	{ "CAP_PERFMON", INFO_CAP_PERFMON },
	{ "CAP_SYS_ADMIN", INFO_CAP_SYS_ADMIN },
	{ "CAP_IPC_LOCK", INFO_CAP_IPC_LOCK },
	{ "CAP_SYS_PTRACE", INFO_CAP_SYS_PTRACE },
};

const char *const sysctls_shown[N_SYSCTLS] = {
	[SC_BPF] = "kernel.unprivileged_bpf_disabled",
	[SC_UFFD] = "vm.unprivileged_userfaultfd",
	[SC_MAP_COUNT] = "vm.max_map_count",
	[SC_URING] = "kernel.io_uring_disabled",
	[SC_PERF] = "kernel.perf_event_paranoid",
};

const char *const syscall_names[N_SYS_P] = {
	[SYS_P_BPF] = "bpf",
	[SYS_P_UFFD] = "userfaultfd",
	[SYS_P_PERF] = "perf_event_open",
	[SYS_P_URING] = "io_uring_setup",
	[SYS_P_MEMBARRIER] = "membarrier",
};

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

/* Each probe is a call that the kernel rejects with EINVAL or EFAULT (or
 * answers harmlessly) when the syscall itself is allowed, so only a filter
 * or a missing syscall gives something else. */
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
	const char *env = rc_env_str(RC_ENV_SOCKET);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static const int types[] = { SOCK_SEQPACKET, SOCK_STREAM };
	struct stat st;

	in->socket_from_env = env != NULL;
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
	const char *env = rc_env_str(RC_ENV_MAX_BYTES);
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	in->memlock_known = !getrlimit(RLIMIT_MEMLOCK, &in->memlock);
	/* io_uring and ibv_reg_mr charge pinned pages to RLIMIT_MEMLOCK
	 * unless the process has CAP_IPC_LOCK. */
	in->charged = !has_cap(in, INFO_CAP_IPC_LOCK);
	if (env) {
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

void info_gather_facts(struct info *in)
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
