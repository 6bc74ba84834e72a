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
#include <string.h>

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
	bool profile;		/* time each step of the message loop */
	bool progress;
	bool fill;
	unsigned repeat;
	unsigned timeout;	/* seconds per mode run */
	bool sizes_given;	/* --sizes: never shrink them to fit */
	bool verbs;		/* --verbs: an RDMA device is the NIC */
	char ibdev[64];		/* --verbs=DEVICE; empty: the first one */
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

#define NMODES 10
extern struct mode demo_modes[NMODES];

/* The row whose client is an ordinary user served by a private regcached
 * (demo_regcached.c). */
static inline bool demo_mode_regcached(const struct mode *m)
{
	return m->kind == K_REGCACHE && !strcmp(m->monitor, "regcached");
}

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
/* --profile: where a child's timed loop spends its time. The registrar's
 * calls (P_REG, P_DEREG) happen inside the other steps, mostly get and put. */
enum phase { P_ALLOC, P_GET, P_DMA, P_PUT, P_RELEASE, P_REG, P_DEREG,
	     P_NPHASES };

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
	unsigned long deregs;		/* during the timed loop */
	bool phases_known[P_NPHASES];
	double phase_ns[P_NPHASES];	/* --profile */
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
/* The device's calls as the demo's caches make them: timed into
 * demo_phase_ns[P_REG] and [P_DEREG] with --profile. */
int demo_dev_reg(void *addr, size_t len, void **handle);
void demo_dev_dereg(void *handle);
extern double demo_phase_ns[P_NPHASES];

/* demo_workload.c: run demo_cur's mode on the workload in this (child)
 * process and write a struct result to @fd. */
void demo_child(const struct mode *m, int fd) __attribute__((noreturn));

/* demo.c: how many of the (ascending) sizes stay in the workload of a
 * process without CAP_IPC_LOCK that may pin @memlock bytes (at least 2). */
unsigned demo_fit_nsizes(unsigned long long memlock);

/* demo_verbs.c (--verbs): ibv_reg_mr registrations and RDMA WRITEs over a
 * loopback RC queue pair in place of demo_dev's (built with the verbs
 * registrar: DEMO_HAVE_VERBS). */
bool demo_verbs_available(char *why, size_t len);
int demo_verbs_init(void);
void demo_verbs_fini(void);
const char *demo_verbs_device(void);
int demo_verbs_cache(const struct regcache_params *p, struct regcache **c);
int demo_verbs_reg(void *addr, size_t len, void **handle);
void demo_verbs_dereg(void *handle);
int demo_verbs_dma_check(void *handle, void *dst, size_t len, uint64_t seed);
/* What the MR @handle registered, and at which release epoch. */
bool demo_verbs_range(void *handle, uintptr_t *addr, size_t *len,
		      unsigned long *epoch);

/* demo_bridges.c: the UCX and libfabric bridge rows. */
void demo_bridge_child(const struct mode *m, int fd) __attribute__((noreturn));
void demo_bridge_exec_child(void);
/* In a forked child: run @m in a fresh image of the demo, with this run's
 * options and the environment the caller set. Returns only if exec failed. */
void demo_reexec(const struct mode *m, int fd);
bool demo_bridge_available(const struct mode *m, char *why, size_t len);
int demo_bridge_setup(void);
int demo_bridge_get(void *addr, size_t len, void **region, void **handle);
void demo_bridge_put(void *region);
void demo_bridge_teardown(void);

/* demo_regcached.c: the regcached row. The parent starts a private daemon
 * before each run of the row and stops it after (res reports a daemon
 * that did not start, died or stopped badly); the child drops to an
 * ordinary user and re-executes the demo as its client. */
bool demo_regcached_available(char *why, size_t len);
/* @name installed at @rel_from_bindir relative to the demo's directory, in
 * @path; NULL when the demo runs from the build tree. */
const char *demo_installed_path(const char *rel_from_bindir, const char *name,
				char *path, size_t len);
int demo_regcached_start(struct result *res);
void demo_regcached_stop(struct result *res);
void demo_regcached_child(const struct mode *m, int fd) __attribute__((noreturn));
/* RLIMIT_MEMLOCK of the regcached row's client (--regcached-memlock);
 * RLIM_INFINITY for none. */
extern unsigned long long demo_regcached_memlock;
/* Whether the regcached row's client gets CAP_IPC_LOCK in place of an
 * unlimited RLIMIT_MEMLOCK (this process cannot raise the limit). */
bool demo_regcached_lock_cap(void);
/* The RLIMIT_MEMLOCK that client runs with (RLIM_INFINITY with
 * CAP_IPC_LOCK): --regcached-memlock, or the most this process can give. */
unsigned long long demo_regcached_client_memlock(void);
/* Whether this process has capability @cap in its effective set. */
bool demo_has_cap(int cap);

#endif
