/* SPDX-License-Identifier: MIT */
/*
 * The wire protocol between regcached and the library's "regcached" monitor
 * backend (src/monitor/regcached.c). Unix SOCK_SEQPACKET on one host, so
 * host byte order and fixed-size messages: a message of any other size, a
 * bad magic, version or op, or a file descriptor where none belongs closes
 * the connection (docs/regcached.md, Protocol).
 *
 * One connection is one library copy of one process. Its lifetime is the
 * registration's: the daemon unregisters it when the socket closes or the
 * process exits, whichever comes first.
 */
#ifndef RCD_PROTOCOL_H
#define RCD_PROTOCOL_H

#include <stdint.h>

#define RCD_SOCKET_DEFAULT "/run/regcache/regcached.sock"
#define RCD_MAGIC 0x31646372u	/* "rcd1" */
#define RCD_VERSION 1

enum rcd_op {
	/*
	 * Register this process (the connecting one, as the kernel names it
	 * with SO_PEERCRED and SO_PEERPIDFD). Reply: status, slot, ring size,
	 * and with status 0 the ring fd (SCM_RIGHTS), read-write for the
	 * consumer page only. With RCD_REGISTER_RESUME the request carries
	 * the ring fd this process got from an earlier daemon (one that
	 * died); the daemon checks it is a ring of the right size and feeds
	 * it again, so positions, and the generation, keep growing.
	 */
	RCD_REGISTER = 1,
	/*
	 * Watch a shared or file mapping: any page of the file in
	 * [pgoff_lo, pgoff_hi) that leaves the page cache (truncate, hole
	 * punch, by any process) is "everything changed" for this process.
	 * The file is named by a file descriptor the client passes
	 * (SCM_RIGHTS; opened, not O_PATH), so a client can only watch what
	 * it can open. Without an fd, [start, end) must be a shared mapping
	 * of the kernel's internal shmem (shared anonymous memory, SysV shm,
	 * a memfd whose fd is closed) in the client's own address space,
	 * which the daemon looks up itself. Reply: status.
	 */
	RCD_WATCH = 2,
};

#define RCD_REGISTER_RESUME 1u

struct rcd_request {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	uint32_t flags;
	uint32_t reserved;	/* 0 */
	uint64_t start;		/* RCD_WATCH */
	uint64_t end;
	uint64_t pgoff_lo;
	uint64_t pgoff_hi;
};

struct rcd_reply {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	int32_t status;		/* 0 or -errno */
	uint32_t slot;		/* RCD_REGISTER: which of the process's rings */
	uint32_t ring_bytes;	/* RCD_REGISTER */
	uint32_t reserved;
};

#endif /* RCD_PROTOCOL_H */
