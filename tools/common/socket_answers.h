/* SPDX-License-Identifier: MIT */
/* Whether a regcached listens on the Unix socket @path: a connect that
 * succeeds means the daemon has bound and is accepting, which is what the
 * programs that start a private daemon wait for (the demo, regcached-bench
 * and the tests' regcached-launch). Header-only, as median.h, so that a
 * test helper can use it without linking a tool's objects. */
#ifndef TOOLS_SOCKET_ANSWERS_H
#define TOOLS_SOCKET_ANSWERS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static inline bool regcached_socket_answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool ok;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ok = fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (fd >= 0)
		close(fd);
	return ok;
}

#endif
