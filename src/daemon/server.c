/* SPDX-License-Identifier: MIT */
/*
 * regcached's socket server. One thread, one epoll loop. Each turn:
 *   1. read every ready event: accept, messages, process exits, signals;
 *      WATCH is answered at once, REGISTER is queued;
 *   2. unregister the connections that closed (or misbehaved) and the
 *      processes that exited, and delete their rings in one batch;
 *   3. insert the queued registrations' rings in one batch, then answer.
 * Batching matters: each change to the procs hash-of-maps costs the
 * kernel a synchronize_rcu() (8-24 ms), once per batch; 128 clients that
 * connect at once are served in a few grace periods, not 128.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <stddef.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/magic.h>

#include "bpf_set.h"
#include "clients.h"
#include "daemon_log.h"
#include "../abi/protocol.h"
#include "server.h"
#include "../abi/fdpass.h"
#include "../kernel/vma.h"

enum tag { TAG_LISTEN, TAG_CONN, TAG_PROC, TAG_SIGNAL };

struct reg {
	struct rcd_conn *conn;
	int pidfd;
	int resume_fd;		/* the client's ring, or -1 */
};

struct server {
	struct rcd_bpf *bpf;
	struct rcd_table table;
	int ep, listen_fd, signal_fd;
	bool stop;
	__u64 shmem_dev;	/* kernel dev of the internal shmem mount */
	struct reg *regs;
	unsigned nregs, regs_cap;
	struct rc_bpf_node_key *dels;
	unsigned ndels, dels_cap;
};

static void *tagged(void *p, enum tag t)
{
	return (void *)((uintptr_t)p | t);
}

static int ep_add(struct server *s, int fd, void *p, enum tag t)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tagged(p, t) };

	return epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static __u64 kdev(dev_t d)
{
	return ((__u64)major(d) << 20) | minor(d);
}

