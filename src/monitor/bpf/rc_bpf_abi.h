/* SPDX-License-Identifier: MIT */
/*
 * The ABI between the BPF programs (rc_monitor.bpf.c) and the user-space
 * backend (src/monitor/bpf.c): map sizes and the layout of every map value
 * and ring record. Included by both sides, so only fixed-width types.
 */
#ifndef RC_BPF_ABI_H
#define RC_BPF_ABI_H

/* Bytes of one process's ring buffer: 64 KiB holds 2730 records, fewer than
 * the monitor queue (RC_QUEUE_SIZE 4096), so one pull never overflows the
 * queue and a lost record is only ever reported as a drop. A burst
 * that overflows it is counted in rc_proc.drops and invalidates everything. */
#define RC_BPF_RING_BYTES (64u * 1024u)
/* Processes one loaded program set can serve (the maps are keyed by tgid). */
#define RC_BPF_MAX_PROCS 64
/* Threads that can be inside a monitored syscall at the same time. */
#define RC_BPF_MAX_PENDING 8192
/* Files (inodes) with a watched mapping. */
#define RC_BPF_MAX_FILES 4096

/* One ring record: [start, end) changed. {0, ~0} means everything. */
struct rc_bpf_range {
	__u64 start;
	__u64 end;
};

/* procs_state[tgid]: per-process counters written by the programs. */
struct rc_bpf_proc {
	__u64 drops;	/* records that did not fit in the ring */
	__u64 mm;	/* the process's mm_struct, learned at the first event */
};

/* pending[tid]: what a thread inside a monitored syscall is changing, so
 * that the in-lock and exit stages can publish it again. */
struct rc_bpf_pending {
	struct rc_bpf_range r[2];
	__u32 tgid;
	__u32 n;
};

/* files[{dev, ino}]: a file that a watched region maps. Any page of it that
 * leaves the page cache (truncate, hole punch, by any process) in
 * [pgoff_lo, pgoff_hi) invalidates everything of tgid. */
struct rc_bpf_file_key {
	__u64 dev;	/* kernel dev_t: major << 20 | minor */
	__u64 ino;
};

struct rc_bpf_file {
	__u32 tgid;
	__u32 pad;
	__u64 pgoff_lo;
	__u64 pgoff_hi;
};

#endif /* RC_BPF_ABI_H */
