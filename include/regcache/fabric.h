/* SPDX-License-Identifier: MIT */
/*
 * regcache/fabric.h: libregcache-fabric.so, the libfabric bridge.
 *
 * libfabric's MR cache (verbs, efa, cxi... providers) takes its
 * invalidations from regcache's process-wide monitor instead of from its
 * memhooks or userfaultfd monitor. Link with -lregcache-fabric and call
 * regcache_fabric_import() before the first fi_domain(), or start an
 * unmodified program with regcache-run: the preloaded library imports in
 * its constructor, or, when libfabric is loaded later (dlopened, as Open
 * MPI loads it), at the first fi_getinfo(), fi_fabric() or fi_open() of
 * any caller. See docs/bridges.md.
 */
#ifndef REGCACHE_FABRIC_H
#define REGCACHE_FABRIC_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * regcache_fabric_import - make regcache's monitor libfabric's memory monitor
 *
 * Imports a struct fid_mem_monitor through fi_open("mr_cache") and
 * fi_import_fid(), into the libfabric already loaded in the process (a
 * static one too, if the program exports fi_open). Its valid() runs on
 * every cache hit, so a hit is checked against regcache's monitor at lookup
 * time; a thread of the bridge calls notify() to reclaim entries, never
 * while holding libfabric's lock. Idempotent.
 *
 * Return: 0; -ENOENT if no libfabric is loaded; -EPERM if
 * FI_MR_CACHE_MONITOR is set (the application's choice wins, and a line on
 * stderr says so); -ENOTSUP if regcache's monitor is "none" (libfabric keeps
 * its own); -EIO if libfabric refused (another monitor imported first, or
 * an MR cache is already open); -ENOMEM.
 * Context: thread-safe. Starts regcache's monitor and one thread.
 */
int regcache_fabric_import(void);

/**
 * regcache_fabric_bridge_stats - what the bridge has done, for diagnostics
 * @out: out: notifications sent, subscriptions refused, hits found invalid.
 *
 * Return: 1 if regcache's monitor is imported, else 0.
 */
int regcache_fabric_bridge_stats(unsigned long out[3]);

#ifdef __cplusplus
}
#endif

#endif /* REGCACHE_FABRIC_H */
