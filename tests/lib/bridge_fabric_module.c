/* SPDX-License-Identifier: MIT */
/*
 * The "component" that bridge-fabric-late.c dlopens after start, as Open
 * MPI's ofi components are dlopened at MPI_Init: it links the system's
 * libfabric.so.1, which arrives with it. Its calls into libfabric go
 * through its PLT, as any component's do.
 */
#include <stdbool.h>

#include <rdma/fabric.h>
#include <rdma/fi_ext.h>

/* The version of the libfabric that came with this component. */
unsigned module_version(void)
{
	return fi_version();
}

/* A libfabric user's first call. */
int module_first_call(void)
{
	struct fi_info *info = NULL;
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info);

	fi_freeinfo(info);
	return ret;
}

static int no_start(struct fid_mem_monitor *m)
{
	(void)m;
	return 0;
}

static void no_stop(struct fid_mem_monitor *m)
{
	(void)m;
}

static int no_subscribe(struct fid_mem_monitor *m, const void *a, size_t l)
{
	(void)m, (void)a, (void)l;
	return -FI_ENOSYS;
}

static void no_unsubscribe(struct fid_mem_monitor *m, const void *a, size_t l)
{
	(void)m, (void)a, (void)l;
}

static bool never_valid(struct fid_mem_monitor *m, const void *a, size_t l)
{
	(void)m, (void)a, (void)l;
	return false;
}

static struct fi_ops_mem_monitor ops = {
	.size = sizeof(ops),
	.start = no_start,
	.stop = no_stop,
	.subscribe = no_subscribe,
	.unsubscribe = no_unsubscribe,
	.valid = never_valid,
};

static struct fid_mem_monitor other = {
	.fid = { .fclass = FI_CLASS_MEM_MONITOR },
	.export_ops = &ops,
};

/* Import another monitor, as Open MPI's common/ofi does with its own:
 * libfabric accepts only the first import. 0 if it took this one. */
int module_import_other(void)
{
	struct fid *cache_fid;
	int ret = fi_open(FI_VERSION(1, 13), "mr_cache", NULL, 0, 0, &cache_fid,
			  NULL);

	if (ret)
		return ret;
	ret = fi_import_fid(cache_fid, &other.fid, 0);
	fi_close(cache_fid);
	return ret;
}
