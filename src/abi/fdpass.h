/* SPDX-License-Identifier: MIT */
/*
 * One message over a Unix socket with file descriptors attached
 * (SCM_RIGHTS): the node service's server, its client backend and the
 * tests that speak its protocol send and receive the same way. Header
 * only, so a test can use it without linking the library.
 */
#ifndef RC_ABI_FDPASS_H
#define RC_ABI_FDPASS_H

#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

/* The most descriptors one received message may carry; the protocol never
 * sends more than one, a hostile peer may. */
#define RC_FDPASS_MAX 4

/* Send @len bytes of @msg with @fd attached (-1: none). Returns what
 * sendmsg() returns; @flags are its flags (MSG_NOSIGNAL, ...). */
static inline ssize_t rc_fd_send(int sock, const void *msg, size_t len,
				 int fd, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { (void *)msg, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		m.msg_control = cbuf.buf;
		m.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, flags);
}

/* Receive one message of at most @len bytes into @msg and the descriptors
 * attached to it (close-on-exec) into @fds[0..*@nfds). Descriptors beyond
 * RC_FDPASS_MAX are closed at once: a peer cannot make us keep them.
 * *@msg_flags gets the message's flags (MSG_TRUNC, MSG_CTRUNC). Returns
 * what recvmsg() returns; @flags are its flags besides MSG_CMSG_CLOEXEC. */
static inline ssize_t rc_fd_recv(int sock, void *msg, size_t len, int flags,
				 int fds[RC_FDPASS_MAX], int *nfds,
				 int *msg_flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * RC_FDPASS_MAX)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { msg, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf.buf,
			    .msg_controllen = sizeof(cbuf.buf) };
	ssize_t n = recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC);

	*nfds = 0;
	if (msg_flags)
		*msg_flags = n < 0 ? 0 : m.msg_flags;
	if (n < 0)
		return n;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm;
	     cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; (i + 1) * sizeof(int) <=
				   cm->cmsg_len - CMSG_LEN(0); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
			if (*nfds < RC_FDPASS_MAX)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

#endif /* RC_ABI_FDPASS_H */