static int send_reply(struct rcd_conn *c, const struct rcd_reply *r, int fd)
{
	if (rc_fd_send(c->fd, r, sizeof(*r), fd, MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    sizeof(*r)) {
		rcd_info("pid %d: cannot reply (%s): closing", (int)c->pid,
			 strerror(errno));
		c->closing = true;
		return -1;
	}
	return 0;
}

static void reply_status(struct rcd_conn *c, uint16_t op, int status)
{
	struct rcd_reply r = { .magic = RCD_MAGIC, .version = RCD_VERSION,
			       .op = op, .status = status };

	send_reply(c, &r, -1);
}

/* Close a connection that broke the protocol. The rest keep being served. */
static void hostile(struct rcd_conn *c, const char *why)
{
	rcd_warn("pid %d uid %u: %s: closing the connection", (int)c->pid,
		 (unsigned)c->uid, why);
	c->closing = true;
}

static void queue_delete(struct server *s, __u32 tgid, __u32 slot)
{
	if (s->ndels == s->dels_cap) {
		unsigned cap = s->dels_cap ? 2 * s->dels_cap : 64;
		void *n = realloc(s->dels, cap * sizeof(*s->dels));

		if (!n) {
			/* Delete it now rather than leak a map entry. */
			struct rc_bpf_node_key k = { tgid, slot };

			rcd_bpf_rings_delete(s->bpf, &k, 1);
			return;
		}
		s->dels = n;
		s->dels_cap = cap;
	}
	s->dels[s->ndels++] = (struct rc_bpf_node_key){ tgid, slot };
}

static void proc_forget(struct server *s, struct rcd_proc *p)
{
	for (unsigned i = 0; i < p->nfiles; i++)
		rcd_bpf_file_unwatch(s->bpf, &p->files[i], p->tgid);
	rcd_bpf_set_slots(s->bpf, p->tgid, 0, false);
	epoll_ctl(s->ep, EPOLL_CTL_DEL, p->pidfd, NULL);
	rcd_proc_remove(&s->table, p);
}

/* Stop feeding @c's ring. If the process lives on and did not ask for
 * this (it misbehaved), it first gets DEAD, so it never trusts a ring that
 * nobody feeds. */
static void unregister(struct server *s, struct rcd_conn *c)
{
	struct rcd_proc *p = c->proc;
	__u32 bit;

	for (unsigned i = 0; i < s->nregs; i++) {
		if (s->regs[i].conn != c)
			continue;
		close(s->regs[i].pidfd);
		if (s->regs[i].resume_fd >= 0)
			close(s->regs[i].resume_fd);
		s->regs[i] = s->regs[--s->nregs];
		break;
	}
	if (!p)
		return;
	bit = 1u << c->slot;
	if (rcd_pidfd_alive(p->pidfd))
		rcd_bpf_tombstone(s->bpf, p->tgid, bit);
	p->slots &= ~bit;
	rcd_bpf_set_slots(s->bpf, p->tgid, p->slots, false);
	queue_delete(s, p->tgid, (__u32)c->slot);
	rcd_info("pid %u slot %d unregistered", p->tgid, c->slot);
	c->proc = NULL;
	if (!p->slots)
		proc_forget(s, p);
}

/* ---- messages ------------------------------------------------------ */

static void on_register(struct server *s, struct rcd_conn *c,
			const struct rcd_request *q, int fd)
{
	struct reg *r;
	int pidfd;

	if (c->proc || c->slot >= 0) {
		hostile(c, "second REGISTER on one connection");
		return;
	}
	for (unsigned i = 0; i < s->nregs; i++) {
		if (s->regs[i].conn == c) {
			hostile(c, "second REGISTER on one connection");
			return;
		}
	}
	if ((q->flags & RCD_REGISTER_RESUME) != (fd >= 0 ? RCD_REGISTER_RESUME : 0)) {
		hostile(c, "REGISTER: RESUME flag and ring fd disagree");
		return;
	}
	if (fd >= 0 && !rcd_bpf_ring_valid(fd)) {
		hostile(c, "REGISTER RESUME with an fd that is not a ring of "
			"this node's size");
		return;
	}
	pidfd = rcd_conn_identify(c);
	if (pidfd < 0) {
		reply_status(c, RCD_REGISTER, pidfd);
		c->closing = true;
		return;
	}
	if (s->nregs == s->regs_cap) {
		unsigned cap = s->regs_cap ? 2 * s->regs_cap : 64;
		void *n = realloc(s->regs, cap * sizeof(*s->regs));

		if (!n) {
			close(pidfd);
			reply_status(c, RCD_REGISTER, -ENOMEM);
			return;
		}
		s->regs = n;
		s->regs_cap = cap;
	}
	r = &s->regs[s->nregs++];
	r->conn = c;
	r->pidfd = pidfd;
	r->resume_fd = fd >= 0 ? dup(fd) : -1;
	if (fd >= 0 && r->resume_fd < 0) {
		s->nregs--;
		close(pidfd);
		reply_status(c, RCD_REGISTER, -errno);
	}
}

/* The file a WATCH names by fd: an open (not O_PATH) regular file on a
 * filesystem whose stat() dev is the page cache's superblock dev. */
static int watch_key_from_fd(int fd, struct rc_bpf_file_key *key,
			     const char **why)
{
	struct statfs sfs;
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || (fl & O_PATH)) {
		*why = "WATCH fd is an O_PATH descriptor (not opened)";
		return -EBADF;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		*why = "WATCH fd is not a regular file";
		return -EBADF;
	}
	if (fstatfs(fd, &sfs))
		return -errno;
	/* Not overlayfs, FUSE or network filesystems (pages can go away
	 * without a page-cache removal under this inode), and not btrfs,
	 * whose stat() dev is the subvolume's, not the superblock's. */
	if (sfs.f_type != TMPFS_MAGIC && sfs.f_type != EXT4_SUPER_MAGIC &&
	    sfs.f_type != XFS_SUPER_MAGIC)
		return -EOPNOTSUPP;
	key->dev = kdev(st.st_dev);
	key->ino = st.st_ino;
	return 0;
}

