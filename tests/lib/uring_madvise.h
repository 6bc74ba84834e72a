/* SPDX-License-Identifier: MIT */
/*
 * io_uring IORING_OP_MADVISE of a range, submitted and waited for: a change
 * the kernel makes for the ring, with no madvise syscall in the process.
 * Header-only, so that the programs built without the test helpers (the
 * MPI and UCP loops of bridge_churn.c) use the same one.
 */
#ifndef T_URING_MADVISE_H
#define T_URING_MADVISE_H

#include <errno.h>
#include <stddef.h>

#include <liburing.h>

/* Return: the CQE's res (0, or the kernel's -errno), or -errno when no SQE
 * was free or the submit or the wait failed. */
static inline int t_uring_madvise(struct io_uring *ring, void *addr,
				  size_t len, int advice)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_madvise(sqe, addr, len, advice);
	ret = io_uring_submit(ring);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

#endif
