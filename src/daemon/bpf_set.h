/* SPDX-License-Identifier: MIT */
/*
 * The one BPF program set of the node (the RC_NODE variant of
 * src/monitor/bpf/rc_monitor.bpf.c): load, attach, and the map updates the
 * daemon makes for its clients. Nothing here knows about sockets.
 *
 * Every update of the procs hash-of-maps costs the kernel one
 * synchronize_rcu() (8-24 ms): rings are inserted and deleted in batches,
 * one grace period per batch.
 */
#ifndef RCD_BPF_SET_H
#define RCD_BPF_SET_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

#include "../abi/rc_bpf_abi.h"

struct rcd_bpf;

/* Load and attach the programs; daemon_tgid = getpid(). 0 or -errno, with
 * the reason in @why. */
int rcd_bpf_open(struct rcd_bpf **out, char *why, size_t why_len);

/* Clean stop: DEAD into every client ring, then detach and free. */
void rcd_bpf_close(struct rcd_bpf *b);

/* A fresh ring (fd), never given to anyone before. */
int rcd_bpf_ring_new(void);

/* Is @fd a ring of this node's size? (a resumed client's) */
bool rcd_bpf_ring_valid(int fd);

/* procs[keys[i]] = fds[i] for i < n, one grace period. 0 or -errno. */
int rcd_bpf_rings_insert(struct rcd_bpf *b, const struct rc_bpf_node_key *keys,
			 const int *fds, unsigned n);
/* Delete procs[keys[i]], one grace period; missing keys are ignored. */
void rcd_bpf_rings_delete(struct rcd_bpf *b, const struct rc_bpf_node_key *keys,
			  unsigned n);

/* procs_state[tgid].slots = @slots; 0 deletes the entry (and its mms
 * entry). @fresh: a new process, forget any counters; otherwise an entry
 * the exit hook already removed stays removed (-ESRCH). 0 or -errno. */
int rcd_bpf_set_slots(struct rcd_bpf *b, __u32 tgid, __u32 slots, bool fresh);

/* Records lost in the rings of @tgid (informational). */
__u64 rcd_bpf_drops(struct rcd_bpf *b, __u32 tgid);

/* Process @tgid watches pages [lo, hi) of file @key (merged with what it
 * already watches). 0, -ENOSPC (too many watchers of that file, or too
 * many files), or -errno. *@added: a new {file, tgid} pair. */
int rcd_bpf_file_watch(struct rcd_bpf *b, const struct rc_bpf_file_key *key,
		       __u32 tgid, __u64 lo, __u64 hi, bool *added);
/* Process @tgid no longer watches @key. */
void rcd_bpf_file_unwatch(struct rcd_bpf *b, const struct rc_bpf_file_key *key,
			  __u32 tgid);

/* Write DEAD into the rings @slots of @tgid (0: every client), through the
 * programs (user space cannot write a ring). */
void rcd_bpf_tombstone(struct rcd_bpf *b, __u32 tgid, __u32 slots);

#endif /* RCD_BPF_SET_H */
