/* SPDX-License-Identifier: MIT */
/* A real RDMA device and a loopback RC queue pair; see verbs_device.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "verbs_device.h"

static uint8_t active_port(struct td *d)
{
	for (uint8_t p = 1; p <= d->attr.orig_attr.phys_port_cnt; p++) {
		T_REQUIRE(ibv_query_port(d->ctx, p, &d->pattr) == 0);
		if (d->pattr.state == IBV_PORT_ACTIVE)
			return p;
	}
	return 0;
}

static void pick_gid(struct td *d)
{
	const char *env = getenv("REGCACHE_TEST_GID_INDEX");

	d->gid_index = 0;
	if (env) {
		d->gid_index = atoi(env);
	} else {
		for (int i = 0; i < d->pattr.gid_tbl_len; i++) {
			struct ibv_gid_entry e;

			if (ibv_query_gid_ex(d->ctx, d->port, (uint32_t)i, &e, 0))
				continue;
			if (e.gid_type == IBV_GID_TYPE_ROCE_V2) {
				d->gid_index = i;
				break;
			}
		}
	}
	T_REQUIRE(ibv_query_gid(d->ctx, d->port, d->gid_index, &d->gid) == 0);
}

static void connect_self(struct td *d)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = d->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	T_REQUIRE(ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = d->pattr.active_mtu;
	a.dest_qp_num = d->qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = d->port;
	a.ah_attr.dlid = d->pattr.lid;
	if (d->pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = d->gid;
		a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	T_REQUIRE(ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_AV |
				IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER) == 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	T_REQUIRE(ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

void td_reconnect(struct td *d)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	while (ibv_poll_cq(d->cq, 1, &wc) > 0)
		;
	T_REQUIRE(ibv_modify_qp(d->qp, &a, IBV_QP_STATE) == 0);
	connect_self(d);
}

void td_open(struct td *d)
{
	const char *want = getenv("REGCACHE_TEST_IBDEV");
	struct ibv_device *dev = NULL;
	struct ibv_qp_init_attr qa;
	int n = 0;

	memset(d, 0, sizeof(*d));
	errno = 0;
	d->devs = ibv_get_device_list(&n);
	if (!d->devs && errno != ENOSYS) {
		fprintf(stderr, "ibv_get_device_list: %s\n", strerror(errno));
		exit(T_EXIT_FAIL);
	}
	for (int i = 0; i < n; i++)
		if (!want || !strcmp(want, ibv_get_device_name(d->devs[i]))) {
			dev = d->devs[i];
			break;
		}
	if (!dev) {
		printf("SKIP: No RDMA device found%s%s%s (tests/vm/run.sh runs "
		       "the suite with Soft-RoCE)\n",
		       !d->devs ? " (no kernel RDMA support)" : "",
		       want ? " named " : "", want ? want : "");
		exit(T_EXIT_SKIP);
	}
	d->name = ibv_get_device_name(dev);
	d->ctx = ibv_open_device(dev);
	T_REQUIRE(d->ctx);
	T_REQUIRE(ibv_query_device_ex(d->ctx, NULL, &d->attr) == 0);
	d->port = active_port(d);
	if (!d->port) {
		printf("SKIP: No active RDMA port on %s\n", d->name);
		exit(T_EXIT_SKIP);
	}
	pick_gid(d);
	d->pd = ibv_alloc_pd(d->ctx);
	T_REQUIRE(d->pd);
	d->cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	T_REQUIRE(d->cq);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = d->cq;
	qa.recv_cq = d->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	d->qp = ibv_create_qp(d->pd, &qa);
	T_REQUIRE(d->qp);
	connect_self(d);
	d->src = t_map(TD_MAX_LEN);
	d->src_mr = ibv_reg_mr(d->pd, d->src, TD_MAX_LEN,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	T_REQUIRE(d->src_mr);
	printf("device %s port %u (%s), max_mr %d, max_mr_size %#llx, "
	       "general ODP caps %#llx\n", d->name, d->port,
	       d->pattr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "IB",
	       d->attr.orig_attr.max_mr,
	       (unsigned long long)d->attr.orig_attr.max_mr_size,
	       (unsigned long long)d->attr.odp_caps.general_caps);
}

void td_close(struct td *d)
{
	ibv_dereg_mr(d->src_mr);
	munmap(d->src, TD_MAX_LEN);
	ibv_destroy_qp(d->qp);
	ibv_destroy_cq(d->cq);
	ibv_dealloc_pd(d->pd);
	ibv_close_device(d->ctx);
	ibv_free_device_list(d->devs);
}

enum ibv_wc_status td_rdma(struct td *d, enum ibv_wr_opcode op,
			   const void *local, uint32_t lkey,
			   const void *remote, uint32_t rkey, size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local,
			       .length = (uint32_t)len, .lkey = lkey };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	double t0 = t_now();
	int n;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)remote;
	wr.wr.rdma.rkey = rkey;
	T_REQUIRE(ibv_post_send(d->qp, &wr, &bad) == 0);
	while ((n = ibv_poll_cq(d->cq, 1, &wc)) == 0)
		/* A hang guard, not a timing assertion. */
		T_REQUIRE(t_now() - t0 < 30);
	T_REQUIRE(n == 1);
	return wc.status;
}

unsigned char td_byte(unsigned seed, size_t i)
{
	return (unsigned char)((seed * 29u + i * 3u + (i >> 10)) | 1u);
}

bool td_write_visible(struct td *d, void *buf, uint32_t rkey, size_t len,
		      unsigned seed)
{
	unsigned char *b = buf;
	enum ibv_wc_status st;

	T_REQUIRE(len <= TD_MAX_LEN);
	for (size_t i = 0; i < len; i++)
		d->src[i] = td_byte(seed, i);
	memset(buf, 0, len);
	st = td_rdma(d, IBV_WR_RDMA_WRITE, d->src, d->src_mr->lkey, buf, rkey,
		     len);
	if (st != IBV_WC_SUCCESS) {
		fprintf(stderr, "RDMA write of %zu bytes to %p (rkey %#x): %s\n",
			len, buf, rkey, ibv_wc_status_str(st));
		exit(T_EXIT_FAIL);
	}
	for (size_t i = 0; i < len; i++)
		if (b[i] != td_byte(seed, i))
			return false;
	return true;
}

int td_log_begin(void)
{
	FILE *f = tmpfile();
	int saved;

	T_REQUIRE(f);
	fflush(stderr);
	saved = dup(2);
	T_REQUIRE(saved >= 0);
	T_REQUIRE(dup2(fileno(f), 2) == 2);
	/* fd 2 keeps the file open. */
	fclose(f);
	return saved;
}

void td_log_end(int saved, char *out, size_t len)
{
	ssize_t n;

	fflush(stderr);
	T_REQUIRE(lseek(2, 0, SEEK_SET) == 0);
	n = read(2, out, len - 1);
	T_REQUIRE(n >= 0);
	out[n] = 0;
	T_REQUIRE(dup2(saved, 2) == 2);
	close(saved);
	fputs(out, stderr);
}
