/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>

#include "bridge_churn.h"
#include "rxe_mr_count.h"

/* Counted from this round on: the libfabric bridge under userfaultfd
 * caches a range from its second registration (docs/bridges.md). */
#define FIRST_COUNTED_ROUND 2

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

static void close_device(struct mr_count *m)
{
	if (m->pd)
		ibv_dealloc_pd(m->pd);
	if (m->ctx)
		ibv_close_device(m->ctx);
	if (m->page && m->page != MAP_FAILED)
		munmap(m->page, 4096);
	m->pd = NULL;
	m->ctx = NULL;
	m->page = NULL;
}

static struct ibv_context *open_device(void)
{
	const char *want = getenv("REGCACHE_TEST_IBDEV");
	struct ibv_context *ctx = NULL;
	struct ibv_device **devs;
	int n = 0;

	devs = ibv_get_device_list(&n);
	for (int i = 0; devs && i < n && !ctx; i++)
		if (!want || !strcmp(want, ibv_get_device_name(devs[i])))
			ctx = ibv_open_device(devs[i]);
	if (devs)
		ibv_free_device_list(devs);
	return ctx;
}

int mr_count_begin(struct mr_count *m)
{
	uint32_t a = 0, b = 0;
	int ret;

	memset(m, 0, sizeof(*m));
	if (!(m->ctx = open_device())) {
		fprintf(stderr, "mr_count: no RDMA device%s%s to count on\n",
			getenv("REGCACHE_TEST_IBDEV") ? " " : "",
			getenv("REGCACHE_TEST_IBDEV") ?: "");
		return -ENODEV;
	}
	m->page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	m->pd = ibv_alloc_pd(m->ctx);
	if (m->page == MAP_FAILED || !m->pd) {
		fprintf(stderr, "mr_count: no memory for the probe MR\n");
		close_device(m);
		return -ENOMEM;
	}
	/* Another process may register between two probes (an MPI peer
	 * starting up): a few pairs, one apart once is proof enough. */
	for (int tries = 0; tries < 20 && !m->sequential; tries++) {
		if ((ret = probe(m, &a)) || (ret = probe(m, &b))) {
			fprintf(stderr, "mr_count: probe MR: %s\n",
				strerror(-ret));
			close_device(m);
			return ret;
		}
		m->sequential = b == a + 1;
	}
	m->last = b;
	printf("mr_count: counting the MRs of %s%s\n",
	       ibv_get_device_name(m->ctx->device), m->sequential ? "" :
	       " is not possible: two MRs in a row were not numbered one "
	       "apart");
	return 0;
}

/* MRs the device created since the last probe, the probes excluded; -1
 * when they cannot be counted. */
static long count_since(struct mr_count *m)
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

bool mr_count_counts(unsigned round, int kind)
{
	return round >= FIRST_COUNTED_ROUND &&
	       (kind == CHURN_NONE || kind == CHURN_MUNMAP);
}

void mr_count_msg_begin(struct mr_count *m)
{
	count_since(m);
}

void mr_count_close(struct mr_count *m)
{
	close_device(m);
}

long mr_count_msg_regs(struct mr_count *m)
{
	return count_since(m);
}

void mr_count_msg_end(struct mr_count *m, int kind)
{
	mr_count_msg_record(m, kind, count_since(m));
}

void mr_count_msg_record(struct mr_count *m, int kind, long regs)
{
	if (regs < 0) {
		m->sequential = false;	/* a count failed: nothing counts */
		return;
	}
	if (kind == CHURN_NONE) {
		m->stable_regs += regs;
		m->stable++;
	} else {
		m->remapped_regs += regs;
		m->remapped++;
		m->remapped_empty += regs == 0;
	}
}

/* The count's half of the verdict. Return: 0 pass, 1 fail. */
static int count_verdict(const struct mr_count *m, unsigned rounds,
			 bool caching, const char *test)
{
	unsigned long want = rounds > FIRST_COUNTED_ROUND ?
			     rounds - FIRST_COUNTED_ROUND : 0;

	if (!m->sequential || want == 0 || m->stable != want ||
	    m->remapped != want) {
		printf("%s: FAIL: registrations not counted (%lu unchanged "
		       "and %lu remapped messages counted of %lu each; the "
		       "count is what shows that the cache caches)\n", test,
		       m->stable, m->remapped, want);
		return 1;
	}
	printf("%s: %ld memory regions registered on the device for %u "
	       "messages (%.2f a message; registering both buffers every "
	       "time is 2); %ld for the %lu through unchanged buffers, %ld "
	       "for the %lu through remapped ones\n", test, m->total,
	       rounds * CHURN_NKINDS,
	       (double)m->total / (rounds * CHURN_NKINDS), m->stable_regs,
	       m->stable, m->remapped_regs, m->remapped);
	if (m->remapped_empty) {
		printf("%s: FAIL: a message through a buffer remapped since "
		       "its last one registered nothing: the count does not "
		       "see this run's registrations\n", test);
		return 1;
	}
	if (caching && m->stable_regs != 0) {
		printf("%s: FAIL: the cache registered unchanged buffers "
		       "again (want 0)\n", test);
		return 1;
	}
	if (!caching && (unsigned long)m->stable_regs < m->stable) {
		printf("%s: FAIL: with the cache off, fewer registrations than "
		       "messages through unchanged buffers\n", test);
		return 1;
	}
	return 0;
}

int mr_count_churn_verdict(struct mr_count *m, const struct churn *rx,
			   unsigned rounds, bool caching, const char *test,
			   const char *title, bool expect_stale,
			   const char *stale_expected)
{
	unsigned long raw;

	count_since(m);
	close_device(m);
	if (count_verdict(m, rounds, caching, test)) {
		churn_report(rx, title, &raw);	/* the table, no PASS line */
		return 1;
	}
	return churn_verdict(rx, test, title, expect_stale, stale_expected);
}

bool have_rdma_device(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			found = true;
	closedir(d);
	return found;
}

bool rdma_device_or_skip(void)
{
	if (have_rdma_device())
		return true;
	printf("No RDMA device found (/sys/class/infiniband is empty): "
	       "skipped; tests/vm/run.sh gives a Soft-RoCE device\n");
	return false;
}

int mr_count_args(int argc, char **argv, enum mr_count_mode *mode,
		  unsigned *rounds, size_t *len)
{
	static const char *const modes[] = {
		[MR_COUNT_STALE] = "stale",
		[MR_COUNT_CLEAN] = "clean",
		[MR_COUNT_NOCACHE] = "nocache",
	};

	*rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 21;
	*len = argc > 3 ? (size_t)atol(argv[3]) : 65536;
	for (int i = 0; argc > 1 && i < 3; i++) {
		if (!strcmp(argv[1], modes[i])) {
			*mode = (enum mr_count_mode)i;
			return 0;
		}
	}
	return -1;
}

int mr_count_mode_verdict(struct mr_count *m, const struct churn *rx,
			  unsigned rounds, enum mr_count_mode mode,
			  const char *test, const char *own, const char *off,
			  const char *stale_expected)
{
	char title[128];

	snprintf(title, sizeof(title), "%s: %s", test,
		 mode == MR_COUNT_STALE ? own :
		 mode == MR_COUNT_CLEAN ? "regcache's bridge" : off);
	return mr_count_churn_verdict(m, rx, rounds, mode != MR_COUNT_NOCACHE,
				      test, title, mode == MR_COUNT_STALE,
				      stale_expected);
}
