/* SPDX-License-Identifier: MIT */
/*
 * Description: an MPI job of 2 ranks over a real RDMA device sends
 * through buffers that are freed, unmapped, remapped and madvised between
 * messages, through libc, raw syscalls and io_uring (bridge_churn.c); rank
 * 1 checks every byte of every message. Started by tests/mpi-rxe.sh with Open MPI's or
 * MPICH's launcher, with or without regcache-run per rank; built once
 * against each MPI found (mpi-rxe: the default, mpi-rxe-mpich: MPICH).
 *
 * Any even number of ranks: rank 2i sends to rank 2i+1, which checks. When
 * ranks 0 and 1 are on different nodes (tests/vm/nodes-mpi.sh: two
 * guests), each end's registrations happen on its own node's device, so
 * rank 0 and rank 1 each count theirs and rank 1 judges their sum; on one
 * node rank 1 alone counts, as every end is on its device.
 *
 *   mpi-rxe stale|clean|nocache [rounds] [bytes] [nocount]
 *
 * nocount: no MR count (eager sizes: the middleware copies through its own
 * pre-registered buffers, so no message registers); the bytes are checked.
 *
 * stale: the middleware's own hooks (the negative control): the messages
 * after each raw syscall and after io_uring's madvise must be corrupted. clean: none may be. Both must
 * cache: rank 1 counts the MRs the device registers (rxe_mr_count.h)
 * while a message goes through the buffers that never change, from round
 * 2, each between barriers, and there must be none (and some for one
 * through a remapped buffer: the count's control in each run). nocache:
 * UCX's and libfabric's caches off (UCX_RCACHE_ENABLE=n for UCP's own
 * cache, UCX_IB_REG_METHODS=direct for UCT's before UCX 1.14,
 * FI_MR_CACHE_MAX_COUNT=0), the count's negative control: at least one
 * registration for each such message, none corrupted. Rank 1 prints the
 * MPI library and the UCX and libfabric that the job loaded.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bridge_churn.h"
#include "rxe_mr_count.h"

/*
 * Print the MPI library's first line, and the UCX and libfabric loaded in
 * this process (asked of the copies already loaded: RTLD_NOLOAD). Return
 * 1 (printed with FAIL) when the one that $MPI_RXE_NEEDS names ("ucx",
 * "libfabric"; set by mpi-rxe.sh for its stack) is not loaded: the job
 * then ran on another transport than the test is about.
 */