/* The file of a shared shmem mapping at @start in the client's address
 * space, looked up by the daemon (the client has no fd for it). */
static int watch_key_from_mapping(struct server *s, struct rcd_proc *p,
				  const struct rcd_request *q,
				  struct rc_bpf_file_key *key, __u64 *lo,
				  __u64 *hi)
{
	struct rc_procmap_query pq;
	struct rc_vma_source maps;
	__u64 end;
	int ret;

	/* PROCMAP_QUERY where the kernel has it (6.11+), else the text. */
	ret = rc_vma_source_open_pid(&maps, (pid_t)p->tgid, true);
	if (maps.maps_fd < 0)
		return ret;
	ret = rc_vma_query(&maps, q->start, &pq);
	rc_vma_source_close(&maps);
	if (!ret && pq.vma_start > q->start)
		ret = -ENOENT;	/* the next VMA, not one at start */
	/* The pid still names the process we identified: the file we read
	 * was its own. */
	if (!ret && !rcd_pidfd_alive(p->pidfd))
		ret = -ESRCH;
	if (ret)
		return ret;
	if (!(pq.vma_flags & RC_PROCMAP_VMA_SHARED) || !pq.inode ||
	    (((__u64)pq.dev_major << 20) | pq.dev_minor) != s->shmem_dev)
		return -EOPNOTSUPP;
	key->dev = s->shmem_dev;
	key->ino = pq.inode;
	end = q->end < pq.vma_end ? q->end : pq.vma_end;
	*lo = (pq.vma_offset + (q->start - pq.vma_start)) / 4096;
	*hi = (pq.vma_offset + (end - pq.vma_start) + 4095) / 4096;
	return 0;
}

static void on_watch(struct server *s, struct rcd_conn *c,
		     const struct rcd_request *q, int fd)
{
	struct rc_bpf_file_key key = { 0 };
	struct rcd_proc *p = c->proc;
	const char *why = NULL;
	__u64 lo = q->pgoff_lo, hi = q->pgoff_hi;
	bool added, known = false;
	int ret;

	if (!p) {
		hostile(c, "WATCH before REGISTER");
		return;
	}
	if (q->start >= q->end || (q->start | q->end) & 4095 ||
	    (fd >= 0 && lo >= hi)) {
		hostile(c, "WATCH with an empty or unaligned range");
		return;
	}
	if (fd >= 0)
		ret = watch_key_from_fd(fd, &key, &why);
	else
		ret = watch_key_from_mapping(s, p, q, &key, &lo, &hi);
	if (ret == -EBADF) {
		hostile(c, why);
		return;
	}
	if (!ret) {
		for (unsigned i = 0; i < p->nfiles && !known; i++)
			known = !memcmp(&p->files[i], &key, sizeof(key));
		if (!known)
			ret = rcd_proc_add_file(&s->table, p, &key);
		if (ret == -EDQUOT)
			rcd_warn("uid %u watches too many files (the limit, "
				 "--max-files-per-user): refusing pid %u",
				 (unsigned)p->uid, p->tgid);
	}
	if (!ret) {
		ret = rcd_bpf_file_watch(s->bpf, &key, p->tgid, lo, hi, &added);
		if (ret && !known) {
			p->nfiles--;
			rcd_proc_clear_files(&s->table, p);
		}
	}
	rcd_debug("pid %u watch %llx:%llu [%llu, %llu): %d", p->tgid,
		  (unsigned long long)key.dev, (unsigned long long)key.ino,
		  (unsigned long long)lo, (unsigned long long)hi, ret);
	reply_status(c, RCD_WATCH, ret);
}

