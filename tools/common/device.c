/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "median.h"

int dev_init(struct dev *d, bool null)
{
	int ret;

	memset(d, 0, sizeof(*d));
	d->null = null;
	pthread_mutex_init(&d->lock, NULL);
	ret = io_uring_queue_init(8, &d->ring, 0);
	if (ret)
		return ret;
	if (null)
		return 0;
	ret = io_uring_register_buffers_sparse(&d->ring, DEV_SLOTS);
	if (ret) {
		io_uring_queue_exit(&d->ring);
		return ret;
	}
	/* Lowest slots on top: small indexes first. */
	for (unsigned i = 0; i < DEV_SLOTS; i++)
		d->free_slots[d->nfree++] = DEV_SLOTS - 1 - i;
	return 0;
}

void dev_fini(struct dev *d)
{
	io_uring_queue_exit(&d->ring);
	pthread_mutex_destroy(&d->lock);
}

int dev_reg(struct dev *d, void *addr, size_t len, void **handle)
{
	struct iovec iov = { .iov_base = addr, .iov_len = len };
	unsigned slot;
	int ret;

	if (d->null) {
		*handle = (void *)(uintptr_t)(atomic_fetch_add_explicit(
			&d->next_null, 1, memory_order_relaxed) + 1);
		atomic_fetch_add_explicit(&d->regs, 1, memory_order_relaxed);
		return 0;
	}
	pthread_mutex_lock(&d->lock);
	if (!d->nfree) {
		pthread_mutex_unlock(&d->lock);
		atomic_fetch_add_explicit(&d->failures, 1, memory_order_relaxed);
		return -ENOSPC;
	}
	slot = d->free_slots[--d->nfree];
	pthread_mutex_unlock(&d->lock);
	ret = io_uring_register_buffers_update_tag(&d->ring, slot, &iov, NULL, 1);
	if (ret != 1) {
		pthread_mutex_lock(&d->lock);
		d->free_slots[d->nfree++] = slot;
		pthread_mutex_unlock(&d->lock);
		atomic_fetch_add_explicit(&d->failures, 1, memory_order_relaxed);
		return ret < 0 ? ret : -EIO;
	}
	atomic_fetch_add_explicit(&d->regs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&d->reg_bytes, len, memory_order_relaxed);
	d->slot[slot].addr = (uintptr_t)addr;
	d->slot[slot].len = len;
	d->slot[slot].epoch = d->epoch;
	*handle = (void *)(uintptr_t)(slot + 1);
	return 0;
}

void dev_dereg(struct dev *d, void *handle)
{
	unsigned slot = (unsigned)dev_buf_index(handle);
	struct iovec empty = { 0 };

	atomic_fetch_add_explicit(&d->deregs, 1, memory_order_relaxed);
	if (d->null)
		return;
	if (io_uring_register_buffers_update_tag(&d->ring, slot, &empty, NULL,
						 1) != 1) {
		fprintf(stderr, "releasing fixed buffer %u failed\n", slot);
		return;
	}
	pthread_mutex_lock(&d->lock);
	d->free_slots[d->nfree++] = slot;
	pthread_mutex_unlock(&d->lock);
}

static int ops_reg(void *ctx, void *addr, size_t len, unsigned access,
		   void **handle)
{
	(void)access;
	return dev_reg(ctx, addr, len, handle);
}

static void ops_dereg(void *ctx, void *handle)
{
	dev_dereg(ctx, handle);
}

const struct regcache_ops dev_regcache_ops = {
	.reg = ops_reg,
	.dereg = ops_dereg,
};

/* The message source: never a zero byte, so a zeroed destination that the
 * DMA missed can never pass for the message. */
static unsigned char pattern[DEV_MSG_MAX + 256];
static int pipe_fds[2] = { -1, -1 };

static void pattern_fill(void)
{
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (unsigned char)(((i * 7u) ^ (i >> 8) ^ 0x5a) | 1u);
}

static int dma_setup(void)
{
	if (pipe_fds[0] >= 0)
		return 0;
	if (pipe(pipe_fds))
		return -errno;
	/* One message must fit in the pipe. */
	if (fcntl(pipe_fds[0], F_SETPIPE_SZ, (int)DEV_MSG_MAX * 2) < 0)
		return -errno;
	return 0;
}

/* Every source of a message (the pipe of dev_dma_check, the verbs
 * mode's RDMA WRITE buffer) takes its bytes from here, so the pattern is
 * made before the first caller reads it, whoever that is. */
const unsigned char *dev_pattern(uint64_t seed)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, pattern_fill);
	return pattern + seed % 251;
}

int dev_dma_check(struct dev *d, void *handle, void *dst, size_t len,
		  uint64_t seed)
{
	const unsigned char *src;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int ret;

	if (len > DEV_MSG_MAX)
		return -EINVAL;
	ret = dma_setup();
	if (ret)
		return ret;
	src = dev_pattern(seed);
	if (write(pipe_fds[1], src, len) != (ssize_t)len)
		return -EIO;
	sqe = io_uring_get_sqe(&d->ring);
	io_uring_prep_read_fixed(sqe, pipe_fds[0], dst, (unsigned)len, 0,
				 dev_buf_index(handle));
	ret = io_uring_submit_and_wait(&d->ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&d->ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&d->ring, cqe);
	if (ret != (int)len) {
		/* Drain what is left so the next message starts clean. */
		char sink[4096];

		fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
		while (read(pipe_fds[0], sink, sizeof(sink)) > 0)
			;
		fcntl(pipe_fds[0], F_SETFL, 0);
		return ret < 0 ? ret : -EIO;
	}
	return memcmp(dst, src, len) == 0;
}

double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

double median(double *v, int n)
{
	return n > 0 ? median_of(v, (size_t)n) : 0;
}

long vma_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	long n = 0;
	int ch;

	if (!f)
		return -1;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * sysconf(_SC_PAGESIZE);
}

void machine_info(char *buf, size_t len)
{
	char model[128] = "unknown CPU", line[256];
	struct utsname u;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			snprintf(model, sizeof(model), "%s", colon + 2);
			model[strcspn(model, "\n")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	uname(&u);
	/* The load average says how much else ran on the machine: on a
	 * shared box it explains most of the run-to-run noise. */
	f = fopen("/proc/loadavg", "r");
	if (!f || !fgets(line, sizeof(line), f))
		snprintf(line, sizeof(line), "?");
	if (f)
		fclose(f);
	line[strcspn(line, " ")] = 0;
	snprintf(buf, len, "%ld CPUs, %s, Linux %s, load %s",
		 sysconf(_SC_NPROCESSORS_ONLN), model, u.release, line);
}
