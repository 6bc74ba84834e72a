/* SPDX-License-Identifier: MIT */
/*
 * libfabric 1.17.0's MR cache as Debian's static libfabric.a lays it out
 * (include/ofi_mr.h and ofi_util.h at tag v1.17.0), for the programs that
 * drive the real cache without an RDMA provider: tests/bridge-fabric*.c and
 * regcache-demo's libfabric rows. No provider that caches host memory
 * (verbs, efa) runs without RDMA hardware; these programs do what those
 * providers do: ofi_mr_cache_init() with the process's default monitor,
 * ofi_mr_cache_search() per lookup (valid() on every hit, subscribe() per
 * new entry), ofi_mr_cache_delete() per release, and an add_region /
 * delete_region that register io_uring fixed buffers. Not part of the
 * bridge: the bridge knows only libfabric's public import API.
 */
#ifndef RC_FABRIC_CACHE_H
#define RC_FABRIC_CACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

struct lf_list { void *next, *prev; };

struct lf_mr_info {
	struct iovec iov;
	int iface;		/* enum fi_hmem_iface: FI_HMEM_SYSTEM = 0 */
	uint64_t device;
	void *ipc_mapped_addr;
	uint8_t ipc_handle[64];
};

struct lf_mr_entry {
	struct lf_mr_info info;
	void *node;
	int use_cnt;
	struct lf_list list_entry;
	uint64_t hmem_info;
	void *handle;		/* data[]: the provider's part */
};

struct lf_mr_cache {
	void *domain;
	void *monitors[6];	/* OFI_HMEM_MAX */
	struct lf_list notify_entries[6];
	size_t entry_data_size;
	struct {
		void *root;
		struct { void *left, *right, *parent; int color; void *data; } sentinel;
		void *free_list;
		void *compare;
	} tree;
	struct lf_list lru_list, dead_region_list;
	pthread_mutex_t lock;
	size_t cached_cnt, cached_size, uncached_cnt, uncached_size;
	size_t search_cnt, delete_cnt, hit_cnt, notify_cnt;
	void *entry_pool;
	int (*add_region)(struct lf_mr_cache *cache, struct lf_mr_entry *entry);
	void (*delete_region)(struct lf_mr_cache *cache, struct lf_mr_entry *entry);
};

/* The offsets Debian's libfabric.a uses (checked in its disassembly). */
_Static_assert(offsetof(struct lf_mr_entry, node) == 0x68, "1.17 entry");
_Static_assert(offsetof(struct lf_mr_entry, use_cnt) == 0x70, "1.17 entry");
_Static_assert(offsetof(struct lf_mr_cache, tree) == 0xa0, "1.17 cache");
_Static_assert(offsetof(struct lf_mr_cache, lock) == 0x100, "1.17 cache");
_Static_assert(offsetof(struct lf_mr_cache, delete_cnt) == 0x150, "1.17 cache");
_Static_assert(offsetof(struct lf_mr_cache, add_region) == 0x170, "1.17 cache");

/* struct util_domain: the cache reads only prov (and counts ref). */
#define LF_DOMAIN_PROV 0x98

int ofi_mr_cache_init(void *domain, void **monitors, struct lf_mr_cache *c);
void ofi_mr_cache_cleanup(struct lf_mr_cache *c);
int ofi_mr_cache_search(struct lf_mr_cache *c, const struct lf_mr_info *info,
			struct lf_mr_entry **entry);
void ofi_mr_cache_delete(struct lf_mr_cache *c, struct lf_mr_entry *entry);
extern void *default_monitor, *memhooks_monitor, *uffd_monitor;
extern char core_prov[];

/*
 * Open @c on @monitor (NULL: the process's default monitor, which an
 * import sets) with @add/@del as the provider's registration, after
 * fi_getinfo() has initialised libfabric (fi_ini: providers, monitors,
 * FI_MR_CACHE_MONITOR). Return: 0 or libfabric's -errno.
 */
static inline int lf_cache_open(struct lf_mr_cache *c, void *monitor,
	int (*add)(struct lf_mr_cache *, struct lf_mr_entry *),
	void (*del)(struct lf_mr_cache *, struct lf_mr_entry *))
{
	static _Alignas(64) char domain[4096];
	void *monitors[6] = { 0 };
	struct fi_info *info = NULL;

	fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info);
	fi_freeinfo(info);
	monitors[0] = monitor ? monitor : default_monitor;
	if (!monitors[0])
		return -FI_ENOSYS;
	*(const void **)(domain + LF_DOMAIN_PROV) = core_prov;
	c->entry_data_size = sizeof(void *);
	c->add_region = add;
	c->delete_region = del;
	return ofi_mr_cache_init(domain, monitors, c);
}

#endif
