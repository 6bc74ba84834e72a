/* SPDX-License-Identifier: MIT */
/*
 * Description: an MPI job of 2 ranks over a real RDMA device sends
 * through buffers that are freed, unmapped, remapped and madvised between
 * messages, libc and raw syscalls (bridge_churn.c); rank 1 checks every
 * byte of every message. Started by tests/mpi-rxe.sh with Open MPI's
 * launcher, with or without regcache-run per rank.
 *
 *   mpi-rxe stale|clean [rounds] [bytes]
 *
 * stale: the middleware's own hooks (the negative control): the messages
 * after raw syscalls must be corrupted. clean: none may be.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bridge_churn.h"

int main(int argc, char **argv)
{
	int rank, size, fail = 0;
	bool expect_stale = argc > 1 && !strcmp(argv[1], "stale");
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 21;
	size_t len = argc > 3 ? (size_t)atol(argv[3]) : 65536;
	struct churn c;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		fprintf(stderr, "mpi-rxe: needs 2 ranks, has %d (FAIL)\n", size);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (churn_init(&c, rank ? CHURN_RECEIVER : CHURN_SENDER, len)) {
		fprintf(stderr, "mpi-rxe: churn_init failed (FAIL)\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (unsigned r = 0; r < rounds && !fail; r++) {
		for (int k = 0; k < CHURN_NKINDS; k++) {
			char *buf = churn_next(&c, r, k);
			int tag = (int)(r * CHURN_NKINDS + k);

			if (!buf) {
				/* Printed; the peer is told by the abort. */
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			if (rank == 0) {
				MPI_Send(buf, (int)len, MPI_BYTE, 1, tag,
					 MPI_COMM_WORLD);
			} else {
				MPI_Recv(buf, (int)len, MPI_BYTE, 0, tag,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				churn_check(&c, r, k, buf);
			}
		}
	}
	if (rank == 1) {
		fail = churn_verdict(&c, "mpi-rxe", expect_stale ?
				     "mpi-rxe: the middleware's own hooks" :
				     "mpi-rxe: regcache-run", expect_stale,
				     "corruption after raw syscalls");
		fflush(stdout);
	}
	MPI_Bcast(&fail, 1, MPI_INT, 1, MPI_COMM_WORLD);
	MPI_Finalize();
	return fail;
}
