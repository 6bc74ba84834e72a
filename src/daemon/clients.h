/* SPDX-License-Identifier: MIT */
/*
 * regcached's client table: connections, the processes behind them (found
 * by the kernel's word: SO_PEERCRED checked against SO_PEERPIDFD), and
 * per-user limits. Nothing here touches BPF maps or parses messages.
 *
 * A connection is one library copy; a process has up to
 * RC_BPF_NODE_SLOTS registered connections (rings) and one pidfd, which
 * reports its exit.
 */
#ifndef RCD_CLIENTS_H
#define RCD_CLIENTS_H

#include <linux/types.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../abi/rc_bpf_abi.h"

struct rcd_limits {
	unsigned conns_per_user;	/* connections, hence rings (64 KiB each) */
	unsigned files_per_user;	/* {file, process} watches */
};

struct rcd_user {
	uid_t uid;
	unsigned conns;
	unsigned files;
	struct rcd_user *next;
};

struct rcd_proc {
	__u32 tgid;		/* global: the daemon runs in the initial PID ns */
	uid_t uid;
	int pidfd;
	__u32 slots;		/* rings registered (bit = slot) */
	unsigned nfiles;
	unsigned files_cap;
	struct rc_bpf_file_key *files;
	struct rcd_proc *next;
};

struct rcd_conn {
	int fd;
	pid_t pid;		/* SO_PEERCRED, at connect() */
	uid_t uid;
	struct rcd_user *user;
	struct rcd_proc *proc;	/* once registered */
	int slot;		/* -1 until registered */
	int ring_fd;
	bool closing;
	struct rcd_conn *next;
};

struct rcd_table {
	struct rcd_limits limits;
	struct rcd_user *users;
	struct rcd_proc *procs;
	struct rcd_conn *conns;
	unsigned nconns, nprocs;
};

/* A new connection: reads SO_PEERCRED and charges its user. -EUSERS when
 * the user is at its limit, -errno on other errors (fd is not closed). */
int rcd_conn_add(struct rcd_table *t, int fd, struct rcd_conn **out);
/* Forget @c and uncharge its user; closes its socket and ring fd. The
 * caller has already unregistered it. */
void rcd_conn_remove(struct rcd_table *t, struct rcd_conn *c);

/*
 * Who is on the other end of @c, by the kernel's word: a pidfd from
 * SO_PEERPIDFD whose pid equals the SO_PEERCRED pid and is alive. A
 * connection handed to another process after connect(), or whose
 * connector has exited (its pid may already belong to someone else), is
 * refused. Without SO_PEERPIDFD (Linux < 6.5), pidfd_open() of the
 * SO_PEERCRED pid, refused unless every uid of that process is the
 * connector's. Returns the pidfd (caller owns it) or -errno.
 */
int rcd_conn_identify(struct rcd_conn *c);

/* Is the process behind @pidfd still alive? */
bool rcd_pidfd_alive(int pidfd);

/* The record of live process @tgid, or NULL. */
struct rcd_proc *rcd_proc_find(struct rcd_table *t, __u32 tgid);
/* A new record for @tgid, owning @pidfd; NULL without memory. */
struct rcd_proc *rcd_proc_add(struct rcd_table *t, __u32 tgid, uid_t uid,
			      int pidfd);
/* Forget @p (no slots, no files left); closes its pidfd. */
void rcd_proc_remove(struct rcd_table *t, struct rcd_proc *p);

/* Record that @p watches @key; charges its user. -EDQUOT at the limit. */
int rcd_proc_add_file(struct rcd_table *t, struct rcd_proc *p,
		      const struct rc_bpf_file_key *key);
/* Uncharge every file of @p (the caller removed them from the maps). */
void rcd_proc_clear_files(struct rcd_table *t, struct rcd_proc *p);

#endif /* RCD_CLIENTS_H */
