/* SPDX-License-Identifier: MIT */
/* The environment table and its accessors (see env.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "log.h"

#define WORDS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/*
 * Sorted by name. README.md's configuration table is this table, printed
 * by `env-table --markdown` (tests/env-table.c); .def, .component and
 * .meaning are its cells, so they are written for a reader of README.md.
 */
const struct rc_env rc_env_table[RC_ENV_COUNT] = {
	[RC_ENV_BPF_ATTACH] = {
		"REGCACHE_BPF_ATTACH", RC_ENV_CHOICE, "`auto`", 0,
		WORDS("auto", "fentry", "syscalls"), "bpf monitor, regcached",
		"how the eBPF programs attach: `auto` (fentry where the kernel "
		"allows it, else `sys_enter`/`sys_exit`), `fentry`, "
		"`syscalls`; "
		"any other value: the eBPF monitor refuses to start; see "
		"[monitor-bpf.md](docs/monitor-bpf.md)" },
	[RC_ENV_BPF_IGNORE_DROPS] = {
		"REGCACHE_BPF_IGNORE_DROPS", RC_ENV_FLAG, "unset", 0, NULL,
		"bpf monitor",
		"tests: ignore the ring's drop counter, so that the records "
		"written into its headroom alone must cover a lost one" },
	[RC_ENV_BPF_NO_PROCMAP_QUERY] = {
		"REGCACHE_BPF_NO_PROCMAP_QUERY", RC_ENV_FLAG, "unset", 0, NULL,
		"bpf and regcached monitors",
		"look VMAs up in `/proc/self/maps`, not with `PROCMAP_QUERY` "
		"(Linux 6.11+)" },
	[RC_ENV_BRIDGE_DIR] = {
		"REGCACHE_BRIDGE_DIR", RC_ENV_STRING,
		"the bridges built or installed with the tool", 0, NULL,
		"regcache-run, regcache-demo",
		"the directory of `libregcache-ucx.so.0` and "
		"`libregcache-fabric.so.0`" },
	[RC_ENV_DEMO_BRIDGE_CHILD] = {
		"REGCACHE_DEMO_BRIDGE_CHILD", RC_ENV_STRING, "unset", 0, NULL,
		"regcache-demo (internal)",
		"set by regcache-demo for a child it re-executes with a bridge "
		"preloaded: which mode it runs and its socket" },
	[RC_ENV_DEMO_BRIDGE_OPT] = {
		"REGCACHE_DEMO_BRIDGE_OPT", RC_ENV_STRING, "unset", 0, NULL,
		"regcache-demo (internal)",
		"set by regcache-demo for that child: the parent's options" },
	[RC_ENV_FABRIC_IMPORT] = {
		"REGCACHE_FABRIC_IMPORT", RC_ENV_BOOL, "1", 1, NULL,
		"libfabric bridge",
		"`0`: the preloaded bridge does not import its monitor when it "
		"loads; the program calls `regcache_fabric_import()`" },
	[RC_ENV_FABRIC_PIN_CHECK] = {
		"REGCACHE_FABRIC_PIN_CHECK", RC_ENV_BOOL, "1", 1, NULL,
		"libfabric bridge",
		"tests' negative control only: `0` skips the check that a "
		"range did not change while it was being pinned" },
	[RC_ENV_FABRIC_VERSIONS] = {
		"REGCACHE_FABRIC_VERSIONS", RC_ENV_STRING,
		"the versions the bridge was tested with", 0, NULL,
		"libfabric bridge",
		"the libfabric versions (`major.minor`, comma-separated) the "
		"bridge imports its monitor into" },
	[RC_ENV_LOG] = {
		"REGCACHE_LOG", RC_ENV_CHOICE, "`warn`", 1,
		WORDS("error", "warn", "info", "debug"),
		"library, bridges, tools", "what is printed on stderr" },
	[RC_ENV_MAX_BYTES] = {
		"REGCACHE_MAX_BYTES", RC_ENV_SIZE,
		"3/4 of `RLIMIT_MEMLOCK`; none with CAP_IPC_LOCK", 0, NULL,
		"library, regcache-info",
		"the process's pinned-memory budget, shared by every cache; a "
		"get larger than all of it fails at once with `-E2BIG`" },
	[RC_ENV_MAX_REGIONS] = {
		"REGCACHE_MAX_REGIONS", RC_ENV_SIZE,
		"65536 (io_uring: 16384 slots)", 0, NULL, "library",
		"for a cache whose `params.max_regions` is 0: idle regions "
		"beyond this are evicted, least recently used first" },
	[RC_ENV_MONITOR] = {
		"REGCACHE_MONITOR", RC_ENV_CHOICE, "`auto`", 0,
		WORDS("auto", "regcached", "bpf", "userfaultfd", "uffd",
		      "none"),
		"library, regcache-info",
		"`auto`: regcached, then bpf, then userfaultfd, then none; a "
		"name: that monitor or none (`uffd` is `userfaultfd`)" },
	[RC_ENV_REGCACHED_FALLBACK_MS] = {
		"REGCACHE_REGCACHED_FALLBACK_MS", RC_ENV_MS, "5000", 5000, NULL,
		"regcached monitor",
		"how long the node service may stay away before the process "
		"falls back, live, to the next monitor; `0`: never (it stays "
		"uncached until the service is back)" },
	[RC_ENV_REGCACHED_TIMEOUT_MS] = {
		"REGCACHE_REGCACHED_TIMEOUT_MS", RC_ENV_SIZE, "5000", 0, NULL,
		"regcached monitor",
		"how many milliseconds to wait for each reply of the node "
		"service" },
	[RC_ENV_SOCKET] = {
		"REGCACHE_SOCKET", RC_ENV_STRING,
		"`/run/regcache/regcached.sock`", 0, NULL,
		"regcached monitor, regcache-info",
		"the node service's socket" },
	[RC_ENV_UCX_LINGER_US] = {
		"REGCACHE_UCX_LINGER_US", RC_ENV_US, "2000", 2000, NULL,
		"UCX bridge",
		"how long the forwarding thread keeps polling after the last "
		"change before it sleeps" },
	[RC_ENV_UCX_POLL_US] = {
		"REGCACHE_UCX_POLL_US", RC_ENV_US, "unset (sleep)", 0, NULL,
		"UCX bridge",
		"the forwarding thread polls at this period instead of "
		"sleeping until a change (`0` or 1 s or more: 20)" },
	[RC_ENV_UCX_THREAD] = {
		"REGCACHE_UCX_THREAD", RC_ENV_BOOL, "0", 0, NULL, "UCX bridge",
		"`1`: forward changes from the bridge's thread only, even "
		"where UCX's lookups reach the bridge" },
	[RC_ENV_UFFD_ALWAYS_PROBE] = {
		"REGCACHE_UFFD_ALWAYS_PROBE", RC_ENV_FLAG, "unset", 0, NULL,
		"userfaultfd monitor",
		"probe on every hit, even in a single-threaded process" },
	[RC_ENV_UFFD_NO_FOLLOW_CPU] = {
		"REGCACHE_UFFD_NO_FOLLOW_CPU", RC_ENV_FLAG, "unset", 0, NULL,
		"userfaultfd monitor",
		"do not move the monitor's thread to the application's CPU" },
	[RC_ENV_UFFD_NO_PROCMAP_QUERY] = {
		"REGCACHE_UFFD_NO_PROCMAP_QUERY", RC_ENV_FLAG, "unset", 0, NULL,
		"userfaultfd monitor",
		"look VMAs up in `/proc/self/maps`, not with `PROCMAP_QUERY` "
		"(Linux 6.11+)" },
	[RC_ENV_UFFD_SENTINEL_PROBE] = {
		"REGCACHE_UFFD_SENTINEL_PROBE", RC_ENV_FLAG, "unset", 0, NULL,
		"userfaultfd monitor",
		"hits probe the sentinel page, not an empty write-protect "
		"call" },
	[RC_ENV_UFFD_SHARED_FDS] = {
		"REGCACHE_UFFD_SHARED_FDS", RC_ENV_FLAG, "unset", 0, NULL,
		"userfaultfd monitor",
		"tests: the monitor's thread keeps the process's file table "
		"(no `CLOSE_RANGE_UNSHARE`)" },
	[RC_ENV_UFFD_WP_PROBE] = {
		"REGCACHE_UFFD_WP_PROBE", RC_ENV_FLAG, "unset", 0, NULL,
		"userfaultfd monitor",
		"the sentinel probe uses `UFFDIO_WRITEPROTECT`, not "
		"`UFFDIO_ZEROPAGE`" },
	[RC_ENV_URING_NO_SPARSE] = {
		"REGCACHE_URING_NO_SPARSE", RC_ENV_FLAG, "unset", 0, NULL,
		"io_uring registrar",
		"register the slot table as empty iovecs (the way of kernels "
		"before 5.19), not sparse" },
	[RC_ENV_VERBS_ODP] = {
		"REGCACHE_VERBS_ODP", RC_ENV_CHOICE,
		"the cache's flags; `auto` (= pinned)", -1,
		WORDS("auto", "implicit", "off"), "verbs registrar",
		"`implicit`: serve every verbs get from one implicit ODP MR "
		"where the device supports it; `off`; wins over the flags" },
};

