/* SPDX-License-Identifier: MIT */
/*
 * How many memory regions a device registered while a middleware moved
 * one message, counted from outside the middleware, so that a test proves
 * that the middleware's registration cache still caches: a bridge that
 * made it drop its entries on every change would lose no message and
 * still be wrong.
 *
 * Soft-RoCE numbers its MRs from one cyclic sequence (the rxe pool's
 * xa_alloc_cyclic; the index is lkey >> 8), so the index of a probe MR of
 * our own, registered before and after a message, says how many MRs were
 * created in between, by any process on that device. mr_count_begin()
 * checks that two probes in a row are numbered one apart (in one of 20
 * tries, as another process may register in between); where they never
 * are, nothing is counted and the verdict fails.
 *
 * Two kinds of message are counted (bridge_churn.h), from round 2 on:
 * through the pair of buffers nobody changes (CHURN_NONE), which a
 * caching middleware must serve from its cache at both ends, and through
 * the pair changed by libc munmap + mmap (CHURN_MUNMAP), which every
 * middleware must register again: the control inside each run, which
 * shows that the count sees this run's registrations on this device.
 */
#ifndef T_RXE_MR_COUNT_H
#define T_RXE_MR_COUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ibv_context;
struct ibv_pd;
struct churn;

struct mr_count {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	void *page;
	uint32_t last;		/* the last probe's index */
	bool sequential;	/* the device numbers MRs one after another */
	long total;		/* MRs counted between all the probes */
	/* Messages counted through unchanged and through remapped
	 * buffers, what each kind registered, and how many remapped ones
	 * registered nothing. */
	unsigned long stable, remapped, remapped_empty;
	long stable_regs, remapped_regs;
};

/* Is there an RDMA device (an entry in /sys/class/infiniband)? The tests
 * skip without one. */
bool have_rdma_device(void);
/* The same, and when there is none, print that the test skips and where
 * one is to be had. */
bool rdma_device_or_skip(void);

/*
 * What a churn test over a device (fabric-rxe, ucp-rxe) runs, its first
 * argument: "stale", the middleware's own monitor, the negative control
 * (messages after raw syscalls must be corrupted); "clean", under
 * regcache-run (none may be); "nocache", the middleware's cache off, the
 * count's negative control.
 */
enum mr_count_mode { MR_COUNT_STALE, MR_COUNT_CLEAN, MR_COUNT_NOCACHE };
/* Their command line, MODE [rounds] [bytes]: by default 21 rounds of
 * 64 KiB messages. Return: 0, or -1 if argv[1] names no mode (or there
 * is none). */
int mr_count_args(int argc, char **argv, enum mr_count_mode *mode,
		  unsigned *rounds, size_t *len);

/*
 * Open the device the middleware uses ($REGCACHE_TEST_IBDEV, else the
 * first) and take the first probes. Return: 0, or -errno (printed).
 */
int mr_count_begin(struct mr_count *m);

/* Is message (@round, @kind) one of those counted? */
bool mr_count_counts(unsigned round, int kind);

/* Around message (@round, @kind), when mr_count_counts() says so. */
void mr_count_msg_begin(struct mr_count *m);
void mr_count_msg_end(struct mr_count *m, int kind);

/*
 * The same in two halves, for a message whose ends are on two nodes (two
 * devices), each counted on its own: mr_count_msg_regs() on each, then
 * mr_count_msg_record() of their sum (-1 when either failed) on one.
 */
long mr_count_msg_regs(struct mr_count *m);
void mr_count_msg_record(struct mr_count *m, int kind, long regs);
/* Close the device of a count that is not judged here. */
void mr_count_close(struct mr_count *m);

/*
 * The verdict on a churn loop of @rounds rounds over the device, printed
 * under @test: first the count, then churn_verdict(@rx, @test, @title,
 * @expect_stale, @stale_expected). Every counted message must have been
 * counted; each remapped one must have registered at least once; with
 * @caching the unchanged ones none, without it (the middleware's cache
 * off: the negative control) at least one each. Takes the last probe and
 * closes the device. Return: 0 pass, 1 fail (printed with FAIL).
 */
int mr_count_churn_verdict(struct mr_count *m, const struct churn *rx,
			   unsigned rounds, bool caching, const char *test,
			   const char *title, bool expect_stale,
			   const char *stale_expected);
/*
 * The same in @mode (caching but in nocache, stale expected in stale),
 * under the title "@test: " and what ran: @own (the middleware's own
 * monitor), regcache's bridge, or @off (its cache off).
 */
int mr_count_mode_verdict(struct mr_count *m, const struct churn *rx,
			  unsigned rounds, enum mr_count_mode mode,
			  const char *test, const char *own, const char *off,
			  const char *stale_expected);

#endif
