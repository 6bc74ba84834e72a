/* SPDX-License-Identifier: MIT */
/*
 * Shared by the tests/bpf_*.c programs: require the eBPF monitor (skip with
 * a reason when BPF cannot be loaded here), and the "change under a cached
 * region" scenario is t_case_begin/t_case_end in helpers.h.
 */
#ifndef T_BPF_HELPERS_H
#define T_BPF_HELPERS_H

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "helpers.h"

/* Can this process load tracing BPF programs at all? Probed with the
 * smallest tracepoint program; only EPERM/EACCES mean "not here". */
static inline int t_bpf_probe(void)
{
	struct bpf_insn insns[] = {
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },	/* r0 = 0 */
		{ .code = 0x95 },				/* exit */
	};
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_TRACEPOINT;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (uintptr_t)"GPL";
	fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Make sure the process-wide monitor is the bpf one, or exit: 77 when BPF
 * is not permitted here, 1 when it should have worked. Call after creating
 * the first cache. */
static inline void t_bpf_require(void)
{
	const char *name = regcache_monitor_name();
	int probe;

	if (!strcmp(name, "bpf"))
		return;
	probe = t_bpf_probe();
	if (probe == -EPERM || probe == -EACCES) {
		printf("SKIP: this process may not load BPF programs (%s); "
		       "run as root or with CAP_BPF+CAP_PERFMON\n",
		       strerror(-probe));
		exit(T_EXIT_SKIP);
	}
	fprintf(stderr, "monitor is \"%s\", expected \"bpf\" (BPF probe: %s); "
		"run with REGCACHE_MONITOR=bpf REGCACHE_LOG=info for why\n",
		name, probe ? strerror(-probe) : "loads fine");
	exit(T_EXIT_FAIL);
}

/* Before the first cache: the environment must ask for bpf (CTest sets it;
 * set it here too so the program also works by hand). */
static inline void t_bpf_env(void)
{
	setenv("REGCACHE_MONITOR", "bpf", 0);
}


#endif
