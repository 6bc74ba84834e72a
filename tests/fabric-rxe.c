/* SPDX-License-Identifier: MIT */
/*
 * Description: libfabric's verbs provider under ofi_rxm (FI_EP_RDM,
 * "verbs;ofi_rxm") over a real RDMA device (Soft-RoCE in tests/vm), with
 * the verbs domain's MR cache doing real ibv_reg_mr, sends tagged messages
 * through buffers that are freed, unmapped, remapped and madvised between
 * messages, through libc, raw syscalls and io_uring (bridge_churn.c); the
 * receiver checks every byte. Two endpoints of one domain, so both ends share libfabric's
 * cache; the application passes no descriptors, so ofi_rxm registers the
 * user's buffers itself through that cache, as Open MPI's mtl ofi has it.
 * Each message goes by rendezvous (the receiver RDMA-READs the sender's
 * registered buffer into its own registered buffer): above the eager size
 * with segmentation off (FI_OFI_RXM_SAR_LIMIT), since segmented messages
 * are copied through rxm's own bounce buffers and register nothing.
 *
 *   fabric-rxe stale|clean|nocache [rounds] [bytes]
 *
 * stale: libfabric's own monitor (memhooks, the default of Debian's 1.17
 * and 2.1, the negative control): the messages after each raw syscall and
 * after io_uring's madvise must be corrupted. clean: under
 * regcache-run, none may be. Both must cache: a message through the
 * buffers that never change, while the others change around them, must
 * register nothing on the device, and one through a remapped buffer
 * something (the count's control in each run, rxe_mr_count.h). nocache:
 * libfabric's MR cache off (FI_MR_CACHE_MAX_COUNT=0), the count's
 * negative control: at least one registration for each unchanged-buffer
 * message, none corrupted. Skips
 * (77) with "No RDMA device found" where /sys/class/infiniband is empty.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "bridge_churn.h"
#include "rxe_mr_count.h"

struct t_ep {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
};

#define CHECK_FI(call)                                                         \
	do {                                                                   \
		int ret_ = (int)(call);                                        \
		if (ret_) {                                                    \
			fprintf(stderr, "%s: %s (FAIL)\n", #call,              \
				fi_strerror(-ret_));                           \
			return 1;                                              \
		}                                                              \
	} while (0)

static int t_ep_open(struct fid_domain *dom, struct fi_info *info,
		     struct t_ep *e)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	CHECK_FI(fi_cq_open(dom, &cq_attr, &e->cq, NULL));
	CHECK_FI(fi_av_open(dom, &av_attr, &e->av, NULL));
	CHECK_FI(fi_endpoint(dom, info, &e->ep, NULL));
	CHECK_FI(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK_FI(fi_ep_bind(e->ep, &e->av->fid, 0));
	CHECK_FI(fi_enable(e->ep));
	return 0;
}

/* Poll both completion queues (ofi_rxm progresses both ends there) until
 * @n completions came. Return: 0, or a negative fi_errno. */
static int t_wait(struct t_ep *a, struct t_ep *b, int n)
{
	struct fi_cq_tagged_entry ce;
	struct fi_cq_err_entry err = { 0 };
	struct t_ep *e[2] = { a, b };

	while (n > 0) {
		for (int i = 0; i < 2; i++) {
			ssize_t ret = fi_cq_read(e[i]->cq, &ce, 1);

			if (ret == 1) {
				n--;
			} else if (ret == -FI_EAVAIL) {
				fi_cq_readerr(e[i]->cq, &err, 0);
				fprintf(stderr, "completion error: %s (FAIL)\n",
					fi_strerror(err.err));
				return -err.err;
			} else if (ret != -FI_EAGAIN) {
				return (int)ret;
			}
		}
	}
	return 0;
}

static void progress(struct t_ep *a, struct t_ep *b)
{
	struct fi_cq_tagged_entry ce;

	/* Only progress: with no completion pending, none is read. */
	(void)fi_cq_read(a->cq, &ce, 0);
	(void)fi_cq_read(b->cq, &ce, 0);
}