static int print_versions(void)
{
	const char *needs = getenv("MPI_RXE_NEEDS");
	char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
	bool ucx = false, fabric = false;
	int n = 0;
	void *h;

	MPI_Get_library_version(mpi, &n);
	mpi[strcspn(mpi, "\n")] = '\0';
	printf("mpi-rxe: MPI library: %s\n", mpi);
	h = dlopen("libucp.so.0", RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		const char *(*ucp)(void) = (const char *(*)(void))dlsym(
			h, "ucp_get_version_string");

		printf("mpi-rxe: UCX %s loaded\n", ucp ? ucp() : "(unknown)");
		ucx = true;
		dlclose(h);
	}
	h = dlopen("libfabric.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		uint32_t (*fiv)(void) =
			(uint32_t (*)(void))dlsym(h, "fi_version");
		uint32_t v = fiv ? fiv() : 0;

		printf("mpi-rxe: libfabric %u.%u loaded\n", v >> 16,
		       v & 0xffff);
		fabric = true;
		dlclose(h);
	}
	if (!ucx && !fabric)
		printf("mpi-rxe: neither UCX nor libfabric loaded\n");
	fflush(stdout);
	if (needs && ((!strcmp(needs, "ucx") && !ucx) ||
		      (!strcmp(needs, "libfabric") && !fabric))) {
		printf("mpi-rxe: %s is not loaded (FAIL)\n", needs);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rank, size, fail = 0, split = 0, peer;
	char name[MPI_MAX_PROCESSOR_NAME] = "", name1[MPI_MAX_PROCESSOR_NAME];
	int name_len;
	long other_total = 0;
	bool expect_stale = argc > 1 && !strcmp(argv[1], "stale");
	bool caching = !(argc > 1 && !strcmp(argv[1], "nocache"));
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 21;
	size_t len = argc > 3 ? (size_t)atol(argv[3]) : 65536;
	/* Eager messages go through the middleware's own pre-registered
	 * bounce buffers: no MR to count, only the bytes to check. */
	bool count_mrs = !(argc > 4 && !strcmp(argv[4], "nocount"));
	struct churn c;
	struct mr_count count;

	if (!caching) {	/* before the middleware reads its configuration */
		/* UCX 1.14 dropped UCX_IB_REG_METHODS and warns that it
		 * is unused; UCX is not loaded yet to be asked. */
		setenv("UCX_RCACHE_ENABLE", "n", 1);
		setenv("UCX_IB_REG_METHODS", "direct", 1);
		setenv("FI_MR_CACHE_MAX_COUNT", "0", 1);
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || size % 2) {
		fprintf(stderr, "mpi-rxe: needs an even number of ranks, has %d (FAIL)\n", size);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	peer = rank ^ 1;
	MPI_Get_processor_name(name, &name_len);
	memcpy(name1, name, sizeof(name1));
	MPI_Bcast(name1, (int)sizeof(name1), MPI_CHAR, 1, MPI_COMM_WORLD);
	if (rank == 0) {
		split = strcmp(name, name1) != 0;
		printf("mpi-rxe: %d ranks, rank 0 on %s, rank 1 on %s%s\n", size,
		       name, name1, split ? ": each counts its own node's MRs" : "");
		fflush(stdout);
	}
	MPI_Bcast(&split, 1, MPI_INT, 0, MPI_COMM_WORLD);
	bool counter = count_mrs && (rank == 1 || (split && rank == 0));
	if (churn_init(&c, rank % 2 ? CHURN_RECEIVER : CHURN_SENDER, len)) {
		fprintf(stderr, "mpi-rxe: churn_init failed (FAIL)\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	/* While rank 0 waits, so that none of its registrations falls
	 * between the first probes. */
	MPI_Barrier(MPI_COMM_WORLD);
	if ((rank == 1 && print_versions()) ||
	    (counter && mr_count_begin(&count)))
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Barrier(MPI_COMM_WORLD);
	for (unsigned r = 0; r < rounds && !fail; r++) {
		for (int k = 0; k < CHURN_NKINDS; k++) {
			char *buf = churn_next(&c, r, k);
			int tag = (int)(r * CHURN_NKINDS + k);
			/* Rank 1 counts what a counted message registers
			 * at either end, between barriers that keep the
			 * other messages out. */
			bool counted = count_mrs && mr_count_counts(r, k);

			if (!buf) {
				/* Printed; the peer is told by the abort. */
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			if (counted) {
				MPI_Barrier(MPI_COMM_WORLD);
				if (counter)
					mr_count_msg_begin(&count);
				MPI_Barrier(MPI_COMM_WORLD);
			}
			if (rank % 2 == 0) {
				MPI_Send(buf, (int)len, MPI_BYTE, peer, tag,
					 MPI_COMM_WORLD);
			} else {
				MPI_Recv(buf, (int)len, MPI_BYTE, peer, tag,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				churn_check(&c, r, k, buf);
			}
			if (counted) {
				/* Every end done with the message (its
				 * registrations made) before the counts, and
				 * every count taken before the next one. */
				MPI_Barrier(MPI_COMM_WORLD);
				if (counter && !split)
					mr_count_msg_end(&count, k);
				if (split) {
					long mine = counter ? mr_count_msg_regs(&count) : 0;
					long sum = 0, lo = 0;

					MPI_Reduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, 1,
						   MPI_COMM_WORLD);
					MPI_Reduce(&mine, &lo, 1, MPI_LONG, MPI_MIN, 1,
						   MPI_COMM_WORLD);
					if (rank == 1)
						mr_count_msg_record(&count, k,
								    lo < 0 ? -1 : sum);
				}
				MPI_Barrier(MPI_COMM_WORLD);
			}
		}
	}
	if (split && count_mrs) {
		long mine = 0;

		if (rank == 0) {
			mr_count_msg_regs(&count);	/* the last probe */
			mine = count.total;
			mr_count_close(&count);
		}
		MPI_Reduce(&mine, &other_total, 1, MPI_LONG, MPI_SUM, 1,
			   MPI_COMM_WORLD);
	}
	if (rank == 1 && count_mrs) {
		count.total += other_total;	/* both nodes' devices */
		fail = mr_count_churn_verdict(&count, &c, rounds, caching,
				"mpi-rxe", !caching ?
				"mpi-rxe: the middleware's caches off" :
				expect_stale ? "mpi-rxe: the middleware's own hooks" :
				"mpi-rxe: regcache-run", expect_stale,
				"corruption after raw syscalls and io_uring");
		fflush(stdout);
	} else if (rank % 2 && (rank != 1 || !count_mrs)) {
		/* Another pair's receiver, or no count: the messages. */
		fail = churn_verdict(&c, "mpi-rxe", rank == 1 ?
				     "mpi-rxe: rank 1's messages (no MR count)" :
				     "mpi-rxe: another pair's messages",
				     expect_stale,
				     "corruption after raw syscalls and io_uring");
		fflush(stdout);
	}
	int any = 0;

	MPI_Allreduce(&fail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	fail = any;
	MPI_Finalize();
	return fail;
}