/* Read every message queued on @c. */
static void on_conn(struct server *s, struct rcd_conn *c, uint32_t events)
{
	for (;;) {
		struct rcd_request q;
		int fds[RC_FDPASS_MAX], nfds, msg_flags;
		ssize_t n;

		if (c->closing)
			return;
		n = rc_fd_recv(c->fd, &q, sizeof(q), MSG_DONTWAIT, fds, &nfds,
			       &msg_flags);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			rcd_info("pid %d: %s: closing", (int)c->pid,
				 strerror(errno));
			c->closing = true;
			return;
		}
		if (n == 0) {
			rcd_debug("pid %d: connection closed", (int)c->pid);
			c->closing = true;
		} else if (msg_flags & (MSG_TRUNC | MSG_CTRUNC) ||
			   n != sizeof(q)) {
			hostile(c, "message of the wrong size");
		} else if (q.magic != RCD_MAGIC || q.version != RCD_VERSION ||
			   q.reserved) {
			hostile(c, "bad magic, version or reserved field");
		} else if (nfds > 1) {
			hostile(c, "more than one file descriptor");
		} else if (q.op == RCD_REGISTER && !(q.flags & ~RCD_REGISTER_RESUME)) {
			on_register(s, c, &q, nfds ? fds[0] : -1);
		} else if (q.op == RCD_WATCH && !q.flags) {
			on_watch(s, c, &q, nfds ? fds[0] : -1);
		} else {
			hostile(c, "unknown op or flags");
		}
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (c->closing)
			return;
	}
	if (events & (EPOLLHUP | EPOLLERR)) {
		rcd_debug("pid %d: hang-up", (int)c->pid);
		c->closing = true;
	}
}

static void on_accept(struct server *s)
{
	for (;;) {
		struct rcd_conn *c;
		int fd = accept4(s->listen_fd, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		int ret;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				rcd_warn("accept: %s", strerror(errno));
			return;
		}
		ret = rcd_conn_add(&s->table, fd, &c);
		if (ret) {
			close(fd);
			continue;
		}
		if (ep_add(s, fd, c, TAG_CONN)) {
			rcd_conn_remove(&s->table, c);
			continue;
		}
	}
}

static void on_proc_exit(struct server *s, struct rcd_proc *p)
{
	rcd_info("pid %u exited", p->tgid);
	for (struct rcd_conn *c = s->table.conns; c; c = c->next)
		if (c->proc == p)
			c->closing = true;
}

/* Step 2: unregister what closed. Connections are freed here only, so an
 * event later in the same turn never sees a freed one. */
static void reap(struct server *s)
{
	struct rcd_conn *c, *next;

	for (c = s->table.conns; c; c = next) {
		next = c->next;
		if (!c->closing)
			continue;
		epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
		unregister(s, c);
		rcd_conn_remove(&s->table, c);
	}
	rcd_bpf_rings_delete(s->bpf, s->dels, s->ndels);
	s->ndels = 0;
}

/* Step 3: give every queued registration a ring, insert them in one
 * batch, route the processes to them, then answer. */
