/* SPDX-License-Identifier: MIT */
/*
 * The node's BPF program set (see bpf_set.h). Single-threaded: only the
 * daemon's event loop calls in.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "bpf_set.h"
#include "base/env.h"
#include "daemon_log.h"
#include "kernel/bpf_kernel.h"
#include "rc_node.skel.h"

struct rcd_bpf {
	struct rc_node_bpf *skel;
	int procs_fd, state_fd, mms_fd, files_fd;
	__u64 nfiles;
	struct rc_bpf_fit fit;	/* how the syscall stages attach, and why */
};

static char libbpf_first[200];

static int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap)
{
	char buf[512];

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	if (!libbpf_first[0])
		snprintf(libbpf_first, sizeof(libbpf_first), "%.199s", buf);
	rcd_debug("libbpf: %s", buf);
	return 0;
}

/* Headroom for "everything" records and, after it, room only DEAD may
 * use: one 24-byte record per CPU and nesting level (task, softirq,
 * hardirq, NMI) can pass a fill check before the ring crosses it, plus one
 * of slack (docs/monitor-bpf.md, Overflow). Capped at a quarter each. */
static __u64 ring_reserve_bytes(void)
{
	int cpus = libbpf_num_possible_cpus();
	__u64 rec = BPF_RINGBUF_HDR_SZ + sizeof(struct rc_bpf_range);
	__u64 h = rec * (4 * (__u64)(cpus > 0 ? cpus : 1024) + 2);

	return h > RC_BPF_RING_BYTES / 4 ? RC_BPF_RING_BYTES / 4 : h;
}

/* Open, fit, load and attach the set with the syscall stages attached as
 * @want says. On failure b->skel is left for the caller to destroy. */
static int load_set(struct rcd_bpf *b, enum rc_bpf_attach want)
{
	int ret;

	b->skel = rc_node_bpf__open();
	if (!b->skel)
		return -errno;
	b->skel->rodata->headroom = ring_reserve_bytes();
	b->skel->rodata->dead_room = ring_reserve_bytes();
	ret = rc_bpf_fit(b->skel->obj, b->skel->progs.rc_uring_submit,
			 b->skel->progs.rc_uring_complete, want, &b->fit);
	if (ret)
		return ret;
	if (!b->fit.uring)
		rcd_info("%s: io_uring MADVISE is not watched",
			 b->fit.uring_why);
	ret = rc_node_bpf__load(b->skel);
	if (ret)
		return ret;
	b->skel->bss->daemon_tgid = (__u64)getpid();
	return rc_node_bpf__attach(b->skel);
}

int rcd_bpf_open(struct rcd_bpf **out, char *why, size_t why_len)
{
	struct rcd_bpf *b = calloc(1, sizeof(*b));
	enum rc_bpf_attach want;
	int ret;

	if (!b)
		return -ENOMEM;
	if (rc_bpf_attach_wanted(&want)) {
		snprintf(why, why_len, "REGCACHE_BPF_ATTACH=%s is not auto, "
			 "fentry or syscalls", rc_env_str(RC_ENV_BPF_ATTACH));
		free(b);
		return -EINVAL;
	}
	libbpf_first[0] = 0;
	libbpf_set_print(libbpf_log);
	ret = load_set(b, want);
	if (ret && want == RC_BPF_ATTACH_AUTO &&
	    b->fit.mode == RC_BPF_ATTACH_FENTRY) {
		/* The probe passed but the set did not: the tracepoints
		 * still do the job, at their cost. */
		char failed[sizeof(libbpf_first) + 64];

		snprintf(failed, sizeof(failed), "%s%s%s",
			 strerror(ret < 0 ? -ret : ret),
			 libbpf_first[0] ? ": " : "", libbpf_first);
		rc_node_bpf__destroy(b->skel);
		libbpf_first[0] = 0;
		ret = load_set(b, RC_BPF_ATTACH_SYSCALLS);
		snprintf(b->fit.why, sizeof(b->fit.why),
			 "sys_enter/sys_exit: every syscall of the machine runs "
			 "a program, because the fentry programs failed (%s)",
			 failed);
	}
	if (ret == -EOPNOTSUPP && want == RC_BPF_ATTACH_FENTRY) {
		snprintf(why, why_len, "%s", b->fit.why);
		goto fail_quiet;
	}
	if (ret)
		goto fail;
	rcd_info("attach mode %s: %s", rc_bpf_attach_name(b->fit.mode),
		 b->fit.why);
	b->procs_fd = bpf_map__fd(b->skel->maps.procs);
	b->state_fd = bpf_map__fd(b->skel->maps.procs_state);
	b->mms_fd = bpf_map__fd(b->skel->maps.mms);
	b->files_fd = bpf_map__fd(b->skel->maps.files);
	*out = b;
	return 0;
fail:
	if (ret > 0)
		ret = -ret;
	if (!ret)
		ret = -EINVAL;
	snprintf(why, why_len, "%s%s%s", strerror(-ret),
		 libbpf_first[0] ? "; libbpf said: " : "", libbpf_first);
fail_quiet:
	rc_node_bpf__destroy(b->skel);
	free(b);
	return ret;
}

