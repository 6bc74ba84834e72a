/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>

#include <linux/bpf.h>
#include <linux/types.h>

#include "ring.h"
#include "../abi/rc_bpf_abi.h"

int rc_ring_map(struct rc_ring *r, int fd, size_t bytes)
{
	void *p;

	r->bytes = bytes;
	r->cons = r->gen = NULL;
	r->data = r->data_map = NULL;
	p = mmap(NULL, r->page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	r->cons = p;
	p = mmap(NULL, r->page, PROT_READ, MAP_SHARED, fd, r->page);
	if (p == MAP_FAILED)
		goto fail;
	r->gen = p;
	r->data_len = r->page + 2 * bytes;
	p = mmap(NULL, r->data_len, PROT_READ, MAP_SHARED, fd, r->page);
	if (p == MAP_FAILED)
		goto fail;
	r->data_map = p;
	r->data = r->data_map + r->page;
	if (madvise((void *)r->cons, r->page, MADV_DONTFORK) ||
	    madvise(r->data_map, r->data_len, MADV_DONTFORK))
		goto fail;
	return 0;
fail:;
	int ret = -errno;

	rc_ring_unmap(r);
	return ret;
}

void rc_ring_unmap(struct rc_ring *r)
{
	if (r->data_map)
		munmap(r->data_map, r->data_len);
	if (r->cons)
		munmap((void *)r->cons, r->page);
	if (r->gen)
		munmap((void *)r->gen, r->page);
	r->cons = r->gen = NULL;
	r->data = r->data_map = NULL;
}

void rc_ring_forget_in_child(struct rc_ring *r)
{
	if (r->gen)
		mmap((void *)r->gen, r->page, PROT_READ,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	r->cons = r->gen = NULL;
	r->data = r->data_map = NULL;
}

static uint32_t wait_committed(_Atomic uint32_t *hdr)
{
	for (unsigned spins = 0;; spins++) {
		uint32_t len = rc_load_acquire(hdr);

		if (!(len & BPF_RINGBUF_BUSY_BIT))
			return len;
		if (spins < 1000) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		} else {
			sched_yield();
		}
	}
}

uint64_t rc_ring_walk(struct rc_ring *r, rc_ring_fn *fn, void *arg)
{
	uint64_t mask = r->bytes - 1;
	uint64_t cons = rc_load_relaxed(r->cons);
	/* Acquire pairs with the kernel's release of producer_pos. */
	uint64_t prod = rc_load_acquire(r->gen);

	while (cons < prod) {
		_Atomic uint32_t *hdr = (_Atomic uint32_t *)(r->data +
							     (cons & mask));
		uint32_t len = wait_committed(hdr);
		uint32_t size = len & ~(BPF_RINGBUF_BUSY_BIT |
					BPF_RINGBUF_DISCARD_BIT);

		if (!(len & BPF_RINGBUF_DISCARD_BIT) &&
		    size >= sizeof(struct rc_bpf_range)) {
			const struct rc_bpf_range *rec =
				(const void *)((char *)hdr + BPF_RINGBUF_HDR_SZ);

			fn(arg, rec->start, rec->end);
		}
		cons += (size + BPF_RINGBUF_HDR_SZ + 7) & ~7ull;
		/* Release: we read the record before the kernel may reuse
		 * its space. */
		rc_store_release(r->cons, cons);
	}
	return cons;
}
