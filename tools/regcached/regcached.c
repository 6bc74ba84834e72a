/* SPDX-License-Identifier: MIT */
/*
 * regcached: the node's regcache monitor. Loads one eBPF program set for
 * every process on the machine and serves the library's "regcached"
 * monitor backend over a unix socket (docs/regcached.md).
 *
 * Runs as root, in the initial PID namespace, in the foreground until
 * SIGTERM or SIGINT. Logs to stderr; quiet unless something is wrong
 * (-v: one line per client event, -vv: debug).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon_log.h"
#include "abi/protocol.h"
#include "daemon/server.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: regcached [options]\n"
"  -s, --socket PATH            listen on PATH (default " RCD_SOCKET_DEFAULT ")\n"
"      --max-per-user N         connections (rings of 64 KiB) one uid may hold\n"
"                               (default 1024)\n"
"      --max-files-per-user N   file watches one uid may hold (default 4096)\n"
"  -v, --verbose                log each client event (twice: debug)\n"
"  -h, --help\n"
"Runs as root in the initial PID namespace, in the foreground, until\n"
"SIGTERM. With systemd socket activation (LISTEN_FDS=1) it serves fd 3.\n");
}

/* The NSpid line of /proc/self/status lists one pid per nested PID
 * namespace: a single field means the initial one. */
static int pid_ns_depth(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	int depth = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		depth = 0;
		for (char *tok = strtok(line + 6, " \t\n"); tok;
		     tok = strtok(NULL, " \t\n"))
			depth++;
	}
	fclose(f);
	return depth;
}

/* systemd socket activation: one listening socket at fd 3. */
static int activated_fd(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");

	if (!pid || !fds || atol(pid) != (long)getpid() || atoi(fds) != 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return 3;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "max-per-user", required_argument, NULL, 'u' },
		{ "max-files-per-user", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rcd_server_opts o = {
		.socket_path = RCD_SOCKET_DEFAULT,
		.listen_fd = -1,
		.limits = { .conns_per_user = 1024, .files_per_user = 4096 },
	};
	int opt, depth;

	while ((opt = getopt_long(argc, argv, "s:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.socket_path = optarg;
			break;
		case 'u':
			o.limits.conns_per_user = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'f':
			o.limits.files_per_user = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'v':
			rcd_log_level++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !o.limits.conns_per_user) {
		usage(stderr);
		return 2;
	}
	if (geteuid() != 0) {
		rcd_error("must run as root: it loads BPF programs for every "
			  "process of the node (run it from systemd, see "
			  "docs/regcached.md)");
		return 1;
	}
	depth = pid_ns_depth();
	if (depth != 1) {
		rcd_error("must run in the initial PID namespace (this one is "
			  "nested %d deep): the kernel names clients by their "
			  "global pid, which a nested daemon cannot see "
			  "(Kubernetes: hostPID: true)", depth - 1);
		return 1;
	}
	o.listen_fd = activated_fd();
	return rcd_server_run(&o);
}
