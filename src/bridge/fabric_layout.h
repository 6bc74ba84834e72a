/* SPDX-License-Identifier: MIT */
/*
 * libfabric's MR cache, for the programs that drive the real cache without
 * an RDMA provider (tests/bridge-fabric.c): they link Debian's static
 * libfabric.a, which exports the cache functions that libfabric.so keeps
 * internal, and do what the providers that cache host memory (verbs, efa)
 * do: ofi_mr_cache_init() with the process's default monitor,
 * ofi_mr_cache_search() per lookup (valid() on every hit, subscribe() per
 * new entry), ofi_mr_cache_delete() per release, and an add_region /
 * delete_region of their own. Not part of the bridge, which knows only
 * libfabric's public import API (rdma/fi_ext.h).
 *
 * Debian installs no header with the cache's structures (ofi_mr.h is
 * internal), so what the programs need of them is a table per version,
 * chosen at run time from fi_version(): each row is that version's
 * include/ofi_mr.h, checked against the offsets Debian's libfabric.a uses
 * (in the disassembly of ofi_mr_cache_init, _search, _delete and
 * _flush). A version not in the table is refused, never guessed.
 */
#ifndef RC_FABRIC_LAYOUT_H
#define RC_FABRIC_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

/* Where a version keeps what the programs touch (byte offsets). In every
 * row an entry starts with its struct ofi_mr_info, which starts with the
 * struct iovec of the range; FI_HMEM_SYSTEM is 0. */
struct lf_layout {
	unsigned major, minor;
	const char *debian;	/* the release that ships it */
	size_t cache_size;	/* sizeof(struct ofi_mr_cache) */
	size_t data_size_at;	/* ->entry_data_size */
	size_t add_at;		/* ->add_region */
	size_t del_at;		/* ->delete_region */
	size_t entry_data_at;	/* sizeof(struct ofi_mr_entry): data[] */
	size_t info_size;	/* sizeof(struct ofi_mr_info) */
	/* struct util_domain's prov, which 1.17's init reads (and counts
	 * a reference in the domain); 0: init takes a NULL domain (2.x). */
	size_t domain_prov_at;
};

static const struct lf_layout lf_layouts[] = {
	/* v1.17.0: no prov in the cache; info ends in ipc_handle[64]. */
	{ 1, 17, "Debian 12's 1.17.0", 0x180, 0x98, 0x170, 0x178, 0x90,
	  0x68, 0x98 },
	/* v2.1.0: the cache adds prov after the domain and cached_max_cnt
	 * and _size; info adds flags and peer_id; Debian's build has no
	 * kdreg2, so an entry's hmem_info is 8 bytes. */
	{ 2, 1, "Debian 13's 2.1.0", 0x198, 0xa0, 0x188, 0x190, 0xa0,
	  0x78, 0 },
};

/* Room for any row's cache and info. */
#define LF_CACHE_MAX 0x200
#define LF_INFO_MAX 0x100

/* A cache, whatever the version: libfabric's bytes and their layout. */
struct lf_cache {
	_Alignas(64) unsigned char raw[LF_CACHE_MAX];
	const struct lf_layout *l;
};

/* libfabric's functions (exported by libfabric.a), on the raw bytes. */
int ofi_mr_cache_init(void *domain, void **monitors, void *cache);
void ofi_mr_cache_cleanup(void *cache);
int ofi_mr_cache_search(void *cache, void *info, void **entry);
void ofi_mr_cache_delete(void *cache, void *entry);
extern void *default_monitor, *memhooks_monitor, *uffd_monitor;
extern char core_prov[];

/* The row of the libfabric linked in, or NULL (and a line on stderr). */
static inline const struct lf_layout *lf_layout(void)
{
	uint32_t v = fi_version();

	for (size_t i = 0; i < sizeof(lf_layouts) / sizeof(lf_layouts[0]); i++)
		if (lf_layouts[i].major == FI_MAJOR(v) &&
		    lf_layouts[i].minor == FI_MINOR(v))
			return &lf_layouts[i];
	fprintf(stderr, "libfabric %u.%u: its MR cache's layout is not in "
		"src/bridge/fabric_layout.h\n", FI_MAJOR(v), FI_MINOR(v));
	return NULL;
}

/* The provider's callbacks, given the cache and the entry. */
typedef int lf_add_fn(struct lf_cache *c, void *entry);
typedef void lf_del_fn(struct lf_cache *c, void *entry);

/* An entry's range. */
static inline struct iovec *lf_entry_iov(void *entry)
{
	return entry;
}

/* The provider's word in an entry (its data[]). */
static inline void **lf_entry_handle(struct lf_cache *c, void *entry)
{
	return (void **)((char *)entry + c->l->entry_data_at);
}

/*
 * Open @c on @monitor (NULL: the process's default monitor, which an
 * import sets) with @add/@del as the provider's registration, after
 * fi_getinfo() has initialised libfabric (fi_ini: providers, monitors,
 * FI_MR_CACHE_MONITOR). The callbacks are called with libfabric's cache,
 * which is @c's first member. Return: 0 or libfabric's -errno;
 * -FI_ENOSYS for a version not in the table.
 */
static inline int lf_cache_open(struct lf_cache *c, void *monitor,
				lf_add_fn *add, lf_del_fn *del)
{
	static _Alignas(64) char domain[4096];
	void *monitors[6] = { 0 };	/* OFI_HMEM_MAX in 1.17 and 2.1 */
	struct fi_info *info = NULL;
	size_t one = sizeof(void *);

	memset(c, 0, sizeof(*c));
	c->l = lf_layout();
	if (!c->l)
		return -FI_ENOSYS;
	fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info);
	fi_freeinfo(info);
	monitors[0] = monitor ? monitor : default_monitor;
	if (!monitors[0])
		return -FI_ENOSYS;
	if (c->l->domain_prov_at)
		memcpy(domain + c->l->domain_prov_at, &(void *){ core_prov },
		       sizeof(void *));
	memcpy(c->raw + c->l->data_size_at, &one, sizeof(one));
	memcpy(c->raw + c->l->add_at, &add, sizeof(add));
	memcpy(c->raw + c->l->del_at, &del, sizeof(del));
	return ofi_mr_cache_init(c->l->domain_prov_at ? domain : NULL,
				 monitors, c->raw);
}

/* Look [buf, buf+len) up (register it on a miss): 0 and *@entry, or
 * libfabric's -errno. The key is a whole struct ofi_mr_info: 2.x writes
 * the entry's back into it. */
static inline int lf_cache_search(struct lf_cache *c, void *buf, size_t len,
				  void **entry)
{
	_Alignas(16) unsigned char info[LF_INFO_MAX] = { 0 };
	struct iovec iov = { buf, len };

	memcpy(info, &iov, sizeof(iov));
	return ofi_mr_cache_search(c->raw, info, entry);
}

static inline void lf_cache_delete(struct lf_cache *c, void *entry)
{
	ofi_mr_cache_delete(c->raw, entry);
}

static inline void lf_cache_close(struct lf_cache *c)
{
	ofi_mr_cache_cleanup(c->raw);
}

/* The version line every bridge test prints. */
static inline void lf_print_version(FILE *f, const char *who)
{
	uint32_t v = fi_version();

	fprintf(f, "%s: libfabric %u.%u\n", who, FI_MAJOR(v), FI_MINOR(v));
}

#endif
