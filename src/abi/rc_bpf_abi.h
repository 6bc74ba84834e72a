/* SPDX-License-Identifier: MIT */
/*
 * The ABI between the BPF programs (rc_monitor.bpf.c) and user space: the
 * in-process backend (src/monitor/bpf.c) and, for the node variant built
 * with RC_NODE, the regcached daemon (src/daemon/) and its clients
 * (src/monitor/regcached.c). Map sizes and the layout of every map value
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
 * that the in-lock and exit stages can publish it again: mremap's two
 * ranges, or a watched file's pages under each of its recorded mappings. */
#define RC_BPF_PENDING_RANGES 4
struct rc_bpf_pending {
	struct rc_bpf_range r[RC_BPF_PENDING_RANGES];
	__u32 tgid;
	__u32 n;
};

/* files[{dev, ino}]: a file that a watched region maps. A page of it that
 * leaves the page cache (truncate, hole punch, by any process) in
 * [pgoff_lo, pgoff_hi) invalidates, in tgid, the page's address under every
 * recorded mapping of the file: base[i] + pgoff * 4096, where base[i] is the
 * address of file offset 0 (vma_start - vma_offset, modulo 2^64). A watched
 * region's mapping cannot move while the region lives (moving it
 * invalidates the region), so its base stays valid. nbases 0 or above
 * RC_BPF_FILE_BASES (mapped in more places than recorded): everything. */
#define RC_BPF_FILE_BASES 4
struct rc_bpf_file_key {
	__u64 dev;	/* kernel dev_t: major << 20 | minor */
	__u64 ino;
};

struct rc_bpf_file {
	__u32 tgid;
	__u32 nbases;
	__u64 pgoff_lo;
	__u64 pgoff_hi;
	__u64 base[RC_BPF_FILE_BASES];
};

/* ---- node variant (regcached): one program set serves every client ---- */

/* Client processes one daemon serves, and library copies (a static and a
 * shared libregcache, say) per process: each copy has its own ring. */
#define RC_BPF_NODE_MAX_PROCS 4096
#define RC_BPF_NODE_SLOTS 4
/* Processes that may watch one file at the same time. */
#define RC_BPF_NODE_FILE_WATCHERS 8

/* procs[{tgid, slot}]: the ring of one library copy of process tgid. */
struct rc_bpf_node_key {
	__u32 tgid;
	__u32 slot;
};

/* procs_state[tgid] in the node variant. */
struct rc_bpf_node_proc {
	__u64 drops;	/* records that did not fit in a ring */
	__u64 mm;	/* the process's mm_struct, learned at the first event */
	__u32 slots;	/* bit i: procs[{tgid, i}] receives records */
	__u32 pad;
};

/* files[{dev, ino}] in the node variant: up to RC_BPF_NODE_FILE_WATCHERS
 * processes watch pages [pgoff_lo, pgoff_hi) of the file; tgid 0 is free. */
struct rc_bpf_node_watcher {
	__u32 tgid;
	__u32 pad;
	__u64 pgoff_lo;
	__u64 pgoff_hi;
};

struct rc_bpf_node_file {
	struct rc_bpf_node_watcher w[RC_BPF_NODE_FILE_WATCHERS];
};

/* The record {start = ~0, end = 0} (never a valid range) in a client's
 * ring: the daemon is gone or has dropped this client; stop trusting the
 * cache before the next hit. Written by the programs (daemon exit, or on
 * the daemon's request) into room that normal records never use. */
#define RC_BPF_DEAD_START (~0ULL)
#define RC_BPF_DEAD_END 0ULL

#endif /* RC_BPF_ABI_H */
