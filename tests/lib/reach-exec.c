/* SPDX-License-Identifier: MIT */
/*
 * reach-exec PATH... -- COMMAND [ARG...]: COMMAND in a mount namespace of
 * its own in which every directory on each PATH is searchable by other
 * users (tools/common/reachable.h), for the shell tests that drop to uid
 * 65534 with setpriv and run a program of the build tree: a checkout in
 * root's home is closed to that user. Root only; exits 1 with the reason
 * when a PATH cannot be made reachable, 127 when COMMAND cannot run.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "reachable.h"

int main(int argc, char **argv)
{
	int i, err;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		err = reach_path_for_all(argv[i]);
		if (err) {
			fprintf(stderr, "reach-exec: %s: %s\n", argv[i],
				strerror(-err));
			return 1;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: reach-exec PATH... -- COMMAND [ARG...]\n");
		return 2;
	}
	execvp(argv[i + 1], argv + i + 1);
	perror(argv[i + 1]);
	return 127;
}
