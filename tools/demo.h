/* SPDX-License-Identifier: MIT */
/*
 * regcache-demo's parts: demo.c (options, modes, the parent that runs each
 * mode in a child and prints the tables), demo_caches.c (the caches under
 * test behind one interface), demo_workload.c (the message loop a child
 * runs).
 */
#ifndef TOOLS_DEMO_H
#define TOOLS_DEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <regcache.h>

#include "device.h"

#define MAX_SIZES 16
#define MAX_SLOTS 256
#define MAX_REPEAT 32

struct demo_opt {
	unsigned long iterations;
	size_t sizes[MAX_SIZES];
	unsigned nsizes;
	unsigned long seed;
	unsigned long_slots, short_slots;
	unsigned long_share;	/* % of messages into long-lived buffers */
	unsigned lifetime;	/* mean messages per short-lived buffer */
	size_t max_regions;
	bool verbose;
	bool progress;
	bool fill;
	unsigned repeat;
	unsigned timeout;	/* seconds per mode run */
};
extern struct demo_opt demo_opt;

enum mode_kind { K_NOCACHE, K_NAIVE, K_UCX, K_REGCACHE,
		 /* demo_bridges.c */
		 K_UCX_BRIDGE, K_FABRIC, K_FABRIC_BRIDGE };

/* Rows that must show zero corrupted messages. */
static inline bool demo_kind_guarded(enum mode_kind k)
{
	return k == K_REGCACHE || k == K_UCX_BRIDGE || k == K_FABRIC_BRIDGE;
}

struct mode {
	const char *key;	/* as given to --modes */
	const char *label;	/* in the table */
	enum mode_kind kind;
	const char *monitor;	/* REGCACHE_MONITOR for K_REGCACHE */
	bool selected;
};

#define NMODES 9
extern struct mode demo_modes[NMODES];

/* How a short-lived buffer goes away. The weights make the share of
 * allocator-style releases. */
enum rel {
	R_FREE,		/* malloc/free */
	R_MUNMAP,	/* mmap/munmap through libc */
	R_RAW_MUNMAP,	/* munmap through syscall(), as Go and static runtimes */
	R_MREMAP,	/* realloc-style mremap(MAYMOVE) through libc */
	R_RAW_MREMAP,	/* the same through syscall() */
	R_MADVISE,	/* allocator purge: madvise(MADV_DONTNEED) through libc */
	R_RAW_MADVISE,	/* the same through syscall() */
	R_URING_MADVISE, /* the same through IORING_OP_MADVISE */
	R_NKINDS
};

/* What a child reports to the parent. */
struct result {
	int status;		/* 0 ran; 1 unavailable; -errno failed */
	char info[160];
	double secs;
	unsigned long ops, regs, corrupt, io_errors, get_errors;
	unsigned long long reg_bytes;
	unsigned long into_live;	/* landed in another live buffer */
	unsigned long corrupt_by[R_NKINDS + 1];
	unsigned long released_by[R_NKINDS];
	struct regcache_stats st;
};

/* Shared by the parts of a child: its device, its mode, the page mask. */
extern struct dev demo_dev;
extern const struct mode *demo_cur;
extern uintptr_t demo_page_mask;
/* The round the parent is running (for the progress line). */
extern unsigned demo_round;

/* demo_caches.c: the cache of demo_cur, over demo_dev. */
int demo_cache_setup(void);
int demo_cache_get(void *addr, size_t len, void **region, void **handle);
void demo_cache_put(void *region);
void demo_cache_teardown(struct result *res);

/* demo_workload.c: run demo_cur's mode on the workload in this (child)
 * process and write a struct result to @fd. */
void demo_child(const struct mode *m, int fd) __attribute__((noreturn));

/* demo_bridges.c: the UCX and libfabric bridge rows. */
void demo_bridge_child(const struct mode *m, int fd) __attribute__((noreturn));
void demo_bridge_exec_child(void);
bool demo_bridge_available(const struct mode *m, char *why, size_t len);
int demo_bridge_setup(void);
int demo_bridge_get(void *addr, size_t len, void **region, void **handle);
void demo_bridge_put(void *region);
void demo_bridge_teardown(void);

#endif
