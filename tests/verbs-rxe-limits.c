/* SPDX-License-Identifier: MIT */
/*
 * Description: the pinned-memory budget against a real device. Without
 * CAP_IPC_LOCK and with RLIMIT_MEMLOCK at 2 MiB, ib_umem_get refuses to pin
 * beyond the limit (ENOMEM), while $REGCACHE_MAX_BYTES (64 MiB) lets the
 * cache believe it has room: so the device is what says no. Idle regions
 * fill the limit; the next miss evicts idle regions, retries and succeeds
 * (its RDMA WRITE checked); with every region held, a miss is -ENOMEM with
 * a log line that says what to do, and succeeds again once regions are
 * put. A get larger than the whole budget is -E2BIG at once, without
 * calling the device. The device's own MR table: a cache asked to keep
 * more regions than the device's max_mr keeps max_mr at most and says so,
 * with the figure the device reported (one asked for exactly max_mr says
 * nothing); verbs-limits tests, through a double with a table of 8, that
 * the lowered limit holds. Skips (77) without an RDMA device.
 */
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <regcache/verbs.h>

#include "helpers.h"
#include "verbs_device.h"

#define MEMLOCK (2u << 20)
#define REG (128u << 10)
#define NBUF 24		/* 3 MiB of buffers: more than MEMLOCK */

static struct td dev;
static struct regcache *cache;

static void drop_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	T_REQUIRE(syscall(SYS_capget, &hdr, data) == 0);
	data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	data[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	T_REQUIRE(syscall(SYS_capset, &hdr, data) == 0);
}

/* The cache's region limit against the device's real max_mr. */
static void max_mr_clamp(void)
{
	size_t max_mr = (size_t)dev.attr.orig_attr.max_mr;
	struct regcache_params p = { .flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE };
	struct regcache *c;
	char log[4096], want[160];
	int saved;

	printf("%s: max_mr %zu, max_mr_size %llu\n", dev.name, max_mr,
	       (unsigned long long)dev.attr.orig_attr.max_mr_size);
	T_REQUIRE(max_mr > 0);
	snprintf(want, sizeof(want), "max_regions %zu is more than %s's "
		 "max_mr %zu: the cache keeps at most %zu regions",
		 max_mr + 1, dev.name, max_mr, max_mr);

	p.max_regions = max_mr + 1;
	saved = td_log_begin();
	T_REQUIRE(regcache_verbs_create(dev.pd, &p, &c) == 0);
	td_log_end(saved, log, sizeof(log));
	T_CHECK(strstr(log, want) != NULL);
	regcache_destroy(c);

	/* Control: at the device's figure the cache is not lowered. */
	p.max_regions = max_mr;
	saved = td_log_begin();
	T_REQUIRE(regcache_verbs_create(dev.pd, &p, &c) == 0);
	td_log_end(saved, log, sizeof(log));
	T_CHECK(strstr(log, "max_mr") == NULL);
	regcache_destroy(c);
}

int main(void)
{
	struct rlimit rl = { MEMLOCK, MEMLOCK };
	struct regcache_params p = { .flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE };
	struct regcache_region *held[NBUF], *r;
	struct regcache_stats st0, st1;
	char *buf, *huge, log[8192];
	int saved, ret, n;

	drop_ipc_lock();
	T_REQUIRE(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	T_REQUIRE(setenv("REGCACHE_MAX_BYTES", "64M", 1) == 0);
	td_open(&dev);
	T_REQUIRE(regcache_verbs_create(dev.pd, &p, &cache) == 0);
	buf = t_map(NBUF * REG);

	/* Idle regions, until the kernel refuses one: then evict + retry. */
	for (int i = 0; i < NBUF; i++) {
		T_REQUIRE(regcache_get(cache, buf + i * REG, REG,
				       IBV_ACCESS_REMOTE_WRITE, &r) == 0);
		T_CHECK(td_write_visible(&dev, buf + i * REG,
					 regcache_region_rkey(r), REG, i));
		regcache_put(cache, r);
	}
	regcache_get_stats(cache, &st0);
	printf("%d idle regions of %u KiB under a %u KiB memlock limit: %llu "
	       "registrations, %llu failed and retried, %llu evictions\n",
	       NBUF, REG >> 10, MEMLOCK >> 10,
	       (unsigned long long)st0.registrations,
	       (unsigned long long)st0.reg_failures,
	       (unsigned long long)st0.evictions);
	T_CHECK(st0.reg_failures > 0);
	T_CHECK(st0.evictions > 0);
	T_EXPECT_EQ(NBUF, st0.registrations);

	/* Everything held: the miss that does not fit fails, clearly. */
	regcache_flush(cache);
	for (n = 0; n < NBUF; n++) {
		saved = td_log_begin();
		ret = regcache_get(cache, buf + n * REG, REG,
				   IBV_ACCESS_REMOTE_WRITE, &held[n]);
		td_log_end(saved, log, sizeof(log));
		if (ret)
			break;
	}
	printf("held %d regions (%u KiB), then: %s\n", n, n * (REG >> 10),
	       strerror(-ret));
	T_EXPECT_EQ(-ENOMEM, ret);
	T_CHECK(n > 0 && n < NBUF);
	T_CHECK(strstr(log, "RLIMIT_MEMLOCK") || strstr(log, "put regions"));
	regcache_put(cache, held[--n]);
	T_REQUIRE(regcache_get(cache, buf + (NBUF - 1) * REG, REG,
			       IBV_ACCESS_REMOTE_WRITE, &r) == 0);
	T_CHECK(td_write_visible(&dev, buf + (NBUF - 1) * REG,
				 regcache_region_rkey(r), REG, 99));
	regcache_put(cache, r);
	while (n--)
		regcache_put(cache, held[n]);

	/* Beyond the whole budget: -E2BIG before the device is asked. */
	huge = mmap(NULL, (65u << 20), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	T_REQUIRE(huge != MAP_FAILED);
	regcache_get_stats(cache, &st0);
	T_EXPECT_EQ(-E2BIG, regcache_get(cache, huge, 65u << 20, 0, &r));
	regcache_get_stats(cache, &st1);
	T_EXPECT_EQ(st0.registrations + st0.reg_failures,
		    st1.registrations + st1.reg_failures);
	munmap(huge, 65u << 20);

	regcache_destroy(cache);
	munmap(buf, NBUF * REG);
	max_mr_clamp();
	td_close(&dev);
	return t_exit_status();
}