int main(int argc, char **argv)
{
	enum mr_count_mode mode;
	unsigned rounds;
	size_t len;
	struct mr_count count;
	struct fi_info *hints, *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct t_ep a = { 0 }, b = { 0 };
	char name_a[256], name_b[256];
	size_t na = sizeof(name_a), nb = sizeof(name_b);
	struct churn tx, rx;

	if (mr_count_args(argc, argv, &mode, &rounds, &len)) {
		fprintf(stderr, "usage: fabric-rxe stale|clean|nocache [rounds] "
			"[bytes]\n");
		return 2;
	}
	if (!rdma_device_or_skip())
		return 77;
	/*
	 * Before libfabric reads its parameters (at the first call).
	 * ofi_rxm sizes its verbs CQ (rx + tx queue) x FI_UNIVERSE_SIZE,
	 * (128 + 128) x 256 by default, above rxe's max_cqe of 32767
	 * ("vrb_cq_open(): Unable to create verbs CQ"); two endpoints need
	 * far fewer. Segmentation off, so that messages go by rendezvous.
	 */
	setenv("FI_UNIVERSE_SIZE", "16", 0);
	setenv("FI_OFI_RXM_SAR_LIMIT", "8192", 0);
	setenv("FI_PROVIDER", "verbs;ofi_rxm", 0);
	if (mode == MR_COUNT_NOCACHE)
		setenv("FI_MR_CACHE_MAX_COUNT", "0", 1);
	if (churn_init(&tx, CHURN_SENDER, len) ||
	    churn_init(&rx, CHURN_RECEIVER, len)) {
		fprintf(stderr, "churn_init failed (FAIL)\n");
		return 1;
	}

	hints = fi_allocinfo();
	if (!hints)
		return 1;
	hints->caps = FI_TAGGED;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("verbs;ofi_rxm");
	CHECK_FI(fi_getinfo(FI_VERSION(1, 13), NULL, NULL, 0, hints, &info));
	printf("fabric-rxe: libfabric %u.%u, provider %s, domain %s\n",
	       FI_MAJOR(fi_version()), FI_MINOR(fi_version()),
	       info->fabric_attr->prov_name, info->domain_attr->name);
	CHECK_FI(fi_fabric(info->fabric_attr, &fab, NULL));
	CHECK_FI(fi_domain(fab, info, &dom, NULL));
	if (t_ep_open(dom, info, &a) || t_ep_open(dom, info, &b))
		return 1;
	CHECK_FI(fi_getname(&a.ep->fid, name_a, &na));
	CHECK_FI(fi_getname(&b.ep->fid, name_b, &nb));
	if (fi_av_insert(a.av, name_b, 1, &a.peer, 0, NULL) != 1 ||
	    fi_av_insert(b.av, name_a, 1, &b.peer, 0, NULL) != 1) {
		fprintf(stderr, "fi_av_insert failed (FAIL)\n");
		return 1;
	}

	if (mr_count_begin(&count))
		return 1;
	for (unsigned r = 0; r < rounds; r++) {
		for (int k = 0; k < CHURN_NKINDS; k++) {
			uint64_t tag = (uint64_t)r << 8 | (uint64_t)k;
			char *sbuf = churn_next(&tx, r, k);
			char *rbuf = churn_next(&rx, r, k);
			bool counted = mr_count_counts(r, k);
			ssize_t ret;

			if (!sbuf || !rbuf)
				return 1;
			if (counted)
				mr_count_msg_begin(&count);
			while ((ret = fi_trecv(b.ep, rbuf, len, NULL, b.peer,
					       tag, 0, NULL)) == -FI_EAGAIN)
				progress(&a, &b);
			CHECK_FI(ret);
			while ((ret = fi_tsend(a.ep, sbuf, len, NULL, a.peer,
					       tag, NULL)) == -FI_EAGAIN)
				progress(&a, &b);
			CHECK_FI(ret);
			CHECK_FI(t_wait(&a, &b, 2));
			if (counted)
				mr_count_msg_end(&count, k);
			churn_check(&rx, r, k, rbuf);
		}
	}

	/* Exit without tearing down, as ucp-rxe does: the connections'
	 * shutdown is not what this checks. */
	return mr_count_mode_verdict(&count, &rx, rounds, mode,
				     "fabric-rxe",
				     "libfabric's own monitor",
				     "libfabric with its MR cache off",
				     "corruption after raw syscalls and "
				     "io_uring (memhooks cannot see them)");
}