void rcd_bpf_tombstone(struct rcd_bpf *b, __u32 tgid, __u32 slots)
{
	__u64 cookie = 0;

	while (!cookie)
		if (getrandom(&cookie, sizeof(cookie), 0) != sizeof(cookie))
			cookie = 0x5eed ^ (__u64)getpid() << 20;
	b->skel->bss->tomb_tgid = tgid;
	b->skel->bss->tomb_slots = slots;
	__atomic_store_n(&b->skel->bss->tomb_cookie, cookie, __ATOMIC_RELEASE);
	/* madvise(0, 0, x) changes nothing; sys_enter sees the cookie from
	 * the daemon's tgid and writes the records before it returns. */
	syscall(SYS_madvise, 0UL, 0UL, cookie);
	__atomic_store_n(&b->skel->bss->tomb_cookie, 0, __ATOMIC_RELEASE);
}

void rcd_bpf_close(struct rcd_bpf *b)
{
	if (!b)
		return;
	rcd_bpf_tombstone(b, 0, ~0u);
	rc_node_bpf__destroy(b->skel);
	free(b);
}

int rcd_bpf_ring_new(void)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "rcd_ring", 0, 0,
				RC_BPF_RING_BYTES, NULL);

	return fd < 0 ? -errno : fd;
}

bool rcd_bpf_ring_valid(int fd)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
	       info.type == BPF_MAP_TYPE_RINGBUF &&
	       info.max_entries == RC_BPF_RING_BYTES;
}

