/* SPDX-License-Identifier: MIT */
/*
 * A real RDMA device for the verbs-rxe-* tests: the device
 * ($REGCACHE_TEST_IBDEV, else the first one), its first active port, a
 * protection domain and an RC queue pair connected to itself, so that one
 * process RDMA-writes and -reads its own memory through the device (on
 * Soft-RoCE, rxe copies into the pages ib_umem_get pinned, as a NIC's DMA
 * does). The RoCE GID is $REGCACHE_TEST_GID_INDEX, else the first RoCE v2
 * one.
 */
#ifndef T_VERBS_DEVICE_H
#define T_VERBS_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* The largest transfer of td_rdma() (the source buffer's size). */
#define TD_MAX_LEN (256 * 1024)

struct td {
	struct ibv_device **devs;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_device_attr_ex attr;
	struct ibv_port_attr pattr;
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	const char *name;
	/* A buffer of the test's own, registered outside any cache: the
	 * other end of every td_write_visible(). */
	unsigned char *src;
	struct ibv_mr *src_mr;
};

/*
 * Open the device and connect the queue pair. Without a device, or
 * without an active port, prints why ("No RDMA device found", "No active
 * RDMA port on ...") and exits 77; any other failure exits 1.
 */
void td_open(struct td *d);
void td_close(struct td *d);

/* Put a queue pair that a failed work request moved to the error state
 * back into RTS. */
void td_reconnect(struct td *d);

/*
 * One signalled RDMA WRITE (@op IBV_WR_RDMA_WRITE: @local -> @remote) or
 * READ (@remote -> @local) of @len bytes, waited for (30 s hang guard).
 * Returns the completion's status; the queue pair needs td_reconnect()
 * after anything but IBV_WC_SUCCESS.
 */
enum ibv_wc_status td_rdma(struct td *d, enum ibv_wr_opcode op,
			   const void *local, uint32_t lkey,
			   const void *remote, uint32_t rkey, size_t len);

/* The byte at @i of the pattern for @seed. */
unsigned char td_byte(unsigned seed, size_t i);

/*
 * The DMA oracle through verbs: zero [buf, buf+len) as the application
 * sees it, RDMA-write @len pattern bytes of @seed from the test's own
 * buffer to @buf through @rkey, and return whether the application sees
 * them. A failed completion fails the test. @len <= TD_MAX_LEN.
 */
bool td_write_visible(struct td *d, void *buf, uint32_t rkey, size_t len,
		      unsigned seed);

/*
 * The log lines of one call: td_log_begin() sends stderr to a temporary
 * file, td_log_end() puts it back, copies what was written into @out
 * (NUL-terminated) and echoes it to stderr.
 */
int td_log_begin(void);
void td_log_end(int saved, char *out, size_t len);

#endif
