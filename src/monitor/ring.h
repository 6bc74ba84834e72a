/* SPDX-License-Identifier: MIT */
/*
 * Reading a BPF ring buffer of struct rc_bpf_range records from user
 * space: the consumer page (ours to write), the producer page (the
 * generation: the kernel maps it read-only) and the data pages mapped
 * twice back to back, so a record that wraps stays contiguous.
 */
#ifndef RC_MONITOR_RING_H
#define RC_MONITOR_RING_H

#include <stddef.h>
#include <stdint.h>

#include "../base/compat.h"

struct rc_ring {
	size_t page;
	size_t bytes;			/* data size, a power of two */
	_Atomic uint64_t *cons;		/* consumer position: ours */
	_Atomic uint64_t *gen;		/* producer position: read-only page */
	char *data;			/* records, mapped twice */
	char *data_map;			/* producer page + data */
	size_t data_len;
};

/* Map ring @fd of @bytes; the consumer and data pages are MADV_DONTFORK (a
 * child must never move our consumer position), the producer page alone
 * is inherited. 0 or -errno; on error nothing stays mapped. */
rc_hidden int rc_ring_map(struct rc_ring *r, int fd, size_t bytes);
rc_hidden void rc_ring_unmap(struct rc_ring *r);

/* In a forked child: the consumer and data pages are gone; the producer
 * page becomes a private zero page (another thread of the child may still
 * read it through an old pointer; the page is leaked on purpose). */
rc_hidden void rc_ring_forget_in_child(struct rc_ring *r);

typedef void rc_ring_fn(void *arg, uint64_t start, uint64_t end);

/* Call @fn on every committed record from the consumer position up to the
 * producer position read now, waiting for records that a BPF program has
 * reserved but not yet committed (it runs with preemption off and never
 * blocks, so the wait is short). Single consumer. Returns the position
 * reached. */
rc_hidden uint64_t rc_ring_walk(struct rc_ring *r, rc_ring_fn *fn, void *arg);

#endif /* RC_MONITOR_RING_H */