int rcd_bpf_rings_insert(struct rcd_bpf *b, const struct rc_bpf_node_key *keys,
			 const int *fds, unsigned n)
{
	__u32 count = n;
	__u32 *vals;
	int ret = 0;

	if (!n)
		return 0;
	vals = calloc(n, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		vals[i] = (__u32)fds[i];
	if (bpf_map_update_batch(b->procs_fd, keys, vals, &count, NULL)) {
		ret = -errno;
		/* Old kernels without batch updates of map-in-maps: one grace
		 * period each. */
		for (unsigned i = count; i < n; i++)
			if (bpf_map_update_elem(b->procs_fd, &keys[i], &vals[i],
						BPF_ANY))
				goto out;
		ret = 0;
	}
out:
	free(vals);
	return ret;
}

void rcd_bpf_rings_delete(struct rcd_bpf *b, const struct rc_bpf_node_key *keys,
			  unsigned n)
{
	__u32 count = n;

	if (!n)
		return;
	if (bpf_map_delete_batch(b->procs_fd, keys, &count, NULL) == 0)
		return;
	/* A missing key stops the batch: delete the rest one by one. */
	for (unsigned i = count; i < n; i++)
		bpf_map_delete_elem(b->procs_fd, &keys[i]);
}

int rcd_bpf_set_slots(struct rcd_bpf *b, __u32 tgid, __u32 slots, bool fresh)
{
	struct rc_bpf_node_proc p;

	memset(&p, 0, sizeof(p));
	/* Not fresh and gone: the exit hook removed it; never re-create the
	 * entry of a process that exited (its pid may be reused). */
	if (!fresh && bpf_map_lookup_elem(b->state_fd, &tgid, &p))
		return -ESRCH;
	if (!slots) {
		if (p.mm)
			bpf_map_delete_elem(b->mms_fd, &p.mm);
		bpf_map_delete_elem(b->state_fd, &tgid);
		return 0;
	}
	p.slots = slots;
	return bpf_map_update_elem(b->state_fd, &tgid, &p,
				   fresh ? BPF_ANY : BPF_EXIST) ? -errno : 0;
}

__u64 rcd_bpf_drops(struct rcd_bpf *b, __u32 tgid)
{
	struct rc_bpf_node_proc p;

	return bpf_map_lookup_elem(b->state_fd, &tgid, &p) ? 0 : p.drops;
}

static void publish_nfiles(struct rcd_bpf *b)
{
	__atomic_store_n(&b->skel->bss->nfiles, b->nfiles, __ATOMIC_RELEASE);
}

int rcd_bpf_file_watch(struct rcd_bpf *b, const struct rc_bpf_file_key *key,
		       __u32 tgid, __u64 lo, __u64 hi, bool *added)
{
	struct rc_bpf_node_file f;
	bool found;
	int free_i = -1;

	*added = false;
	memset(&f, 0, sizeof(f));
	found = bpf_map_lookup_elem(b->files_fd, key, &f) == 0;
	for (int i = 0; i < RC_BPF_NODE_FILE_WATCHERS; i++) {
		struct rc_bpf_node_watcher *w = &f.w[i];

		if (w->tgid == tgid) {
			if (w->pgoff_lo <= lo && w->pgoff_hi >= hi)
				return 0;
			w->pgoff_lo = w->pgoff_lo < lo ? w->pgoff_lo : lo;
			w->pgoff_hi = w->pgoff_hi > hi ? w->pgoff_hi : hi;
			free_i = -2;
			break;
		}
		if (!w->tgid && free_i == -1)
			free_i = i;
	}
	if (free_i == -1)
		return -ENOSPC;
	if (free_i >= 0) {
		f.w[free_i].tgid = tgid;
		f.w[free_i].pgoff_lo = lo;
		f.w[free_i].pgoff_hi = hi;
		*added = true;
	}
	if (bpf_map_update_elem(b->files_fd, key, &f, BPF_ANY))
		return errno == E2BIG ? -ENOSPC : -errno;
	if (!found) {
		b->nfiles++;
		/* After the entry exists: the page-cache hook tests nfiles
		 * first. */
		publish_nfiles(b);
	}
	return 0;
}

void rcd_bpf_file_unwatch(struct rcd_bpf *b, const struct rc_bpf_file_key *key,
			  __u32 tgid)
{
	struct rc_bpf_node_file f;
	bool any = false;

	if (bpf_map_lookup_elem(b->files_fd, key, &f))
		return;
	for (int i = 0; i < RC_BPF_NODE_FILE_WATCHERS; i++) {
		if (f.w[i].tgid == tgid)
			memset(&f.w[i], 0, sizeof(f.w[i]));
		any |= f.w[i].tgid != 0;
	}
	if (any) {
		bpf_map_update_elem(b->files_fd, key, &f, BPF_ANY);
		return;
	}
	if (bpf_map_delete_elem(b->files_fd, key) == 0 && b->nfiles) {
		b->nfiles--;
		publish_nfiles(b);
	}
}