const char *rc_env_str(enum rc_env_id id)
{
	const char *v = getenv(rc_env_table[id].name);

	return v && *v ? v : NULL;
}

bool rc_env_flag(enum rc_env_id id)
{
	const char *name = rc_env_table[id].name;
	const char *v = getenv(name);

	if (v && (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off") ||
		  !strcmp(v, "false")))
		rc_warn("%s=%s turns it on: it is on whenever set, whatever "
			"the value; unset it to turn it off", name, v);
	return v != NULL;
}

bool rc_env_bool(enum rc_env_id id)
{
	static const char *const on[] = { "1", "yes", "on", "true" };
	static const char *const off[] = { "0", "no", "off", "false" };
	const struct rc_env *e = &rc_env_table[id];
	const char *v = rc_env_str(id);

	if (!v)
		return e->def_value;
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		if (!strcmp(v, on[i]))
			return true;
		if (!strcmp(v, off[i]))
			return false;
	}
	rc_warn("ignoring %s=%s: expected 1 or 0 (yes/no, on/off, "
		"true/false); using %s", e->name, v, e->def);
	return e->def_value;
}

size_t rc_env_size(enum rc_env_id id)
{
	const char *name = rc_env_table[id].name;
	const char *v = rc_env_str(id);
	unsigned long long n;
	unsigned shift = 0;
	char *end;

	if (!v)
		return 0;
	errno = 0;
	n = strtoull(v, &end, 0);
	if (*end == 'k' || *end == 'K')
		shift = 10, end++;
	else if (*end == 'm' || *end == 'M')
		shift = 20, end++;
	else if (*end == 'g' || *end == 'G')
		shift = 30, end++;
	if (errno || *v == '-' || *end || !n || n > (SIZE_MAX >> shift)) {
		rc_warn("ignoring %s=%s: expected a positive number "
			"(optionally with K, M or G) that fits in size_t",
			name, v);
		return 0;
	}
	return (size_t)n << shift;
}

