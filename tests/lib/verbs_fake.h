/* SPDX-License-Identifier: MIT */
/*
 * A link-time test double of the verbs calls the registrar makes.
 *
 * ibv_reg_mr, ibv_reg_mr_iova2 and ibv_dereg_mr are defined in the test
 * executable, so they interpose on libibverbs' definitions for
 * libregcache.so (the executable comes first in the dynamic linker's
 * lookup order). ibv_query_device_ex and ibv_advise_mr are static inline in
 * <infiniband/verbs.h> and dispatch through struct verbs_context, so the
 * double supplies a fake context whose ops record their calls. No device,
 * no kernel module: every call is recorded in vf and can be made to fail.
 */
#ifndef T_VERBS_FAKE_H
#define T_VERBS_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define VF_MAX_MRS 4096
#define VF_MAX_SGES 64

struct vf_mr {
	struct ibv_mr mr;
	bool live;
	uint64_t iova;
	unsigned access;
};

struct verbs_fake {
	struct verbs_context *vctx;
	struct ibv_pd pd;

	/* What ibv_query_device_ex reports, and its return value. */
	struct ibv_device_attr_ex attr;
	int query_ret;

	/* Failure injection: the next fail_count registrations fail with
	 * fail_errno (0 means "NULL without setting errno"). */
	int fail_errno;
	int fail_count;
	/* RLIMIT_MEMLOCK of the double: pinned (non-ODP) registrations
	 * beyond this many live bytes fail with ENOMEM. 0: unlimited. */
	size_t budget;
	/* Positive errno that ibv_dereg_mr returns (0: success). */
	int dereg_ret;
	/* Positive errno that ibv_advise_mr returns (0: success). */
	int advise_ret;

	/* Records. */
	long reg_calls, reg_ok, dereg_calls, query_calls, advise_calls;
	long live;
	size_t live_bytes;
	struct {
		void *addr;
		size_t len;
		uint64_t iova;
		unsigned access;
		struct ibv_mr *mr;
	} last_reg;
	struct {
		int advice;
		uint32_t flags;
		uint32_t nsge;
		struct ibv_sge sge[VF_MAX_SGES];
	} last_advise;
	uint64_t advised_bytes;

	struct vf_mr mrs[VF_MAX_MRS];
	unsigned nmrs;
	uint32_t next_key;
};

extern struct verbs_fake vf;

/* Reset every record and set up the fake device: no ODP. */
void vf_init(void);
/* Give the fake device implicit ODP for RC send/recv/write/read
 * (+ atomic when @atomic). */
void vf_set_odp(bool implicit, bool atomic);
/* The record of @mr, or NULL if the double never returned it. */
struct vf_mr *vf_find(const struct ibv_mr *mr);

#endif
