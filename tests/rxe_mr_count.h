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
 * checks that two probes in a row are numbered one apart; where they are
 * not (another device), nothing is counted and the verdict says so.
 */
#ifndef T_RXE_MR_COUNT_H
#define T_RXE_MR_COUNT_H

#include <stdbool.h>
#include <stdint.h>

struct ibv_context;
struct ibv_pd;

struct mr_count {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	void *page;
	uint32_t last;		/* the last probe's index */
	bool sequential;	/* the device numbers MRs one after another */
	long total;		/* MRs counted by every mr_count_since() */
	/* Between mr_count_stable_begin() and _end(): the messages through
	 * buffers nobody changed, and what they registered. */
	unsigned long stable;
	long stable_regs;
};

/* Open the first RDMA device and take the first probe. Return: 0, or
 * -errno (printed). */
int mr_count_begin(struct mr_count *m);

/* MRs the device created since the last probe, the probes excluded; -1
 * when they cannot be counted. Added to m->total. */
long mr_count_since(struct mr_count *m);

/* Around one message through buffers that nobody changed. */
void mr_count_stable_begin(struct mr_count *m);
void mr_count_stable_end(struct mr_count *m);

struct churn;

/*
 * The verdict on a churn loop (bridge_churn.h) of @messages messages over
 * the device, printed under @test: first the count, then
 * churn_verdict(@rx, @test, @title, @expect_stale, @stale_expected). A
 * caching middleware (@caching) must register nothing for the messages
 * through unchanged buffers, every one a hit at both ends, while the loop
 * changes the others around them; one whose cache is off must register at
 * least once for each (the negative control, which shows that the count
 * sees registrations). Takes the last probe and closes the device.
 * Return: 0 pass, 1 fail (printed with FAIL).
 */
int mr_count_churn_verdict(struct mr_count *m, const struct churn *rx,
			   unsigned long messages, bool caching,
			   const char *test, const char *title,
			   bool expect_stale, const char *stale_expected);

#endif
