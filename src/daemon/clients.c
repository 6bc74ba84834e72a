/* SPDX-License-Identifier: MIT */
/*
 * regcached's client table (see clients.h). Lists with linear search: the
 * table holds at most a few thousand entries and is only walked on connect,
 * register, watch and exit, never per event.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clients.h"
#include "daemon_log.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77		/* Linux 6.5; not in Debian 12's headers */
#endif

static struct rcd_user *user_get(struct rcd_table *t, uid_t uid)
{
	struct rcd_user *u;

	for (u = t->users; u; u = u->next)
		if (u->uid == uid)
			return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = t->users;
	t->users = u;
	return u;
}

int rcd_conn_add(struct rcd_table *t, int fd, struct rcd_conn **out)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct rcd_user *u;
	struct rcd_conn *c;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -errno;
	u = user_get(t, cred.uid);
	if (!u)
		return -ENOMEM;
	if (u->conns >= t->limits.conns_per_user) {
		rcd_warn("uid %u has %u connections (the limit, --max-per-user): "
			 "refusing pid %d", (unsigned)cred.uid, u->conns,
			 (int)cred.pid);
		return -EUSERS;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->user = u;
	c->slot = -1;
	c->ring_fd = -1;
	c->next = t->conns;
	t->conns = c;
	u->conns++;
	t->nconns++;
	*out = c;
	return 0;
}

void rcd_conn_remove(struct rcd_table *t, struct rcd_conn *c)
{
	struct rcd_conn **pp;

	for (pp = &t->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	c->user->conns--;
	t->nconns--;
	close(c->fd);
	if (c->ring_fd >= 0)
		close(c->ring_fd);
	free(c);
}

bool rcd_pidfd_alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	/* A pidfd polls readable once its process has exited. */
	return poll(&p, 1, 0) == 0;
}

/* The pid a pidfd refers to, in our PID namespace: -1 once it has been
 * reaped, 0 if it is not visible from here. */
static long pidfd_pid(int pidfd)
{
	char path[64], buf[512];
	ssize_t n;
	char *pid;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -2;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -2;
	buf[n] = 0;
	pid = strstr(buf, "\nPid:");
	return pid ? strtol(pid + 5, NULL, 10) : -2;
}

/* Every uid (real, effective, saved, filesystem) of process @pid, as
 * /proc says now, equals @uid. */
static bool uids_all(pid_t pid, uid_t uid)
{
	char path[64], buf[2048];
	unsigned long id[4];
	const char *line;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	line = strstr(buf, "\nUid:");
	if (!line || sscanf(line + 5, "%lu %lu %lu %lu", &id[0], &id[1],
			    &id[2], &id[3]) != 4)
		return false;
	for (int i = 0; i < 4; i++)
		if (id[i] != (unsigned long)uid)
			return false;
	return true;
}

/* Before Linux 6.5 there is no SO_PEERPIDFD: take a pidfd of the
 * SO_PEERCRED pid and require that every uid of that process is the
 * connector's. A connector that exits and leaves its pid to another user's
 * process (the PID-reuse attack) is refused; what stays possible is
 * reaching a process of the same user by the same trick, which learns
 * nothing that user could not read in /proc/PID/maps. */
static int pidfd_of_peer_pid(struct rcd_conn *c)
{
	static bool said;
	int pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);

	if (!said) {
		rcd_info("no SO_PEERPIDFD (Linux < 6.5): clients are identified "
			 "by pidfd_open(SO_PEERCRED pid) and their uids");
		said = true;
	}
	if (pidfd < 0)
		return -ESRCH;
	/* Read after the pidfd is open, checked alive after the read: the
	 * uids read were those of the pidfd's process. */
	if (!uids_all(c->pid, c->uid) || !rcd_pidfd_alive(pidfd)) {
		rcd_warn("pid %d (uid %u): the process with that pid is not "
			 "the connector's (other uids, or gone): refused",
			 (int)c->pid, (unsigned)c->uid);
		close(pidfd);
		return -ESRCH;
	}
	return pidfd;
}

int rcd_conn_identify(struct rcd_conn *c)
{
	socklen_t len = sizeof(int);
	int pidfd = -1;
	long pid;

	if (c->pid <= 0)
		return -ESRCH;	/* connector outside our PID namespace */
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) ||
	    pidfd < 0) {
		if (errno == ENOPROTOOPT)
			return pidfd_of_peer_pid(c);
		return -ESRCH;
	}
	fcntl(pidfd, F_SETFD, FD_CLOEXEC);
	pid = pidfd_pid(pidfd);
	if (pid != c->pid || !rcd_pidfd_alive(pidfd)) {
		rcd_warn("pid %d (uid %u): the connecting process is gone "
			 "(pidfd says pid %ld): refused", (int)c->pid,
			 (unsigned)c->uid, pid);
		close(pidfd);
		return -ESRCH;
	}
	return pidfd;
}

struct rcd_proc *rcd_proc_find(struct rcd_table *t, __u32 tgid)
{
	for (struct rcd_proc *p = t->procs; p; p = p->next)
		if (p->tgid == tgid)
			return p;
	return NULL;
}

struct rcd_proc *rcd_proc_add(struct rcd_table *t, __u32 tgid, uid_t uid,
			      int pidfd)
{
	struct rcd_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->tgid = tgid;
	p->uid = uid;
	p->pidfd = pidfd;
	p->next = t->procs;
	t->procs = p;
	t->nprocs++;
	return p;
}

void rcd_proc_remove(struct rcd_table *t, struct rcd_proc *p)
{
	struct rcd_proc **pp;

	rcd_proc_clear_files(t, p);
	for (pp = &t->procs; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	t->nprocs--;
	close(p->pidfd);
	free(p->files);
	free(p);
}

int rcd_proc_add_file(struct rcd_table *t, struct rcd_proc *p,
		      const struct rc_bpf_file_key *key)
{
	struct rcd_user *u = user_get(t, p->uid);

	if (!u)
		return -ENOMEM;
	if (u->files >= t->limits.files_per_user)
		return -EDQUOT;
	if (p->nfiles == p->files_cap) {
		unsigned cap = p->files_cap ? 2 * p->files_cap : 8;
		void *n = realloc(p->files, cap * sizeof(*p->files));

		if (!n)
			return -ENOMEM;
		p->files = n;
		p->files_cap = cap;
	}
	p->files[p->nfiles++] = *key;
	u->files++;
	return 0;
}

void rcd_proc_clear_files(struct rcd_table *t, struct rcd_proc *p)
{
	struct rcd_user *u = user_get(t, p->uid);

	if (u)
		u->files -= p->nfiles < u->files ? p->nfiles : u->files;
	p->nfiles = 0;
}
