/*
 * The eBPF monitor's programs this process holds, found through its own
 * fds (/proc/self/fd -> anon_inode:bpf-prog), so that sets loaded by other
 * processes at the same time do not count; by how they attach, with how
 * often each kind ran (run_cnt counts only while BPF stats are enabled:
 * bpf_enable_stats()). Names are those of src/monitor/bpf/rc_monitor.bpf.c,
 * cut to the kernel's 15 characters.
 */
#ifndef TESTS_BPF_HELD_PROGS_H
#define TESTS_BPF_HELD_PROGS_H

#include <bpf/bpf.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

struct t_bpf_held {
	unsigned syscall_tp;	/* rc_sys_enter, rc_sys_exit */
	unsigned fentry;	/* rc_fe*, rc_fx*: fentry/fexit */
	unsigned other;		/* the other rc_* programs */
	__u64 runs_syscall_tp, runs_fentry, runs_other;
};

static inline void t_bpf_held(struct t_bpf_held *h)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	T_REQUIRE(d);
	memset(h, 0, sizeof(*h));
	while ((e = readdir(d))) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		char path[300], target[64];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (strcmp(target, "anon_inode:bpf-prog") ||
		    bpf_obj_get_info_by_fd(atoi(e->d_name), &info, &len) ||
		    strncmp(info.name, "rc_", 3))
			continue;
		if (!strncmp(info.name, "rc_sys_", 7)) {
			h->syscall_tp++;
			h->runs_syscall_tp += info.run_cnt;
		} else if (!strncmp(info.name, "rc_fe", 5) ||
			   !strncmp(info.name, "rc_fx", 5)) {
			h->fentry++;
			h->runs_fentry += info.run_cnt;
		} else {
			h->other++;
			h->runs_other += info.run_cnt;
		}
	}
	closedir(d);
}

#endif