long long rc_env_time(enum rc_env_id id, bool *set)
{
	const struct rc_env *e = &rc_env_table[id];
	const char *v = rc_env_str(id);
	long long n;
	char *end;

	if (set)
		*set = false;
	if (!v)
		return e->def_value;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || n < 0 || end == v) {
		rc_warn("ignoring %s=%s: expected a number >= 0 of %s; "
			"using %s", e->name, v,
			e->type == RC_ENV_US ? "microseconds" : "milliseconds",
			e->def);
		return e->def_value;
	}
	if (set)
		*set = true;
	return n;
}

static int choice_index(const struct rc_env *e, const char *v)
{
	for (int i = 0; e->choices[i]; i++)
		if (!strcmp(v, e->choices[i]))
			return i;
	return -1;
}

int rc_env_choice_strict(enum rc_env_id id)
{
	const struct rc_env *e = &rc_env_table[id];
	const char *v = rc_env_str(id);

	return v ? choice_index(e, v) : (int)e->def_value;
}

int rc_env_choice(enum rc_env_id id)
{
	const struct rc_env *e = &rc_env_table[id];
	const char *v = rc_env_str(id);
	char expected[128];
	size_t n = 0;
	int i;

	if (!v)
		return (int)e->def_value;
	i = choice_index(e, v);
	if (i >= 0)
		return i;
	expected[0] = 0;
	for (int k = 0; e->choices[k] && n < sizeof(expected); k++)
		n += (size_t)snprintf(expected + n, sizeof(expected) - n,
				      "%s%s", k ? ", " : "", e->choices[k]);
	rc_warn("ignoring %s=%s: expected one of %s; using %s", e->name, v,
		expected, e->def);
	return (int)e->def_value;
}

const char *rc_env_choice_name(enum rc_env_id id, int index)
{
	const struct rc_env *e = &rc_env_table[id];

	for (int i = 0; e->choices && e->choices[i]; i++)
		if (i == index)
			return e->choices[i];
	return "?";
}
