/* SPDX-License-Identifier: MIT */
/* regcache-info: the report, as text for people or as JSON (--json). */
#include <stdio.h>
#include <string.h>

#include "info.h"

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

void info_print_text(const struct info *in)
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
		if (m->how[0])
			printf("      attach: %s\n", m->how);
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

void info_print_json(const struct info *in)
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
		printf("], \"attach\": ");
		if (m->how[0])
			json_str(m->how);
		else
			printf("null");
		printf(", \"library_log\": [");
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
