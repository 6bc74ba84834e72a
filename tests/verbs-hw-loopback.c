/* SPDX-License-Identifier: MIT */
/*
 * Description: on a real RDMA device, data written by the NIC through a
 * cached registration lands where the application sees it. An RC queue
 * pair connected to itself RDMA-writes a pattern from one buffer into
 * another, both registered through regcache_verbs_sge()/regcache_get();
 * the test checks the bytes, reuses the registrations (hits where the
 * monitor can cache), then munmaps and mmaps the target at the same address
 * and checks that the next write still reaches the application (no stale
 * MR). Repeated with implicit ODP where the device has it. Skips (77) with
 * "No RDMA device found" where ibv_get_device_list() finds none, and with
 * "No active RDMA port" where no port is up. Set REGCACHE_TEST_IBDEV to
 * choose the device, REGCACHE_TEST_GID_INDEX the RoCE GID.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "helpers.h"

#define LEN (64 * 1024)
#define ROUNDS 16

struct hw {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t port;
	struct ibv_port_attr pattr;
	int gid_index;
	union ibv_gid gid;
};

static size_t pg;

static unsigned char byte_of(unsigned seed, size_t i)
{
	return (unsigned char)((seed * 29u + i * 3u + (i >> 10)) | 1u);
}

/* A usable port, or 0 if none is active. */
static uint8_t active_port(struct hw *h)
{
	struct ibv_device_attr dattr;

	T_REQUIRE(ibv_query_device(h->ctx, &dattr) == 0);
	for (uint8_t p = 1; p <= dattr.phys_port_cnt; p++) {
		T_REQUIRE(ibv_query_port(h->ctx, p, &h->pattr) == 0);
		if (h->pattr.state == IBV_PORT_ACTIVE)
			return p;
	}
	return 0;
}

/* RoCE needs a GID: $REGCACHE_TEST_GID_INDEX, else the first RoCE v2 one,
 * else index 0. */
static void pick_gid(struct hw *h)
{
	const char *env = getenv("REGCACHE_TEST_GID_INDEX");

	h->gid_index = 0;
	if (env) {
		h->gid_index = atoi(env);
	} else {
		for (int i = 0; i < h->pattr.gid_tbl_len; i++) {
			struct ibv_gid_entry e;

			if (ibv_query_gid_ex(h->ctx, h->port, (uint32_t)i, &e, 0))
				continue;
			if (e.gid_type == IBV_GID_TYPE_ROCE_V2) {
				h->gid_index = i;
				break;
			}
		}
	}
	T_REQUIRE(ibv_query_gid(h->ctx, h->port, h->gid_index, &h->gid) == 0);
}

