/* SPDX-License-Identifier: MIT */
/*
 * Description: access flags on a real device. A region got without
 * REMOTE_READ refuses an RDMA READ through its rkey (remote access error),
 * and one without REMOTE_WRITE an RDMA WRITE; asking again with the missing
 * bit registers a region with the union, through which the same operation
 * succeeds and the data arrives. A region without LOCAL_WRITE cannot be
 * the local target of an RDMA READ. Read-only memory asked for LOCAL_WRITE
 * or REMOTE_WRITE is -EFAULT with a log line that says why (nothing
 * cached); asked with access 0 it registers and serves as an RDMA WRITE
 * source. IBV_ACCESS_ZERO_BASED is -EINVAL. Skips (77) without an RDMA
 * device.
 */
#include <sys/mman.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_device.h"

#define LEN 16384

static struct td dev;
static struct regcache *cache;

static struct regcache_region *get(void *buf, size_t len, unsigned access)
{
	struct regcache_region *r;
	int ret = regcache_get(cache, buf, len, access, &r);

	if (ret) {
		fprintf(stderr, "regcache_get(%p, %zu, %#x): %s\n", buf, len,
			access, strerror(-ret));
		exit(T_EXIT_FAIL);
	}
	return r;
}

/* An RDMA operation that must fail: the status, and the queue pair back
 * in RTS. */
static enum ibv_wc_status refused(enum ibv_wr_opcode op, void *local,
				  uint32_t lkey, void *remote, uint32_t rkey)
{
	enum ibv_wc_status st = td_rdma(&dev, op, local, lkey, remote, rkey,
					LEN);

	if (st != IBV_WC_SUCCESS)
		td_reconnect(&dev);
	return st;
}

static void remote_bits(unsigned char *buf, unsigned char *local)
{
	struct regcache_region *r, *r2, *rl;
	enum ibv_wc_status st;

	rl = get(local, LEN, IBV_ACCESS_LOCAL_WRITE);

	/* No REMOTE_READ: RDMA READ refused. */
	r = get(buf, LEN, IBV_ACCESS_REMOTE_WRITE);
	st = refused(IBV_WR_RDMA_READ, local, regcache_region_lkey(rl), buf,
		     regcache_region_rkey(r));
	printf("RDMA READ through a REMOTE_WRITE region: %s\n",
	       ibv_wc_status_str(st));
	T_EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, st);
	/* Asked with it: a new region with both bits. */
	r2 = get(buf, LEN, IBV_ACCESS_REMOTE_READ);
	T_CHECK(r2 != r);
	T_CHECK(td_write_visible(&dev, buf, regcache_region_rkey(r2), LEN, 1));
	memset(local, 0, LEN);
	T_EXPECT_EQ(IBV_WC_SUCCESS,
		    td_rdma(&dev, IBV_WR_RDMA_READ, local,
			    regcache_region_lkey(rl), buf,
			    regcache_region_rkey(r2), LEN));
	T_EXPECT_EQ(0, memcmp(local, buf, LEN));
	regcache_put(cache, r);
	regcache_put(cache, r2);

	/* No REMOTE_WRITE (a fresh buffer, so no union is cached): RDMA
	 * WRITE refused, and nothing lands. */
	buf += 2 * LEN;
	memset(buf, 0, LEN);
	r = get(buf, LEN, IBV_ACCESS_REMOTE_READ);
	st = refused(IBV_WR_RDMA_WRITE, dev.src, dev.src_mr->lkey, buf,
		     regcache_region_rkey(r));
	printf("RDMA WRITE through a REMOTE_READ region: %s\n",
	       ibv_wc_status_str(st));
	T_EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, st);
	T_EXPECT_EQ(0, buf[0]);
	r2 = get(buf, LEN, IBV_ACCESS_REMOTE_WRITE);
	T_CHECK(td_write_visible(&dev, buf, regcache_region_rkey(r2), LEN, 2));
	regcache_put(cache, r);
	regcache_put(cache, r2);
	regcache_put(cache, rl);
}

/* A fresh buffer: an access-0 get of one cached with LOCAL_WRITE would hit
 * that region (access is a minimum). */
static void local_write(unsigned char *buf)
{
	struct regcache_region *r, *rl;
	unsigned char *local = t_map(LEN);
	enum ibv_wc_status st;

	r = get(buf, LEN, IBV_ACCESS_REMOTE_READ);
	rl = get(local, LEN, 0);
	st = refused(IBV_WR_RDMA_READ, local, regcache_region_lkey(rl), buf,
		     regcache_region_rkey(r));
	printf("RDMA READ into a region without LOCAL_WRITE: %s\n",
	       ibv_wc_status_str(st));
	T_CHECK(st != IBV_WC_SUCCESS);
	regcache_put(cache, r);
	regcache_put(cache, rl);
	munmap(local, LEN);
}

static void read_only(void)
{
	struct regcache_stats st0, st1;
	struct regcache_region *r;
	unsigned char *ro = t_map(LEN);
	char log[4096];
	int saved, ret;

	for (size_t i = 0; i < LEN; i++)
		ro[i] = td_byte(3, i);
	T_REQUIRE(mprotect(ro, LEN, PROT_READ) == 0);
	regcache_get_stats(cache, &st0);
	for (int i = 0; i < 2; i++) {
		unsigned access = i ? IBV_ACCESS_REMOTE_WRITE
				    : IBV_ACCESS_LOCAL_WRITE;

		saved = td_log_begin();
		ret = regcache_get(cache, ro, LEN, access, &r);
		td_log_end(saved, log, sizeof(log));
		printf("read-only memory, access %#x: %s\n", access,
		       strerror(-ret));
		T_EXPECT_EQ(-EFAULT, ret);
		T_CHECK(strstr(log, "writable"));
	}
	regcache_get_stats(cache, &st1);
	T_EXPECT_EQ(st0.registrations, st1.registrations);

	munmap(ro, LEN);
}

/* Read-only memory with access 0: an RDMA WRITE source. */
static void read_only_source(void)
{
	struct regcache_region *r, *rd;
	unsigned char *ro = t_map(LEN), *dst = t_map(LEN);

	for (size_t i = 0; i < LEN; i++)
		ro[i] = td_byte(4, i);
	T_REQUIRE(mprotect(ro, LEN, PROT_READ) == 0);
	memset(dst, 0, LEN);
	r = get(ro, LEN, 0);
	rd = get(dst, LEN, IBV_ACCESS_REMOTE_WRITE);
	T_EXPECT_EQ(IBV_WC_SUCCESS,
		    td_rdma(&dev, IBV_WR_RDMA_WRITE, ro,
			    regcache_region_lkey(r), dst,
			    regcache_region_rkey(rd), LEN));
	T_EXPECT_EQ(0, memcmp(ro, dst, LEN));
	regcache_put(cache, r);
	regcache_put(cache, rd);
	munmap(ro, LEN);
	munmap(dst, LEN);
}

int main(void)
{
	struct regcache_params p = { 0 };
	struct regcache_region *r;
	unsigned char *buf, *local;

	td_open(&dev);
	T_REQUIRE(regcache_verbs_create(dev.pd, &p, &cache) == 0);
	t_monitor_require();
	buf = t_map(4 * LEN);
	local = t_map(LEN);

	remote_bits(buf, local);
	local_write(buf);
	read_only();
	read_only_source();
	T_EXPECT_EQ(-EINVAL, regcache_get(cache, buf, LEN,
					  IBV_ACCESS_ZERO_BASED, &r));

	regcache_destroy(cache);
	munmap(buf, 4 * LEN);
	munmap(local, LEN);
	td_close(&dev);
	return t_exit_status();
}