static void admit(struct server *s)
{
	struct rc_bpf_node_key keys[256];
	int fds[256];
	struct reg batch[256];
	unsigned n = 0;

	while (s->nregs && n < 256) {
		struct reg r = s->regs[--s->nregs];
		struct rcd_conn *c = r.conn;
		struct rcd_proc *p = rcd_proc_find(&s->table, (__u32)c->pid);
		int slot = 0;

		if (p && !rcd_pidfd_alive(p->pidfd)) {
			/* The old holder of this pid exited and its pidfd
			 * event is still queued: the next turn reaps it. */
			reply_status(c, RCD_REGISTER, -EAGAIN);
			close(r.pidfd);
			if (r.resume_fd >= 0)
				close(r.resume_fd);
			continue;
		}
		if (p) {
			__u32 taken = p->slots;

			close(r.pidfd);
			/* Slots given earlier in this batch are not in
			 * p->slots yet. */
			for (unsigned i = 0; i < n; i++)
				if (keys[i].tgid == p->tgid)
					taken |= 1u << keys[i].slot;
			while (slot < RC_BPF_NODE_SLOTS && (taken & (1u << slot)))
				slot++;
		} else {
			p = rcd_proc_add(&s->table, (__u32)c->pid, c->uid,
					 r.pidfd);
			if (!p || ep_add(s, r.pidfd, p, TAG_PROC)) {
				if (p)
					rcd_proc_remove(&s->table, p);
				else
					close(r.pidfd);
				reply_status(c, RCD_REGISTER, -ENOMEM);
				continue;
			}
		}
		if (slot >= RC_BPF_NODE_SLOTS) {
			rcd_warn("pid %u: more than %d library copies register: "
				 "refused", p->tgid, RC_BPF_NODE_SLOTS);
			reply_status(c, RCD_REGISTER, -EBUSY);
			if (r.resume_fd >= 0)
				close(r.resume_fd);
			if (!p->slots)
				proc_forget(s, p);
			continue;
		}
		fds[n] = r.resume_fd >= 0 ? r.resume_fd : rcd_bpf_ring_new();
		if (fds[n] < 0) {
			reply_status(c, RCD_REGISTER, fds[n]);
			if (!p->slots)
				proc_forget(s, p);
			continue;
		}
		keys[n] = (struct rc_bpf_node_key){ p->tgid, (__u32)slot };
		batch[n] = r;
		batch[n].pidfd = -1;
		n++;
	}
	if (!n)
		return;
	if (rcd_bpf_rings_insert(s->bpf, keys, fds, n)) {
		rcd_error("cannot insert %u rings: %s", n, strerror(errno));
		for (unsigned i = 0; i < n; i++) {
			struct rcd_proc *p = rcd_proc_find(&s->table, keys[i].tgid);

			reply_status(batch[i].conn, RCD_REGISTER, -ENOMEM);
			close(fds[i]);
			if (p && !p->slots)
				proc_forget(s, p);
		}
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct rcd_conn *c = batch[i].conn;
		struct rcd_proc *p = rcd_proc_find(&s->table, keys[i].tgid);
		bool fresh = !p->slots;
		struct rcd_reply rep = { .magic = RCD_MAGIC,
					 .version = RCD_VERSION,
					 .op = RCD_REGISTER,
					 .slot = keys[i].slot,
					 .ring_bytes = RC_BPF_RING_BYTES };

		p->slots |= 1u << keys[i].slot;
		c->proc = p;
		c->slot = (int)keys[i].slot;
		c->ring_fd = fds[i];
		if (rcd_bpf_set_slots(s->bpf, p->tgid, p->slots, fresh)) {
			reply_status(c, RCD_REGISTER, -errno);
			c->closing = true;
			continue;
		}
		/* Checked again after inserting: had the process exited
		 * before procs_state held it, its exit hook would have found
		 * nothing to remove, and a reused pid would inherit it. */
		if (!rcd_pidfd_alive(p->pidfd)) {
			c->closing = true;
			continue;
		}
		rcd_info("pid %u uid %u slot %u registered%s", p->tgid,
			 (unsigned)p->uid, keys[i].slot,
			 batch[i].resume_fd >= 0 ? " (resumed its ring)" : "");
		send_reply(c, &rep, batch[i].resume_fd >= 0 ? -1 : fds[i]);
	}
}

/* ---- setup --------------------------------------------------------- */

