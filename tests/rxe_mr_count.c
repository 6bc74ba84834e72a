/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>

#include "bridge_churn.h"
#include "rxe_mr_count.h"

static int probe(struct mr_count *m, uint32_t *index)
{
	struct ibv_mr *mr = ibv_reg_mr(m->pd, m->page, 4096,
				       IBV_ACCESS_LOCAL_WRITE);

	if (!mr)
		return -errno;
	*index = mr->lkey >> 8;
	ibv_dereg_mr(mr);
	return 0;
}

int mr_count_begin(struct mr_count *m)
{
	struct ibv_device **devs;
	uint32_t a = 0, b = 0;
	int n = 0, ret;

	memset(m, 0, sizeof(*m));
	devs = ibv_get_device_list(&n);
	if (!devs || n == 0 || !(m->ctx = ibv_open_device(devs[0]))) {
		if (devs)
			ibv_free_device_list(devs);
		fprintf(stderr, "mr_count: no RDMA device to count on\n");
		return -ENODEV;
	}
	ibv_free_device_list(devs);
	m->page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	m->pd = ibv_alloc_pd(m->ctx);
	if (m->page == MAP_FAILED || !m->pd)
		return -ENOMEM;
	if ((ret = probe(m, &a)) || (ret = probe(m, &b))) {
		fprintf(stderr, "mr_count: probe MR: %s\n", strerror(-ret));
		return ret;
	}
	m->sequential = b == a + 1;
	m->last = b;
	if (!m->sequential)
		printf("mr_count: %s numbered two MRs in a row %u and %u: its "
		       "registrations cannot be counted this way\n",
		       ibv_get_device_name(m->ctx->device), a, b);
	return 0;
}

long mr_count_since(struct mr_count *m)
{
	uint32_t now = 0;
	long regs;

	if (!m->sequential || probe(m, &now) || now <= m->last) {
		m->sequential = false;	/* failed, or the sequence wrapped */
		return -1;
	}
	regs = (long)(now - m->last) - 1;
	m->last = now;
	m->total += regs;
	return regs;
}

void mr_count_stable_begin(struct mr_count *m)
{
	mr_count_since(m);
}

void mr_count_stable_end(struct mr_count *m)
{
	long regs = mr_count_since(m);

	if (regs >= 0) {
		m->stable_regs += regs;
		m->stable++;
	}
}

/* The count's half of the verdict. Return: 0 pass, 1 fail. */
static int count_verdict(const struct mr_count *m, unsigned long messages,
			 bool caching, const char *test)
{
	if (!m->sequential) {
		printf("%s: registrations not counted (FAIL: the count is "
		       "what shows that the cache caches)\n", test);
		return 1;
	}
	printf("%s: %ld memory regions registered on the device for %lu "
	       "messages (%.2f a message; registering both buffers every "
	       "time is 2); %ld for the %lu messages through unchanged "
	       "buffers\n", test, m->total, messages,
	       (double)m->total / (double)messages, m->stable_regs, m->stable);
	if (caching && m->stable_regs != 0) {
		printf("%s: FAIL: the cache registered unchanged buffers "
		       "again (want 0)\n", test);
		return 1;
	}
	if (!caching && (unsigned long)m->stable_regs < m->stable) {
		printf("%s: FAIL: with the cache off, fewer registrations than "
		       "messages: the count misses registrations\n", test);
		return 1;
	}
	return 0;
}

int mr_count_churn_verdict(struct mr_count *m, const struct churn *rx,
			   unsigned long messages, bool caching,
			   const char *test, const char *title,
			   bool expect_stale, const char *stale_expected)
{
	unsigned long raw;
	int bad;

	mr_count_since(m);
	ibv_dealloc_pd(m->pd);
	ibv_close_device(m->ctx);
	munmap(m->page, 4096);
	bad = count_verdict(m, messages, caching, test);
	if (bad) {
		churn_report(rx, title, &raw);	/* the table, no PASS line */
		return bad;
	}
	return churn_verdict(rx, test, title, expect_stale, stale_expected);
}
