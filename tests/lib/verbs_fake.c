/* SPDX-License-Identifier: MIT */
/* The verbs test double; see verbs_fake.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_fake.h"

struct verbs_fake vf;
static pthread_mutex_t vf_lock = PTHREAD_MUTEX_INITIALIZER;

static int fake_query_device_ex(struct ibv_context *context,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size)
{
	(void)context;
	(void)input;
	pthread_mutex_lock(&vf_lock);
	vf.query_calls++;
	if (!vf.query_ret)
		memcpy(attr, &vf.attr,
		       attr_size < sizeof(vf.attr) ? attr_size : sizeof(vf.attr));
	pthread_mutex_unlock(&vf_lock);
	return vf.query_ret;
}

static int fake_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			  uint32_t flags, struct ibv_sge *sg_list,
			  uint32_t num_sges)
{
	(void)pd;
	pthread_mutex_lock(&vf_lock);
	vf.advise_calls++;
	vf.last_advise.advice = (int)advice;
	vf.last_advise.flags = flags;
	vf.last_advise.nsge = num_sges;
	for (uint32_t i = 0; i < num_sges; i++) {
		if (i < VF_MAX_SGES)
			vf.last_advise.sge[i] = sg_list[i];
		vf.advised_bytes += sg_list[i].length;
	}
	pthread_mutex_unlock(&vf_lock);
	return vf.advise_ret;
}

void vf_init(void)
{
	struct verbs_context *vctx = vf.vctx;

	memset(&vf, 0, sizeof(vf));
	if (!vctx) {
		vctx = calloc(1, sizeof(*vctx));
		if (!vctx)
			abort();
		/* What verbs_get_ctx_op() checks before it calls an op. */
		vctx->sz = sizeof(*vctx);
		vctx->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
		vctx->query_device_ex = fake_query_device_ex;
		vctx->advise_mr = fake_advise_mr;
	}
	vf.vctx = vctx;
	vf.pd.context = &vctx->context;
	vf.pd.handle = 7;
}

void vf_set_odp(bool implicit, bool atomic)
{
	vf.attr.odp_caps.general_caps =
		IBV_ODP_SUPPORT | (implicit ? IBV_ODP_SUPPORT_IMPLICIT : 0);
	vf.attr.odp_caps.per_transport_caps.rc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		(atomic ? IBV_ODP_SUPPORT_ATOMIC : 0);
}

struct vf_mr *vf_find(const struct ibv_mr *mr)
{
	for (unsigned i = 0; i < vf.nmrs; i++)
		if (&vf.mrs[i].mr == mr)
			return &vf.mrs[i];
	return NULL;
}

static struct ibv_mr *fake_reg(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, unsigned access)
{
	struct vf_mr *m;
	bool odp = access & IBV_ACCESS_ON_DEMAND;

	pthread_mutex_lock(&vf_lock);
	vf.reg_calls++;
	vf.last_reg.addr = addr;
	vf.last_reg.len = length;
	vf.last_reg.iova = iova;
	vf.last_reg.access = access;
	vf.last_reg.mr = NULL;
	if (pd != &vf.pd) {
		fprintf(stderr, "verbs_fake: registration in pd %p, not the "
			"fake's %p\n", (void *)pd, (void *)&vf.pd);
		pthread_mutex_unlock(&vf_lock);
		errno = EINVAL;
		return NULL;
	}
	if (vf.fail_count) {
		vf.fail_count--;
		pthread_mutex_unlock(&vf_lock);
		errno = vf.fail_errno;
		return NULL;
	}
	if (!odp && vf.budget && vf.live_bytes + length > vf.budget) {
		pthread_mutex_unlock(&vf_lock);
		errno = ENOMEM;
		return NULL;
	}
	m = NULL;
	if (vf.nmrs < VF_MAX_MRS) {
		m = &vf.mrs[vf.nmrs++];
	} else {
		/* Recycle a deregistered record (stress tests). */
		for (unsigned i = 0; i < VF_MAX_MRS && !m; i++)
			if (!vf.mrs[i].live)
				m = &vf.mrs[i];
	}
	if (!m) {
		pthread_mutex_unlock(&vf_lock);
		errno = ENOSPC;
		return NULL;
	}
	vf.next_key++;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.handle = vf.next_key;
	m->mr.lkey = 0x1000u + vf.next_key;
	m->mr.rkey = 0x80000000u + vf.next_key;
	m->live = true;
	m->iova = iova;
	m->access = access;
	vf.reg_ok++;
	vf.live++;
	if (!odp)
		vf.live_bytes += length;
	vf.last_reg.mr = &m->mr;
	pthread_mutex_unlock(&vf_lock);
	return &m->mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	return fake_reg(pd, addr, length, iova, access);
}

/* <infiniband/verbs.h> makes ibv_reg_mr a macro; define the function. */
#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	return fake_reg(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct vf_mr *m;
	int ret;

	pthread_mutex_lock(&vf_lock);
	vf.dereg_calls++;
	m = vf_find(mr);
	if (!m || !m->live) {
		fprintf(stderr, "verbs_fake: ibv_dereg_mr(%p) of an MR that "
			"is not live: double deregistration\n", (void *)mr);
		pthread_mutex_unlock(&vf_lock);
		abort();
	}
	ret = vf.dereg_ret;
	if (!ret) {
		m->live = false;
		vf.live--;
		if (!(m->access & IBV_ACCESS_ON_DEMAND))
			vf.live_bytes -= m->mr.length;
	}
	pthread_mutex_unlock(&vf_lock);
	return ret;
}