static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		rcd_error("socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(path, 0666) || listen(fd, 1024)) {
		int ret = -errno;

		rcd_error("cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}

static __u64 learn_shmem_dev(void)
{
	struct stat st;
	int fd = memfd_create("regcached-shmem-probe", MFD_CLOEXEC);
	__u64 dev = 0;

	if (fd >= 0 && !fstat(fd, &st))
		dev = kdev(st.st_dev);
	if (fd >= 0)
		close(fd);
	return dev;
}

static void loop(struct server *s)
{
	struct epoll_event evs[256];

	while (!s->stop) {
		int n = epoll_wait(s->ep, evs, 256, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rcd_error("epoll_wait: %s", strerror(errno));
			return;
		}
		for (int i = 0; i < n; i++) {
			uintptr_t d = (uintptr_t)evs[i].data.ptr;
			void *p = (void *)(d & ~(uintptr_t)3);

			switch ((enum tag)(d & 3)) {
			case TAG_LISTEN:
				on_accept(s);
				break;
			case TAG_CONN:
				on_conn(s, p, evs[i].events);
				break;
			case TAG_PROC:
				on_proc_exit(s, p);
				break;
			case TAG_SIGNAL:
				s->stop = true;
				break;
			}
		}
		reap(s);
		admit(s);
		/* A registration found dead after inserting is reaped now,
		 * not at the next event. */
		reap(s);
	}
}

/* Where the clients connect: the socket handed over by socket activation
 * is named by the unit, not by --socket. */
static void log_serving(const struct server *s,
			const struct rcd_server_opts *o)
{
	struct sockaddr_un a = { 0 };
	socklen_t n = sizeof(a) - 1;
	const char *path = o->socket_path;

	if (o->listen_fd >= 0 &&
	    !getsockname(s->listen_fd, (struct sockaddr *)&a, &n) &&
	    n > offsetof(struct sockaddr_un, sun_path) && a.sun_path[0])
		path = a.sun_path;
	rcd_info("serving %s%s (pid %d)", path,
		 o->listen_fd >= 0 ? ", handed over by socket activation" : "",
		 (int)getpid());
}

int rcd_server_run(const struct rcd_server_opts *o)
{
	struct server s = { .listen_fd = o->listen_fd, .signal_fd = -1 };
	char why[300];
	sigset_t set;
	int ret;

	s.table.limits = o->limits;
	s.shmem_dev = learn_shmem_dev();
	ret = rcd_bpf_open(&s.bpf, why, sizeof(why));
	if (ret) {
		rcd_error("cannot load the BPF programs: %s", why);
		return 1;
	}
	if (s.listen_fd < 0)
		s.listen_fd = listen_on(o->socket_path);
	if (s.listen_fd < 0) {
		rcd_bpf_close(s.bpf);
		return 1;
	}
	fcntl(s.listen_fd, F_SETFL, fcntl(s.listen_fd, F_GETFL) | O_NONBLOCK);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	s.signal_fd = signalfd(-1, &set, SFD_CLOEXEC);
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	if (s.signal_fd < 0 || s.ep < 0 ||
	    ep_add(&s, s.listen_fd, NULL, TAG_LISTEN) ||
	    ep_add(&s, s.signal_fd, NULL, TAG_SIGNAL)) {
		rcd_error("setup: %s", strerror(errno));
		rcd_bpf_close(s.bpf);
		return 1;
	}
	log_serving(&s, o);
	loop(&s);
	rcd_info("stopping: every client gets DEAD");
	/* DEAD first (rcd_bpf_close), so no client trusts a ring that stops
	 * being fed; then the connections close. */
	rcd_bpf_close(s.bpf);
	while (s.table.conns) {
		struct rcd_conn *c = s.table.conns;

		c->proc = NULL;
		rcd_conn_remove(&s.table, c);
	}
	while (s.table.procs)
		rcd_proc_remove(&s.table, s.table.procs);
	while (s.table.users) {
		struct rcd_user *u = s.table.users;

		s.table.users = u->next;
		free(u);
	}
	for (unsigned i = 0; i < s.nregs; i++) {
		close(s.regs[i].pidfd);
		if (s.regs[i].resume_fd >= 0)
			close(s.regs[i].resume_fd);
	}
	free(s.regs);
	free(s.dels);
	if (o->listen_fd < 0)
		unlink(o->socket_path);
	close(s.listen_fd);
	close(s.signal_fd);
	close(s.ep);
	return 0;
}
