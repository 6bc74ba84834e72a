/* SPDX-License-Identifier: MIT */
/*
 * For the regcached attack tests: speak the daemon's wire protocol by hand
 * (src/abi/protocol.h), as a hostile client would, and read a ring
 * without the library. Not a second client implementation: just enough to
 * send what the library never would.
 */
#ifndef T_REGCACHED_WIRE_H
#define T_REGCACHED_WIRE_H

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "abi/fdpass.h"
#include "abi/protocol.h"
#include "helpers.h"

static inline const char *w_socket(void)
{
	const char *p = getenv("REGCACHE_SOCKET");

	T_REQUIRE(p);
	return p;
}

/* A connection to the test's daemon, or -errno. */
static inline int w_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, w_socket());
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Send @len bytes of @msg with @fd attached (-1: none). */
static inline int w_send(int sock, const void *msg, size_t len, int fd)
{
	return rc_fd_send(sock, msg, len, fd, MSG_NOSIGNAL) == (ssize_t)len ?
		       0 : -errno;
}

static inline struct rcd_request w_request(uint16_t op)
{
	struct rcd_request q;

	memset(&q, 0, sizeof(q));
	q.magic = RCD_MAGIC;
	q.version = RCD_VERSION;
	q.op = op;
	return q;
}

/* Receive a reply: its status, or -EPIPE when the daemon closed the
 * connection instead (what it does to a hostile client). *@fd_out gets
 * an attached fd, or -1. */
static inline int w_reply(int sock, int *fd_out)
{
	struct rcd_reply r;
	int fds[RC_FDPASS_MAX], nfds;
	ssize_t n = rc_fd_recv(sock, &r, sizeof(r), 0, fds, &nfds, NULL);

	if (fd_out)
		*fd_out = -1;
	for (int i = 0; i < nfds; i++) {
		if (i == 0 && fd_out)
			*fd_out = fds[i];
		else
			close(fds[i]);
	}
	if (n != sizeof(r))
		return -EPIPE;
	return r.status;
}

/* Register on a fresh connection; returns the socket and sets *@ring, or
 * -errno (the status or -EPIPE). */
static inline int w_register(int *ring)
{
	struct rcd_request q = w_request(RCD_REGISTER);
	int sock, ret;

	*ring = -1;
	sock = w_connect();
	if (sock < 0)
		return sock;
	ret = w_send(sock, &q, sizeof(q), -1);
	if (!ret)
		ret = w_reply(sock, ring);
	if (!ret && *ring < 0)
		ret = -EPROTO;
	if (ret) {
		close(sock);
		return ret;
	}
	return sock;
}

/* Has the daemon closed @sock? (waits up to @ms) */
static inline bool w_closed(int sock, int ms)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	char c;

	if (poll(&p, 1, ms) <= 0)
		return false;
	return recv(sock, &c, 1, MSG_DONTWAIT) == 0 ||
	       (p.revents & (POLLHUP | POLLERR));
}

/* A ring mapped read-only the way a client maps it. */
struct w_ring {
	_Atomic uint64_t *cons;
	const _Atomic uint64_t *prod;
	const char *data;
};

static inline void w_ring_map(struct w_ring *r, int fd)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	T_REQUIRE(p != MAP_FAILED);
	r->cons = p;
	p = mmap(NULL, 4096 + 2 * 65536, PROT_READ, MAP_SHARED, fd, 4096);
	T_REQUIRE(p != MAP_FAILED);
	r->prod = p;
	r->data = (const char *)p + 4096;
}

/* Records in the ring not yet consumed; consumes them, and counts those
 * whose range overlaps [lo, hi) in *@hits (DEAD and "everything" count). */
static inline long w_ring_drain(struct w_ring *r, uint64_t lo, uint64_t hi,
				long *hits)
{
	uint64_t c = atomic_load(r->cons), p = atomic_load(r->prod);
	long n = 0;

	while (c < p) {
		const _Atomic uint32_t *h =
			(const _Atomic uint32_t *)(r->data + (c & 65535));
		uint32_t len = atomic_load(h);
		const uint64_t *rec = (const uint64_t *)((const char *)h + 8);

		if (len & BPF_RINGBUF_BUSY_BIT)
			continue;
		len &= ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		if (hits && (rec[0] > rec[1] || (rec[0] < hi && lo < rec[1])))
			(*hits)++;
		n++;
		c += (len + 8 + 7) & ~7ull;
		atomic_store(r->cons, c);
	}
	return n;
}

/* Become uid/gid 65534 with no capabilities (a forked child of a --root
 * test). */
static inline void w_drop_privileges(void)
{
	T_REQUIRE(setgroups(0, NULL) == 0);
	T_REQUIRE(setresgid(65534, 65534, 65534) == 0);
	T_REQUIRE(setresuid(65534, 65534, 65534) == 0);
}

/* Fork a child whose pid is @want (root: ns_last_pid), running @fn(@arg);
 * returns its pid, or -1 if the pid could not be had in 20 tries. */
static inline pid_t w_fork_at_pid(pid_t want, int (*fn)(void *), void *arg)
{
	for (int tries = 0; tries < 20; tries++) {
		FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
		pid_t pid;

		T_REQUIRE(f);
		fprintf(f, "%d", (int)want - 1);
		fclose(f);
		pid = fork();
		T_REQUIRE(pid >= 0);
		if (pid == 0)
			_exit(fn(arg));
		if (pid == want)
			return pid;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

/* munmap a page at @addr over and over for @ms (a process whose unmaps an
 * attacker would like to read). The tests' addresses are 0x50000000 and up
 * (below 2 GiB): application memory for AddressSanitizer (whose shadow and
 * shadow gap lie above 2 GiB) and for ThreadSanitizer (which rewrites a
 * hint outside its application ranges to NULL, even for
 * MAP_FIXED_NOREPLACE), and left free by PIE programs. */
static inline int w_unmap_loop(uintptr_t addr, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		char *p = mmap((void *)addr, 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS |
			       MAP_FIXED_NOREPLACE, -1, 0);

		if (p != (char *)addr)
			return 1;
		p[0] = 1;
		munmap(p, 4096);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
		 (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return 0;
}

#endif /* T_REGCACHED_WIRE_H */
