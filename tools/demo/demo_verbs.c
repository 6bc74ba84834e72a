/* SPDX-License-Identifier: MIT */
/*
 * regcache-demo --verbs: the same workload with a real RDMA device as the
 * "NIC". Every registration is an ibv_reg_mr (the no-cache and naive rows
 * call it here; the regcache rows through regcache_verbs_create(), the
 * shipped registrar), and every message is an RDMA WRITE over an RC queue
 * pair connected to itself, from a buffer of the demo's own into the
 * application's buffer through the registration's rkey: the device writes
 * into the pages it pinned, so a stale MR loses the message exactly as on a
 * NIC. On Soft-RoCE (rxe) the kernel copies into the pinned pages.
 */
#include <errno.h>
#include <stdio.h>

#include "demo.h"

#ifdef DEMO_HAVE_VERBS
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>
#include <regcache/verbs.h>


#define VERBS_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define MR_TABLE 65536u		/* what each MR registered, by kernel handle */

static struct {
	struct ibv_device **devs;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_port_attr pattr;
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	unsigned char *src;
	struct ibv_mr *src_mr;
	struct {
		const struct ibv_mr *mr;
		uintptr_t addr;
		size_t len;
		unsigned long epoch;
	} mrs[MR_TABLE];
} v;

static int connect_self(void)
{
	struct ibv_qp_attr a = { 0 };

	a.qp_state = IBV_QPS_INIT;
	a.port_num = v.port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(v.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = v.pattr.active_mtu;
	a.dest_qp_num = v.qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = v.port;
	a.ah_attr.dlid = v.pattr.lid;
	if (v.pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = v.gid;
		a.ah_attr.grh.sgid_index = (uint8_t)v.gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (ibv_modify_qp(v.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(v.qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		return -errno;
	return 0;
}

bool demo_verbs_available(char *why, size_t len)
{
	struct ibv_device **devs;
	bool found = false;
	int n = 0;

	devs = ibv_get_device_list(&n);
	for (int i = 0; i < n; i++)
		if (!demo_opt.ibdev[0] ||
		    !strcmp(demo_opt.ibdev, ibv_get_device_name(devs[i]))) {
			snprintf(why, len, "%s", ibv_get_device_name(devs[i]));
			found = true;
			break;
		}
	if (!found)
		snprintf(why, len, "no RDMA device%s%s found (tests/vm/run.sh "
			 "gives one: Soft-RoCE)", demo_opt.ibdev[0] ? " " : "",
			 demo_opt.ibdev);
	if (devs)
		ibv_free_device_list(devs);
	return found;
}

int demo_verbs_init(void)
{
	struct ibv_device_attr dattr;
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_device *dev = NULL;
	int n = 0;

	v.devs = ibv_get_device_list(&n);
	for (int i = 0; i < n; i++)
		if (!demo_opt.ibdev[0] ||
		    !strcmp(demo_opt.ibdev, ibv_get_device_name(v.devs[i]))) {
			dev = v.devs[i];
			break;
		}
	if (!dev || !(v.ctx = ibv_open_device(dev)))
		return -ENODEV;
	if (ibv_query_device(v.ctx, &dattr))
		return -EIO;
	for (uint8_t p = 1; p <= dattr.phys_port_cnt && !v.port; p++)
		if (!ibv_query_port(v.ctx, p, &v.pattr) &&
		    v.pattr.state == IBV_PORT_ACTIVE)
			v.port = p;
	if (!v.port)
		return -ENETDOWN;
	for (int i = 0; i < v.pattr.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (!ibv_query_gid_ex(v.ctx, v.port, (uint32_t)i, &e, 0) &&
		    e.gid_type == IBV_GID_TYPE_ROCE_V2) {
			v.gid_index = i;
			break;
		}
	}
	if (ibv_query_gid(v.ctx, v.port, v.gid_index, &v.gid))
		return -EIO;
	v.pd = ibv_alloc_pd(v.ctx);
	v.cq = v.pd ? ibv_create_cq(v.ctx, 4, NULL, NULL, 0) : NULL;
	if (!v.cq)
		return -ENOMEM;
	qa.send_cq = v.cq;
	qa.recv_cq = v.cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 2;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	v.qp = ibv_create_qp(v.pd, &qa);
	if (!v.qp)
		return -errno;
	v.src = mmap(NULL, DEV_MSG_MAX, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v.src == MAP_FAILED)
		return -ENOMEM;
	v.src_mr = ibv_reg_mr(v.pd, v.src, DEV_MSG_MAX, 0);
	if (!v.src_mr)
		return -errno;
	return connect_self();
}

int demo_verbs_cache(const struct regcache_params *p, struct regcache **c)
{
	return regcache_verbs_create(v.pd, p, c);
}

const char *demo_verbs_device(void)
{
	return v.ctx ? ibv_get_device_name(v.ctx->device) : "?";
}

int demo_verbs_reg(void *addr, size_t len, void **handle)
{
	struct ibv_mr *mr = ibv_reg_mr_iova2(v.pd, addr, len, (uintptr_t)addr,
					     VERBS_ACCESS);
	unsigned i;

	if (!mr) {
		atomic_fetch_add(&demo_dev.failures, 1);
		return errno ? -errno : -EIO;
	}
	i = mr->handle % MR_TABLE;
	v.mrs[i].mr = mr;
	v.mrs[i].addr = (uintptr_t)addr;
	v.mrs[i].len = len;
	v.mrs[i].epoch = demo_dev.epoch;
	atomic_fetch_add(&demo_dev.regs, 1);
	atomic_fetch_add(&demo_dev.reg_bytes, len);
	*handle = mr;
	return 0;
}

void demo_verbs_dereg(void *handle)
{
	struct ibv_mr *mr = handle;

	v.mrs[mr->handle % MR_TABLE].mr = NULL;
	ibv_dereg_mr(mr);
	atomic_fetch_add(&demo_dev.deregs, 1);
}

bool demo_verbs_range(void *handle, uintptr_t *addr, size_t *len,
		      unsigned long *epoch)
{
	const struct ibv_mr *mr = handle;
	unsigned i = mr->handle % MR_TABLE;

	if (v.mrs[i].mr != mr)
		return false;
	*addr = v.mrs[i].addr;
	*len = v.mrs[i].len;
	*epoch = v.mrs[i].epoch;
	return true;
}

int demo_verbs_dma_check(void *handle, void *dst, size_t len, uint64_t seed)
{
	const struct ibv_mr *mr = handle;
	struct ibv_sge sge = { .addr = (uintptr_t)v.src,
			       .length = (uint32_t)len,
			       .lkey = v.src_mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;
	double t0 = now_ns();
	int n;

	if (len > DEV_MSG_MAX)
		return -EINVAL;
	memcpy(v.src, dev_pattern(seed), len);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = mr->rkey;
	if (ibv_post_send(v.qp, &wr, &bad))
		return -EIO;
	while ((n = ibv_poll_cq(v.cq, 1, &wc)) == 0)
		if (now_ns() - t0 > 30e9)
			return -ETIMEDOUT;
	if (n < 0 || wc.status != IBV_WC_SUCCESS)
		return -EIO;
	return !memcmp(dst, dev_pattern(seed), len);
}

void demo_verbs_fini(void)
{
	if (v.src_mr)
		ibv_dereg_mr(v.src_mr);
	if (v.qp)
		ibv_destroy_qp(v.qp);
	if (v.cq)
		ibv_destroy_cq(v.cq);
	if (v.pd)
		ibv_dealloc_pd(v.pd);
	if (v.ctx)
		ibv_close_device(v.ctx);
	if (v.devs)
		ibv_free_device_list(v.devs);
}

#else /* built without the verbs registrar */

bool demo_verbs_available(char *why, size_t len)
{
	snprintf(why, len, "this regcache-demo was built without libibverbs "
		 "(REGCACHE_WITH_VERBS=OFF)");
	return false;
}

int demo_verbs_init(void) { return -ENOSYS; }
void demo_verbs_fini(void) {}
const char *demo_verbs_device(void) { return "-"; }
int demo_verbs_cache(const struct regcache_params *p, struct regcache **c)
{
	(void)p;
	(void)c;
	return -ENOSYS;
}
int demo_verbs_reg(void *addr, size_t len, void **handle)
{
	(void)addr;
	(void)len;
	(void)handle;
	return -ENOSYS;
}
void demo_verbs_dereg(void *handle) { (void)handle; }
int demo_verbs_dma_check(void *handle, void *dst, size_t len, uint64_t seed)
{
	(void)handle;
	(void)dst;
	(void)len;
	(void)seed;
	return -ENOSYS;
}
bool demo_verbs_range(void *handle, uintptr_t *addr, size_t *len,
		      unsigned long *epoch)
{
	(void)handle;
	(void)addr;
	(void)len;
	(void)epoch;
	return false;
}
#endif
