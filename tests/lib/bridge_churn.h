/* SPDX-License-Identifier: MIT */
/*
 * A message loop's buffers, changed behind the middleware's back between
 * messages (ucp-rxe.c, mpi-rxe.c, fabric-rxe.c): the middleware (UCX,
 * Open MPI, libfabric) sends and receives through them over a real RDMA
 * device with its own registration cache, and the receiver checks every
 * byte. Plain C, libc and liburing (for the io_uring kind; this header
 * includes neither), so that it links into an MPI program.
 *
 * Each kind of change has its own pair of buffers (one the sender's, one
 * the receiver's). Round 0 sends through every pair once, so both buffers
 * are registered and cached; in each later round one side (the sender in
 * odd rounds, the receiver in even ones) changes its buffer of each pair
 * before the message goes through it:
 *  - the sender's new pages get the message's pattern; a stale
 *    registration sends the old pages' bytes (the previous pattern);
 *  - the receiver's new pages are poisoned; a stale registration lands
 *    the message in the old pages and the application reads the poison.
 * A change that cannot put new pages at the same address (another thread
 * took it) is counted as "moved": the message is still checked.
 */
#ifndef T_BRIDGE_CHURN_H
#define T_BRIDGE_CHURN_H

#include <stdbool.h>
#include <stddef.h>

struct io_uring;

enum churn_kind {
	CHURN_NONE,		/* no change: the cache must hit and be right */
	CHURN_FREE,		/* free() of an mmap-served block, malloc again */
	CHURN_MUNMAP,		/* libc munmap, mmap again */
	CHURN_RAW_MUNMAP,	/* syscall(SYS_munmap), syscall(SYS_mmap) */
	CHURN_MREMAP,		/* libc mremap: shrink, grow back (new tail) */
	CHURN_RAW_MREMAP,	/* syscall(SYS_mremap) of fresh pages over it */
	CHURN_MADVISE,		/* libc madvise(MADV_DONTNEED) */
	CHURN_RAW_MADVISE,	/* syscall(SYS_madvise, MADV_DONTNEED) */
	CHURN_URING_MADVISE,	/* io_uring IORING_OP_MADVISE(MADV_DONTNEED) */
	CHURN_NKINDS
};
extern const char *const churn_kind_name[CHURN_NKINDS];

enum churn_side { CHURN_SENDER, CHURN_RECEIVER };

struct churn {
	enum churn_side side;
	size_t len;			/* bytes per message */
	char *buf[CHURN_NKINDS];
	/* Receiver's counts, per kind, of rounds that changed a buffer. */
	unsigned long msgs[CHURN_NKINDS][2];
	unsigned long bad[CHURN_NKINDS][2];
	unsigned long moved;
	struct io_uring *ring;		/* CHURN_URING_MADVISE's own ring */
};

/*
 * Maps this side's buffers and sets up the ring of CHURN_URING_MADVISE,
 * which must support IORING_OP_MADVISE (io_uring_get_probe_ring()): a kernel
 * or liburing without it cannot run that kind, and the loop does not run
 * without it (printed with the reason and FAIL). Return: 0, or -errno.
 */
int churn_init(struct churn *c, enum churn_side side, size_t len);

/*
 * The buffer for message (@round, @kind): changed first if it is this
 * side's turn, then filled with the message's pattern (sender) or poisoned
 * (receiver). Return: the buffer, NULL when the change failed (printed).
 */
char *churn_next(struct churn *c, unsigned round, enum churn_kind kind);

/* Receiver: check the message just received into @buf. Return: true when
 * every byte is the message's. Counted in c->msgs/bad. */
bool churn_check(struct churn *c, unsigned round, enum churn_kind kind,
		 const char *buf);

/* Which side changed its buffer before message @round (-1: none). */
int churn_changed_side(unsigned round);

/* Print the receiver's table under @title. Return: corrupted messages in
 * total; *raw: those after the kinds libc does not see (churn_kind_is_raw). */
unsigned long churn_report(const struct churn *c, const char *title,
			   unsigned long *raw);

/*
 * The kinds that no libc call makes (raw syscalls, io_uring): hooks on
 * libc (UCX's, libfabric's memhooks, Open MPI's patcher) cannot see them.
 */
bool churn_kind_is_raw(enum churn_kind kind);

/*
 * The receiver's verdict, printed under @test ("ucp-rxe", ...): the table
 * (churn_report() under @title), the count, then FAIL when a message with
 * no change was corrupted, or when @expect_stale and some kind libc does
 * not see (churn_kind_is_raw) had no corrupted message (@stale_expected
 * says what was expected; the control must see each such kind in the
 * same run), or when !@expect_stale and any message was; else PASS.
 * Return: 0 pass, 1 fail.
 */
int churn_verdict(const struct churn *c, const char *test, const char *title,
		  bool expect_stale, const char *stale_expected);

#endif
