/* SPDX-License-Identifier: MIT */
/*
 * The device shared by regcache-demo and regcache-bench: an io_uring whose
 * sparse fixed-buffer table is the "NIC" (registering pins pages exactly like
 * ibv_reg_mr), or a null device whose registrations cost nothing, to measure
 * a cache's own overhead. Every cache under test (none, naive, UCX, regcache)
 * registers through the same calls, so their costs compare.
 */
#ifndef TOOLS_DEVICE_H
#define TOOLS_DEVICE_H

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <regcache.h>

#define DEV_SLOTS 16384u	/* io_uring's limit on fixed buffers per ring */

struct dev {
	struct io_uring ring;
	bool null;		/* no device: handles are counters */
	pthread_mutex_t lock;	/* free slots; never held across a syscall */
	unsigned nfree;
	unsigned free_slots[DEV_SLOTS];
	_Atomic unsigned long next_null;
	_Atomic unsigned long regs, deregs, failures;
	_Atomic unsigned long long reg_bytes;
	/* What each slot registered and when, by the caller's clock: lets the
	 * demo find which change made a registration stale. */
	unsigned long epoch;
	struct {
		uintptr_t addr;
		size_t len;
		unsigned long epoch;
	} slot[DEV_SLOTS];
};

/* @null: a device that registers nothing. 0 or -errno. */
int dev_init(struct dev *d, bool null);
void dev_fini(struct dev *d);

/* Register [addr, addr+len): *handle is slot+1 (io_uring) or a counter.
 * 0 or -errno (-ENOSPC when every slot is taken). Thread-safe. */
int dev_reg(struct dev *d, void *addr, size_t len, void **handle);
void dev_dereg(struct dev *d, void *handle);
/* The fixed-buffer index of a handle, for READ_FIXED. */
static inline int dev_buf_index(void *handle)
{
	return (int)((uintptr_t)handle - 1);
}

/* regcache_ops over a struct dev (ctx = the dev). */
extern const struct regcache_ops dev_regcache_ops;

/* DMA @len bytes (<= DEV_MSG_MAX) of a pattern chosen by @seed through the
 * registration @handle into @dst, which the application has zeroed first,
 * and compare what the application sees. 1: every byte arrived; 0: the
 * bytes went elsewhere (stale registration); -errno: I/O error. */
#define DEV_MSG_MAX 65536u
int dev_dma_check(struct dev *d, void *handle, void *dst, size_t len,
		  uint64_t seed);

/* The bytes dev_dma_check() sends for @seed. */
const unsigned char *dev_pattern(uint64_t seed);

/* Time in nanoseconds (CLOCK_MONOTONIC). */
double now_ns(void);
/* Median of @n values (sorts them). */
double median(double *v, int n);
/* VMAs of this process (lines of /proc/self/maps). */
long vma_count(void);
/* Resident set size of this process in bytes. */
long rss_bytes(void);
/* One line describing the machine: nproc, CPU model, kernel. */
void machine_info(char *buf, size_t len);

#endif
