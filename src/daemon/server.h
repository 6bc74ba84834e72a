/* SPDX-License-Identifier: MIT */
/* regcached's socket server: the event loop, the protocol, and what each
 * message does to the client table and the program set. */
#ifndef RCD_SERVER_H
#define RCD_SERVER_H

#include "clients.h"

struct rcd_server_opts {
	const char *socket_path;
	int listen_fd;		/* from socket activation, or -1 */
	struct rcd_limits limits;
};

/* Load the programs, serve until SIGTERM/SIGINT, then write DEAD into every
 * client ring and detach. Returns the process exit status. */
int rcd_server_run(const struct rcd_server_opts *opts);

#endif /* RCD_SERVER_H */