/* Connect the RC queue pair to itself. */
static void connect_self(struct hw *h)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = h->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	T_REQUIRE(ibv_modify_qp(h->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = h->pattr.active_mtu;
	a.dest_qp_num = h->qp->qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = h->port;
	a.ah_attr.dlid = h->pattr.lid;
	if (h->pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = h->gid;
		a.ah_attr.grh.sgid_index = (uint8_t)h->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	T_REQUIRE(ibv_modify_qp(h->qp, &a, IBV_QP_STATE | IBV_QP_AV |
				IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER) == 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	T_REQUIRE(ibv_modify_qp(h->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

/* RDMA-write LEN pattern bytes from @src to @dst through the cache, and
 * return whether the application sees them at @dst. */
static bool write_visible(struct hw *h, struct regcache *c, unsigned char *src,
			  unsigned char *dst, unsigned seed)
{
	struct regcache_region *rs, *rd;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct timespec t0, now;
	int n;

	for (size_t i = 0; i < LEN; i++)
		src[i] = byte_of(seed, i);
	memset(dst, 0, LEN);
	T_REQUIRE(regcache_verbs_sge(c, src, LEN, 0, &sge, &rs) == 0);
	T_REQUIRE(regcache_get(c, dst, LEN, IBV_ACCESS_REMOTE_WRITE, &rd) == 0);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = regcache_region_rkey(rd);
	T_REQUIRE(ibv_post_send(h->qp, &wr, &bad) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = ibv_poll_cq(h->cq, 1, &wc)) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		/* A hang guard, not a timing assertion. */
		T_REQUIRE(now.tv_sec - t0.tv_sec < 30);
	}
	T_REQUIRE(n == 1);
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "RDMA write failed: %s\n",
			ibv_wc_status_str(wc.status));
		exit(T_EXIT_FAIL);
	}
	regcache_put(c, rs);
	regcache_put(c, rd);
	for (size_t i = 0; i < LEN; i++)
		if (dst[i] != byte_of(seed, i))
			return false;
	return true;
}

static void run(struct hw *h, unsigned flags, const char *what)
{
	struct regcache_params p = { .flags = flags };
	struct regcache_stats st;
	struct regcache *c;
	unsigned char *src = t_map(LEN + pg), *dst = t_map(LEN);
	int stale = 0;

	T_REQUIRE(regcache_verbs_create(h->pd, &p, &c) == 0);
	for (unsigned i = 0; i < ROUNDS; i++) {
		if (!write_visible(h, c, src, dst, 2 * i))
			stale++;
		/* Reuse: the same buffers again. */
		if (!write_visible(h, c, src, dst, 2 * i + 1))
			stale++;
		/* Same address, new pages. */
		T_REQUIRE(munmap(dst, LEN) == 0);
		T_REQUIRE(mmap(dst, LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0) == dst);
	}
	T_EXPECT_EQ(0, stale);
	regcache_get_stats(c, &st);
	printf("%s (monitor %s, odp %d): %d writes, %d stale, %llu hits, "
	       "%llu registrations, %llu uncached\n", what,
	       regcache_monitor_name(), regcache_verbs_odp(c), 2 * ROUNDS,
	       stale, (unsigned long long)st.hits,
	       (unsigned long long)st.registrations,
	       (unsigned long long)st.uncached);
	regcache_destroy(c);
	munmap(src, LEN + pg);
	munmap(dst, LEN);
}

int main(void)
{
	struct ibv_device **devs, *dev = NULL;
	const char *want = getenv("REGCACHE_TEST_IBDEV");
	struct ibv_device_attr_ex attr;
	struct ibv_qp_init_attr qa;
	struct hw h = { 0 };
	int n = 0;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	errno = 0;
	devs = ibv_get_device_list(&n);
	if (!devs && errno != ENOSYS) {
		fprintf(stderr, "ibv_get_device_list: %s\n", strerror(errno));
		return T_EXIT_FAIL;
	}
	for (int i = 0; i < n; i++)
		if (!want || !strcmp(want, ibv_get_device_name(devs[i])))
			dev = devs[i];
	if (!dev) {
		printf("No RDMA device found%s%s%s\n",
		       !devs ? " (no kernel RDMA support)" : "",
		       want ? " named " : "", want ? want : "");
		if (devs)
			ibv_free_device_list(devs);
		return T_EXIT_SKIP;
	}
	h.ctx = ibv_open_device(dev);
	T_REQUIRE(h.ctx);
	h.port = active_port(&h);
	if (!h.port) {
		printf("No active RDMA port on %s\n", ibv_get_device_name(dev));
		return T_EXIT_SKIP;
	}
	pick_gid(&h);
	h.pd = ibv_alloc_pd(h.ctx);
	T_REQUIRE(h.pd);
	h.cq = ibv_create_cq(h.ctx, 8, NULL, NULL, 0);
	T_REQUIRE(h.cq);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = h.cq;
	qa.recv_cq = h.cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	h.qp = ibv_create_qp(h.pd, &qa);
	T_REQUIRE(h.qp);
	connect_self(&h);
	printf("device %s port %u (%s)\n", ibv_get_device_name(dev), h.port,
	       h.pattr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "IB");

	run(&h, REGCACHE_VERBS_FLAG_ODP_OFF, "pinned");
	memset(&attr, 0, sizeof(attr));
	if (!ibv_query_device_ex(h.ctx, NULL, &attr) &&
	    (attr.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT))
		run(&h, REGCACHE_VERBS_FLAG_ODP_IMPLICIT, "implicit ODP");
	else
		printf("implicit ODP: not supported by %s, not run\n",
		       ibv_get_device_name(dev));

	ibv_destroy_qp(h.qp);
	ibv_destroy_cq(h.cq);
	ibv_dealloc_pd(h.pd);
	ibv_close_device(h.ctx);
	ibv_free_device_list(devs);
	return t_exit_status();
}
