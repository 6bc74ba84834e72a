// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * regcache's eBPF monitor: publish every range whose pages a monitored
 * process is about to change, synchronously, inside the changing thread.
 *
 * Stages (see docs/monitor-bpf.md for why each is needed):
 *  1. sys_enter of munmap, mremap, madvise, brk, mmap(MAP_FIXED), shmdt,
 *     shmat(SHM_REMAP), remap_file_pages, process_madvise, fallocate,
 *     ftruncate, truncate: push the range before the kernel touches it and
 *     remember it for the thread.
 *  2. mmap_lock_released: the zap is done but the mmap lock is still held,
 *     so no other thread can map the address again yet: push it again.
 *  3. sys_exit: push it a third time and forget it.
 *  Stages 1 and 3 attach either to sys_enter/sys_exit, which every syscall
 *  of the machine runs, or by fentry/fexit to the entry points of the
 *  decoded calls alone (rc_fe_* / rc_fx_*, where the kernel allows it).
 *  io_uring IORING_OP_MADVISE: at submission and at completion.
 *  Page-cache removal of a watched file (truncate or hole punch by anyone).
 *
 * The generation that the cache's hit path reads is the ring's producer
 * position, which the kernel advances when a record is reserved and which it
 * maps read-only into the process: no other process can move it back. The
 * consumer (bpf.c:bpf_pull) waits for a reserved record to be committed, so
 * a record is always read before the generation it moved is adopted.
 *
 * Every map is keyed by the global tgid (bpf_get_current_pid_tgid(), which
 * bpf.c learns at start: getpid() is namespace-local).
 *
 * Built twice. Without RC_NODE: the in-process monitor, one set per process
 * (src/monitor/bpf.c). With RC_NODE: the node variant that the regcached
 * daemon loads once for every client (docs/regcached.md): rings are keyed
 * by {tgid, slot} so that several copies of the library in one process each
 * have one, several processes may watch one file, a process's state goes
 * away in-kernel when it exits, and the daemon's own exit writes a DEAD
 * record into every client ring. The variants differ in one block of types
 * and maps (rc_proc_t, rc_file_t, procs), in emit(), in the in-process
 * file addresses (file_ranges(), folio_pages()), and in the node's
 * tombstones and exit hook.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "../../abi/rc_bpf_abi.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* x86_64 syscall numbers (native) */
#define NR_mmap 9
#define NR_munmap 11
#define NR_brk 12
#define NR_mremap 25
#define NR_madvise 28
#define NR_shmat 30
#define NR_shmdt 67
#define NR_truncate 76
#define NR_ftruncate 77
#define NR_remap_file_pages 216
#define NR_fallocate 285
#define NR_process_madvise 440

/* i386 numbers of the same calls, for int $0x80 from a 64-bit process */
#define NR32_brk 45
#define NR32_old_mmap 90
#define NR32_munmap 91
#define NR32_truncate 92
#define NR32_ftruncate 93
#define NR32_ipc 117
#define NR32_mremap 163
#define NR32_mmap2 192
#define NR32_truncate64 193
#define NR32_ftruncate64 194
#define NR32_madvise 219
#define NR32_remap_file_pages 257
#define NR32_fallocate 324
#define NR32_shmat 397
#define NR32_shmdt 398

#define TS_COMPAT 0x0002	/* arch/x86/include/asm/thread_info.h */
#define X32_SYSCALL_BIT 0x40000000	/* __X32_SYSCALL_BIT */
#define MAP_FIXED 0x10
#define MAP_FIXED_NOREPLACE 0x100000
#define MREMAP_FIXED 2
#define SHM_REMAP 040000
#define FALLOC_FL_KEEP_SIZE 0x01
#define FALLOC_FL_PUNCH_HOLE 0x02
#define FALLOC_FL_ZERO_RANGE 0x10
#define PF_IO_WORKER 0x00000010
#define PAGE_MASK_ (~4095ULL)

struct rc_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RC_BPF_RING_BYTES);
};

/* What the two variants keep per process, per watched file and per ring. */
#ifdef RC_NODE
#define RC_PROCS_MAX RC_BPF_NODE_MAX_PROCS
typedef struct rc_bpf_node_proc rc_proc_t;
typedef struct rc_bpf_node_file rc_file_t;	/* every watcher's pages */

/* {tgid, slot} -> the ring of one library copy (inserted by the daemon) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, RC_BPF_NODE_MAX_PROCS * RC_BPF_NODE_SLOTS);
	__type(key, struct rc_bpf_node_key);
	__array(values, struct rc_ring);
} procs SEC(".maps");
#else
#define RC_PROCS_MAX RC_BPF_MAX_PROCS
typedef struct rc_bpf_proc rc_proc_t;
typedef struct rc_bpf_file rc_file_t;	/* where we map its pages */

/* tgid -> that process's ring buffer (created and inserted by bpf.c) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, RC_BPF_MAX_PROCS);
	__type(key, __u32);
	__array(values, struct rc_ring);
} procs SEC(".maps");
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RC_PROCS_MAX);
	__type(key, __u32);
	__type(value, rc_proc_t);
} procs_state SEC(".maps");

/* mm_struct -> tgid: a clone(CLONE_VM) child that is not a thread has its
 * own tgid but changes our address space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RC_PROCS_MAX);
	__type(key, __u64);
	__type(value, __u32);
} mms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RC_BPF_MAX_PENDING);
	__type(key, __u32);
	__type(value, struct rc_bpf_pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RC_BPF_MAX_FILES);
	__type(key, struct rc_bpf_file_key);
	__type(value, rc_file_t);
} files SEC(".maps");

/* Threads with an entry in `pending`: lets the exit and lock hooks, which
 * fire for every process on the machine, return after one load. */
__u64 npending = 0;
/* Entries in `files`, maintained by bpf.c: same purpose for the page-cache
 * hook. */
__u64 nfiles = 0;
/* Start-up handshake (bpf.c:learn_tgid): the maps are keyed by the tgid the
 * kernel reports here, which differs from getpid() inside a PID namespace.
 * bpf.c sets learn_cookie to a random value and calls madvise(0, 0, cookie);
 * the sys_enter program records the caller's global tgid and mm. */
__u64 learn_cookie = 0;
__u64 learned_tgid = 0;
__u64 learned_mm = 0;
/* Set by bpf.c while a thread sleeps in regcache_subscriber_wait() (its
 * own variable, in the mmaped .bss): records then wake the ring's poll
 * instead of being submitted silently. Read after the reserve; the waiter
 * stores it, then membarrier(), then checks the generation
 * (docs/monitor-bpf.md, Waiting). */
__u32 wake_waiter = 0;

/* Bytes kept free at the end of a ring (set by bpf.c before loading, see
 * bpf_start): once fewer are free, every record is "everything". */
const volatile __u64 headroom = 0;

/* Bytes at the very end of a ring that only a DEAD record may use (node
 * variant; 0 in-process). Set before loading like headroom, and as large:
 * at most one record per CPU and nesting level can pass the check below
 * before the ring crosses it, so the DEAD record always fits. */
const volatile __u64 dead_room = 0;

/* "Everything" records by cause, per loaded set, for diagnosis only (read
 * with `bpftool map dump name rc_monit.bss`, or rc_node.bss for the
 * daemon's set; docs/monitor-bpf.md): a call is counted once, at entry; a
 * nearly full (HEADROOM) or full ring (DROP) once per record. */
enum {
	EV_COMPAT, EV_PROCESS_MADVISE, EV_SHMAT, EV_SHMDT, EV_TRUNCATE,
	EV_FTRUNCATE, EV_FALLOCATE, EV_URING, EV_FILEMAP, EV_HEADROOM,
	EV_DROP, EV_PENDING_FULL, EV_NCAUSES
};
__u64 everything_causes[EV_NCAUSES] = {};

static __always_inline void count_cause(int cause)
{
	if (cause >= 0 && cause < EV_NCAUSES)
		__sync_fetch_and_add(&everything_causes[cause], 1);
}

static __always_inline void count_drop(__u32 tgid)
{
	rc_proc_t *p = bpf_map_lookup_elem(&procs_state, &tgid);

	if (p)
		__sync_fetch_and_add(&p->drops, 1);
}

/* Push one record into one ring. Reserving moves the producer position (the
 * generation); the consumer waits for the commit before it reads past it. */
static __always_inline void emit_ring(void *ring, __u32 tgid, __u64 start,
				      __u64 end, bool any_mm)
{
	struct rc_bpf_range *rec;
	__u64 used = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);

	/* Nearly full: publish "everything" instead of the range. A record
	 * that still fails to fit then always finds an unconsumed
	 * "everything" record ahead of it in the ring (only records whose
	 * check ran before the ring crossed the threshold, at most one per
	 * CPU and nesting level, can be normal ones), so its loss is covered
	 * even if a pull reads `drops` before count_drop below runs
	 * (docs/monitor-bpf.md, Overflow). The last dead_room bytes are
	 * never reserved here: they are the DEAD record's. */
	if (used + dead_room >= RC_BPF_RING_BYTES) {
		count_drop(tgid);
		count_cause(EV_DROP);
		return;
	}
	if (used >= RC_BPF_RING_BYTES - dead_room - headroom) {
		start = 0;
		end = ~0ULL;
		count_cause(EV_HEADROOM);
	}
	rec = bpf_ringbuf_reserve(ring, sizeof(*rec), 0);
	if (!rec) {
		/* Full: the producer position is already ahead of every
		 * cache's adopted generation, so the next pull sees the
		 * drop and invalidates everything. */
		count_drop(tgid);
		count_cause(EV_DROP);
		return;
	}
	rec->start = start;
	rec->end = end;
	/* Nobody sleeps on the ring: skip the wakeup's irq_work. A waiter's
	 * membarrier() orders only threads of its own mm, so a change made
	 * from another mm (a page-cache hook) wakes whenever the ring was
	 * drained (flags 0: the kernel's full barrier then decides). */
	if (any_mm)
		bpf_ringbuf_submit(rec, 0);
	else
		bpf_ringbuf_submit(rec, *(volatile __u32 *)&wake_waiter ?
						BPF_RB_FORCE_WAKEUP :
						BPF_RB_NO_WAKEUP);
}

/* Push [start, end) to every ring of process tgid. */
static __always_inline void emit(__u32 tgid, __u64 start, __u64 end,
				 bool any_mm)
{
	void *ring;

	if (start >= end)
		return;
#ifdef RC_NODE
	struct rc_bpf_node_key key = { .tgid = tgid };
	rc_proc_t *p = bpf_map_lookup_elem(&procs_state, &tgid);
	__u32 slots;

	if (!p)
		return;
	slots = p->slots;
#pragma unroll
	for (__u32 i = 0; i < RC_BPF_NODE_SLOTS; i++) {
		if (!(slots & (1u << i)))
			continue;
		key.slot = i;
		ring = bpf_map_lookup_elem(&procs, &key);
		if (ring)
			emit_ring(ring, tgid, start, end, any_mm);
	}
#else
	ring = bpf_map_lookup_elem(&procs, &tgid);
	if (ring)
		emit_ring(ring, tgid, start, end, any_mm);
#endif
}

/* The tgid whose address space the current task changes, or 0. */
static __always_inline __u32 monitored(struct task_struct *task)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	rc_proc_t *p;
	__u64 mm;
	__u32 *owner;

	p = bpf_map_lookup_elem(&procs_state, &tgid);
	if (p) {
		if (!p->mm) {
			p->mm = (__u64)BPF_CORE_READ(task, mm);
#ifdef RC_NODE
			/* In-process, bpf.c fills mms after its self-test;
			 * a client of the daemon cannot write maps. */
			mm = p->mm;
			if (mm)
				bpf_map_update_elem(&mms, &mm, &tgid,
						    BPF_NOEXIST);
#endif
		}
		return tgid;
	}
	mm = (__u64)BPF_CORE_READ(task, mm);
	owner = bpf_map_lookup_elem(&mms, &mm);
	return owner ? *owner : 0;
}

static __always_inline void range_of(struct rc_bpf_range *r, __u64 addr,
				     __u64 len)
{
	__u64 end = addr + len;

	r->start = addr & PAGE_MASK_;
	if (!len) {
		r->end = r->start;
		return;
	}
	if (end < addr || end > ~4095ULL)
		r->end = ~0ULL;
	else
		r->end = (end + 4095) & PAGE_MASK_;
}

static __always_inline void everything(struct rc_bpf_range *r)
{
	r->start = 0;
	r->end = ~0ULL;
}

/* Advice that cannot give a range new pages; anything else, including
 * advice newer than this list, invalidates (design rule 8). */
static __always_inline bool advice_harmless(__u64 advice)
{
	switch (advice) {
	case 0:		/* NORMAL */
	case 1:		/* RANDOM */
	case 2:		/* SEQUENTIAL */
	case 3:		/* WILLNEED */
	case 10:	/* DONTFORK */
	case 11:	/* DOFORK */
	case 16:	/* DONTDUMP */
	case 17:	/* DODUMP */
	case 18:	/* WIPEONFORK: only the child's copy */
	case 19:	/* KEEPONFORK */
	case 20:	/* COLD */
	case 22:	/* POPULATE_READ */
	case 23:	/* POPULATE_WRITE */
		return true;
	}
	return false;
}

/* What fd_file() found. */
enum fd_kind { FD_UNWATCHED, FD_WATCHED, FD_UNKNOWN };

/* Does fd refer to a file that a watched region maps? Sets *entry to its
 * files entry when it does. */
static __always_inline enum fd_kind fd_file(struct task_struct *task, __u64 fd,
					    void **entry)
{
	struct rc_bpf_file_key key = {};
	struct file **fdarr;
	struct file *f = NULL;
	struct fdtable *fdt;
	struct inode *inode;
	unsigned int max;

	if (!nfiles)
		return FD_UNWATCHED;
	fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt)
		return FD_UNKNOWN;
	max = BPF_CORE_READ(fdt, max_fds);
	fdarr = BPF_CORE_READ(fdt, fd);
	if (fd >= max || !fdarr)
		return FD_UNWATCHED;	/* EBADF: the syscall changes nothing */
	if (bpf_probe_read_kernel(&f, sizeof(f), &fdarr[fd]) || !f)
		return FD_UNKNOWN;
	inode = BPF_CORE_READ(f, f_inode);
	if (!inode)
		return FD_UNKNOWN;
	key.ino = BPF_CORE_READ(inode, i_ino);
	key.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	*entry = bpf_map_lookup_elem(&files, &key);
	return *entry ? FD_WATCHED : FD_UNWATCHED;
}

#ifndef RC_NODE
/* In-process only: the files entry says where this process maps the file,
 * so a change of file pages becomes our address ranges. The node variant
 * knows no client's mappings and publishes everything of each watcher. */

/*
 * Our addresses of file pages [first, last) of a watched file, one range
 * per recorded mapping (rc_bpf_abi.h, struct rc_bpf_file), clipped to the
 * watched pages [pgoff_lo, pgoff_hi): no region of ours maps any other.
 * Returns how many ranges it wrote (at most @max), 0 when nothing watched
 * is touched, or -1 when they cannot be told: the caller says everything.
 */
static __always_inline int file_ranges(const struct rc_bpf_file *f,
				       __u64 first, __u64 last,
				       struct rc_bpf_range *r, __u32 max)
{
	__u32 nb = f->nbases;
	int n = 0;

	if (!nb || nb > RC_BPF_FILE_BASES || nb > max)
		return -1;
	if (first < f->pgoff_lo)
		first = f->pgoff_lo;
	if (last > f->pgoff_hi)
		last = f->pgoff_hi;
	if (first >= last)
		return 0;
	/* pgoff_hi < 2^52 keeps the products below 2^64. */
	if (last >= (1ULL << 52))
		return -1;
#pragma unroll
	for (__u32 i = 0; i < RC_BPF_FILE_BASES; i++) {
		__u64 start = f->base[i] + first * 4096;
		__u64 end = f->base[i] + last * 4096;

		if (i < nb) {
			if (end < start)
				return -1;	/* wraps: not a real mapping */
			r[i].start = start;
			r[i].end = end;
			n++;
		}
	}
	return n;
}

/* Kernel layouts of the folio fields folio_pages() reads, by version (CO-RE
 * picks the one that exists). */
struct folio___flags_struct {
	struct {
		unsigned long f;
	} flags;
} __attribute__((preserve_access_index));
struct folio___flags_ulong {
	unsigned long flags;
} __attribute__((preserve_access_index));
struct folio___nr_pages {
	unsigned int _nr_pages;
} __attribute__((preserve_access_index));
struct folio___folio_nr_pages {
	unsigned int _folio_nr_pages;
} __attribute__((preserve_access_index));

/* Pages in @folio; when that cannot be read, the largest page-cache folio
 * (a PMD, 512 pages on x86-64), which only widens the records. */
static __always_inline __u64 folio_pages(struct folio *folio)
{
	unsigned long flags = 0;
	unsigned int nr = 0;
	int head;

	if (!bpf_core_enum_value_exists(enum pageflags, PG_head))
		return 512;
	head = bpf_core_enum_value(enum pageflags, PG_head);
	if (bpf_core_field_exists(struct folio___flags_struct, flags.f))
		flags = BPF_CORE_READ((struct folio___flags_struct *)folio,
				      flags.f);
	else if (bpf_core_field_exists(struct folio___flags_ulong, flags))
		flags = BPF_CORE_READ((struct folio___flags_ulong *)folio,
				      flags);
	else
		return 512;
	if (!(flags & (1UL << (head & 63))))
		return 1;
	if (bpf_core_field_exists(struct folio___nr_pages, _nr_pages))
		nr = BPF_CORE_READ((struct folio___nr_pages *)folio, _nr_pages);
	else if (bpf_core_field_exists(struct folio___folio_nr_pages,
				       _folio_nr_pages))
		nr = BPF_CORE_READ((struct folio___folio_nr_pages *)folio,
				   _folio_nr_pages);
	return nr >= 1 && nr <= 512 ? nr : 512;
}
#endif

/* ftruncate / fallocate of @fd: file pages [first, last) may lose their
 * page-cache pages. Writes the ranges to publish; returns how many. */
static __always_inline int fd_change(struct task_struct *task, __u64 fd,
				     __u64 first, __u64 last,
				     struct rc_bpf_range *r, int cause)
{
	void *entry = NULL;

	switch (fd_file(task, fd, &entry)) {
	case FD_UNWATCHED:
		return 0;
	case FD_WATCHED:
#ifndef RC_NODE
	{
		int n = file_ranges(entry, first, last, r,
				    RC_BPF_PENDING_RANGES);

		if (n >= 0)
			return n;
	}
#endif
		break;
	case FD_UNKNOWN:
		break;
	}
	everything(r);
	count_cause(cause);
	return 1;
}

/* Ranges a native syscall is about to change; returns how many. */
static __always_inline int native_ranges(struct task_struct *task,
					 struct pt_regs *regs, long id,
					 struct rc_bpf_range *r)
{
	/* BPF_CORE_READ rather than direct loads through the BTF pointer:
	 * each direct load makes the verifier search vmlinux BTF by name
	 * (btf_nested_type_is_trusted), which dominated load time. */
	__u64 a0 = BPF_CORE_READ(regs, di), a1 = BPF_CORE_READ(regs, si);
	__u64 a2 = BPF_CORE_READ(regs, dx), a3 = BPF_CORE_READ(regs, r10);
	__u64 cur;

	switch (id) {
	case NR_mmap:
		if (!(a3 & MAP_FIXED) || (a3 & MAP_FIXED_NOREPLACE))
			return 0;
		range_of(r, a0, a1);
		return 1;
	case NR_munmap:
	case NR_remap_file_pages:
		range_of(r, a0, a1);
		return 1;
	case NR_brk:
		cur = BPF_CORE_READ(task, mm, brk);
		if (!a0 || a0 >= cur)
			return 0;
		range_of(r, a0, cur - a0);
		return 1;
	case NR_mremap:
		range_of(&r[0], a0, a1 > a2 ? a1 : a2);
		if (!(a3 & MREMAP_FIXED))
			return 1;
		range_of(&r[1], BPF_CORE_READ(regs, r8), a2);
		return 2;
	case NR_madvise:
		if (advice_harmless(a2))
			return 0;
		range_of(r, a0, a1);
		return 1;
	case NR_process_madvise:
		/* Ranges are behind a user iovec; rare: everything. */
		if (advice_harmless(a3))
			return 0;
		everything(r);
		count_cause(EV_PROCESS_MADVISE);
		return 1;
	case NR_shmat:
		if (!a1 || !(a2 & SHM_REMAP))
			return 0;
		everything(r);
		count_cause(EV_SHMAT);
		return 1;
	case NR_shmdt:
		/* The segment's size is not an argument; shmdt is rare. */
		everything(r);
		count_cause(EV_SHMDT);
		return 1;
	case NR_truncate:
		if (!nfiles)
			return 0;
		everything(r);
		count_cause(EV_TRUNCATE);
		return 1;
	case NR_ftruncate:
		/* The page holding the new end keeps its head: from it on. */
		return fd_change(task, a0, a1 >> 12, ~0ULL, r, EV_FTRUNCATE);
	case NR_fallocate:
		/* Plain allocation keeps every page. Punch and zero change
		 * [offset, offset + len); collapse, insert, unshare and
		 * anything newer may move every page from offset on. */
		if (!(a1 & ~(__u64)FALLOC_FL_KEEP_SIZE))
			return 0;
		if (!(a1 & ~(__u64)(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
				    FALLOC_FL_ZERO_RANGE)) &&
		    a2 + a3 >= a2 && a2 + a3 <= ~4095ULL)
			return fd_change(task, a0, a2 >> 12,
					 (a2 + a3 + 4095) >> 12, r,
					 EV_FALLOCATE);
		return fd_change(task, a0, a2 >> 12, ~0ULL, r, EV_FALLOCATE);
	}
	return 0;
}

static __always_inline bool compat_relevant(long id)
{
	switch (id) {
	case NR32_brk:
	case NR32_old_mmap:
	case NR32_munmap:
	case NR32_truncate:
	case NR32_ftruncate:
	case NR32_ipc:
	case NR32_mremap:
	case NR32_mmap2:
	case NR32_truncate64:
	case NR32_ftruncate64:
	case NR32_madvise:
	case NR32_remap_file_pages:
	case NR32_fallocate:
	case NR32_shmat:
	case NR32_shmdt:
	case NR_process_madvise:
		return true;
	}
	return false;
}

/* Cheap first filter for the native ABI. */
static __always_inline bool native_relevant(long id)
{
	switch (id) {
	case NR_mmap:
	case NR_munmap:
	case NR_brk:
	case NR_mremap:
	case NR_madvise:
	case NR_shmat:
	case NR_shmdt:
	case NR_truncate:
	case NR_ftruncate:
	case NR_remap_file_pages:
	case NR_fallocate:
	case NR_process_madvise:
		return true;
	}
	return false;
}

#ifdef RC_NODE
/* Global tgid of the daemon, set after load. */
__u64 daemon_tgid = 0;
/* The daemon asks for DEAD records with madvise(0, 0, tomb_cookie) after
 * setting tomb_tgid (0: every client) and tomb_slots: before it drops a
 * live client and before a clean stop detaches the programs. */
__u64 tomb_cookie = 0;
__u32 tomb_tgid = 0;
__u32 tomb_slots = 0;
__u64 n_tombstones = 0;

struct tomb_ctx {
	__u32 tgid;
	__u32 slots;
};

/* Write DEAD into every ring of one client. Uses the dead_room that
 * emit_ring() never touches, so it fits unless the client moved its own
 * consumer position (which only harms itself). */
static long tomb_one(struct bpf_map *map, __u32 *key, rc_proc_t *val,
		     struct tomb_ctx *ctx)
{
	struct rc_bpf_node_key rk = { .tgid = *key };
	struct rc_bpf_range *rec;
	void *ring;

	if (ctx->tgid && ctx->tgid != *key)
		return 0;
#pragma unroll
	for (__u32 i = 0; i < RC_BPF_NODE_SLOTS; i++) {
		if (!(val->slots & ctx->slots & (1u << i)))
			continue;
		rk.slot = i;
		ring = bpf_map_lookup_elem(&procs, &rk);
		if (!ring)
			continue;
		rec = bpf_ringbuf_reserve(ring, sizeof(*rec), 0);
		if (!rec) {
			__sync_fetch_and_add(&val->drops, 1);
			continue;
		}
		rec->start = RC_BPF_DEAD_START;
		rec->end = RC_BPF_DEAD_END;
		bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
		__sync_fetch_and_add(&n_tombstones, 1);
	}
	return 0;
}

static __always_inline void tombstone(__u32 tgid, __u32 slots)
{
	struct tomb_ctx ctx = { .tgid = tgid, .slots = slots };

	bpf_for_each_map_elem(&procs_state, tomb_one, &ctx, 0);
}
#endif

/*
 * Stage 1 of native call @id (@compat false: the 64-bit or x32 ABI) or of
 * any decoded i386 call (@compat true: int $0x80), in the calling thread,
 * before the kernel touches the range. Shared by the two ways the stages
 * attach (docs/monitor-bpf.md, Attach modes): the sys_enter tracepoint,
 * which sees every syscall and filters by number, and one fentry program
 * per decoded entry point, which runs for that call alone.
 */
static __always_inline int stage1(struct task_struct *task,
				  struct pt_regs *regs, long id, bool compat)
{
	struct rc_bpf_pending p = {};
	__u32 tid, tgid;
	int n;

	if (id == NR_madvise && learn_cookie && !compat &&
	    BPF_CORE_READ(regs, dx) == learn_cookie) {
		learned_mm = (__u64)BPF_CORE_READ(task, mm);
		learned_tgid = bpf_get_current_pid_tgid() >> 32;
		return 0;
	}
#ifdef RC_NODE
	if (id == NR_madvise && tomb_cookie && !compat &&
	    BPF_CORE_READ(regs, dx) == tomb_cookie &&
	    bpf_get_current_pid_tgid() >> 32 == daemon_tgid) {
		tombstone(tomb_tgid, tomb_slots);
		return 0;
	}
#endif
	tgid = monitored(task);
	if (!tgid)
		return 0;
	if (compat) {
		/* int $0x80 from a 64-bit process: decoding the i386 ABI
		 * is not worth it for something this rare. */
		everything(&p.r[0]);
		count_cause(EV_COMPAT);
		n = 1;
	} else {
		n = native_ranges(task, regs, id, p.r);
	}
	if (n <= 0)
		return 0;
#pragma unroll
	for (int i = 0; i < RC_BPF_PENDING_RANGES; i++)
		if (i < n)
			emit(tgid, p.r[i].start, p.r[i].end, false);
	p.tgid = tgid;
	p.n = n;
	tid = (__u32)bpf_get_current_pid_tgid();
	if (bpf_map_update_elem(&pending, &tid, &p, BPF_NOEXIST) == 0) {
		__sync_fetch_and_add(&npending, 1);
	} else if (bpf_map_update_elem(&pending, &tid, &p, BPF_EXIST)) {
		/* No room to remember the range for the later stages:
		 * count it as a lost record (invalidates everything). */
		count_drop(tgid);
		count_cause(EV_PENDING_FULL);
	}
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(rc_sys_enter, struct pt_regs *regs, long id)
{
	struct task_struct *task;
	bool compat;

	/* The x32 ABI numbers the calls we decode like the native ABI, with
	 * bit 30 set, and passes the same registers (pointers zero-extended):
	 * decode them as native. Without CONFIG_X86_X32_ABI such a number
	 * fails with ENOSYS, and the records it makes are only spurious. */
	id &= ~(long)X32_SYSCALL_BIT;
	/* Every syscall of every process on the machine comes through
	 * here: decide from the number first. The i386 numbers overlap hot
	 * native ones (257 is openat, 45 recvfrom), so for those only a
	 * compat task goes on to the tgid lookup. */
	if (native_relevant(id)) {
		task = bpf_get_current_task_btf();
		compat = BPF_CORE_READ(task, thread_info.status) & TS_COMPAT;
		if (compat && !compat_relevant(id))
			return 0;
	} else if (compat_relevant(id)) {
		task = bpf_get_current_task_btf();
		compat = BPF_CORE_READ(task, thread_info.status) & TS_COMPAT;
		if (!compat)
			return 0;
	} else {
		return 0;
	}
	return stage1(task, regs, id, compat);
}

static __always_inline void repeat(bool forget)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct rc_bpf_pending *p;

	p = bpf_map_lookup_elem(&pending, &tid);
	if (!p)
		return;
#pragma unroll
	for (__u32 i = 0; i < RC_BPF_PENDING_RANGES; i++)
		if (i < p->n)
			emit(p->tgid, p->r[i].start, p->r[i].end, false);
	if (forget && bpf_map_delete_elem(&pending, &tid) == 0)
		__sync_fetch_and_add(&npending, -1);
}

/* After the zap, before the mmap lock is dropped: no other thread can have
 * mapped the address again yet (docs/kernel-facts.md: ~45 in 100000 reuses beat
 * the exit hook). */
SEC("tp_btf/mmap_lock_released")
int BPF_PROG(rc_mmap_lock_released, struct mm_struct *mm, bool write)
{
	if (!npending)
		return 0;
	repeat(false);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(rc_sys_exit, struct pt_regs *regs, long ret)
{
	if (!npending)
		return 0;
	repeat(true);
	return 0;
}

/*
 * The fentry way: stages 1 and 3 on the entry points of the decoded calls
 * alone, so that no other syscall runs a program (sys_enter/sys_exit
 * programs put every syscall of the machine on the tracing path). The
 * loaders attach either these or rc_sys_enter/rc_sys_exit, never both
 * (bpf_kernel.c:rc_bpf_fit_attach). An x32 call reaches the same
 * __x64_sys_ functions (all the calls below are "common" in
 * syscall_64.tbl); an int $0x80 call reaches the __ia32_ ones, each
 * recorded as everything, as rc_sys_enter records every decoded compat
 * call. The fexit program is stage 3: after the call, whatever it returns.
 */
#define RC_FENTRY_NATIVE(call, nr)					\
	SEC("fentry/__x64_sys_" #call)					\
	int BPF_PROG(rc_fe_##call, struct pt_regs *regs)		\
	{								\
		return stage1(bpf_get_current_task_btf(), regs, nr,	\
			      false);					\
	}								\
	SEC("fexit/__x64_sys_" #call)					\
	int BPF_PROG(rc_fx_##call)					\
	{								\
		return stage3();					\
	}

#define RC_FENTRY_IA32(func)						\
	SEC("fentry/__ia32_" #func)					\
	int BPF_PROG(rc_fe32_##func)					\
	{								\
		return stage1(bpf_get_current_task_btf(), NULL, 0,	\
			      true);					\
	}								\
	SEC("fexit/__ia32_" #func)					\
	int BPF_PROG(rc_fx32_##func)					\
	{								\
		return stage3();					\
	}

static __always_inline int stage3(void)
{
	if (npending)
		repeat(true);
	return 0;
}

RC_FENTRY_NATIVE(mmap, NR_mmap)
RC_FENTRY_NATIVE(munmap, NR_munmap)
RC_FENTRY_NATIVE(brk, NR_brk)
RC_FENTRY_NATIVE(mremap, NR_mremap)
RC_FENTRY_NATIVE(madvise, NR_madvise)
RC_FENTRY_NATIVE(shmat, NR_shmat)
RC_FENTRY_NATIVE(shmdt, NR_shmdt)
RC_FENTRY_NATIVE(truncate, NR_truncate)
RC_FENTRY_NATIVE(ftruncate, NR_ftruncate)
RC_FENTRY_NATIVE(remap_file_pages, NR_remap_file_pages)
RC_FENTRY_NATIVE(fallocate, NR_fallocate)
RC_FENTRY_NATIVE(process_madvise, NR_process_madvise)

/* The i386 table's entry points of the NR32_ calls above (syscall_32.tbl;
 * the same names on 6.1 and 6.18). */
RC_FENTRY_IA32(sys_brk)
RC_FENTRY_IA32(compat_sys_ia32_mmap)		/* old_mmap */
RC_FENTRY_IA32(sys_munmap)
RC_FENTRY_IA32(compat_sys_truncate)
RC_FENTRY_IA32(compat_sys_ftruncate)
RC_FENTRY_IA32(compat_sys_ipc)
RC_FENTRY_IA32(sys_mremap)
RC_FENTRY_IA32(sys_mmap_pgoff)			/* mmap2 */
RC_FENTRY_IA32(sys_ia32_truncate64)
RC_FENTRY_IA32(sys_ia32_ftruncate64)
RC_FENTRY_IA32(sys_madvise)
RC_FENTRY_IA32(sys_remap_file_pages)
RC_FENTRY_IA32(sys_ia32_fallocate)
RC_FENTRY_IA32(compat_sys_shmat)
RC_FENTRY_IA32(sys_shmdt)
RC_FENTRY_IA32(sys_process_madvise)

/* io_uring IORING_OP_MADVISE runs in an io-wq worker without a syscall of
 * its own: publish at submission (before the worker can run it) and at
 * completion (after it). A thread that touches the range between the two is
 * racing with its own in-flight request. */
static __always_inline void uring_madvise(struct io_kiocb *req)
{
	struct io_madvise ma;
	struct rc_bpf_range r;
	struct task_struct *task;
	__u8 opcode = 0;
	__u32 tgid;

	if (bpf_probe_read_kernel(&opcode, sizeof(opcode), &req->opcode) ||
	    opcode != IORING_OP_MADVISE)
		return;
	task = bpf_get_current_task_btf();
	tgid = monitored(task);
	if (!tgid)
		return;
	if (bpf_probe_read_kernel(&ma, sizeof(ma), &req->cmd)) {
		everything(&r);
		count_cause(EV_URING);
	} else {
		if (advice_harmless(ma.advice))
			return;
		range_of(&r, ma.addr, ma.len);
	}
	emit(tgid, r.start, r.end, false);
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(rc_uring_submit, struct io_kiocb *req)
{
	uring_madvise(req);
	return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(rc_uring_complete, struct io_ring_ctx *rctx, void *req,
	     struct io_uring_cqe *cqe)
{
	if (req)
		uring_madvise((struct io_kiocb *)req);
	return 0;
}

/* A page of a watched file leaves the page cache: truncate, hole punch or
 * MADV_REMOVE, by this process or any other. In-process, the files entry
 * says where we map the file, so the page's addresses are published; the
 * node variant does not know that and publishes everything of each
 * watcher. */
SEC("tp_btf/mm_filemap_delete_from_page_cache")
int BPF_PROG(rc_filemap_delete, struct folio *folio)
{
	struct rc_bpf_file_key key = {};
	rc_file_t *f;
	struct inode *host;
	__u64 index;

	if (!nfiles)
		return 0;
	host = BPF_CORE_READ(folio, mapping, host);
	if (!host)
		return 0;
	key.ino = BPF_CORE_READ(host, i_ino);
	key.dev = BPF_CORE_READ(host, i_sb, s_dev);
	f = bpf_map_lookup_elem(&files, &key);
	if (!f)
		return 0;
	index = BPF_CORE_READ(folio, index);
#ifdef RC_NODE
#pragma unroll
	for (int i = 0; i < RC_BPF_NODE_FILE_WATCHERS; i++) {
		struct rc_bpf_node_watcher *w = &f->w[i];

		/* A large folio may start before the watched range. */
		if (!w->tgid || index + 512 <= w->pgoff_lo ||
		    index >= w->pgoff_hi)
			continue;
		emit(w->tgid, 0, ~0ULL, false);
		count_cause(EV_FILEMAP);
	}
#else
	{
		struct rc_bpf_range r[RC_BPF_FILE_BASES];
		int n = file_ranges(f, index, index + folio_pages(folio), r,
				    RC_BPF_FILE_BASES);

		if (n < 0) {
			emit(f->tgid, 0, ~0ULL, true);
			count_cause(EV_FILEMAP);
		}
#pragma unroll
		for (int i = 0; i < RC_BPF_FILE_BASES; i++)
			if (i < n)
				emit(f->tgid, r[i].start, r[i].end, true);
	}
#endif
	return 0;
}

#ifdef RC_NODE
/* A client's last thread exits: stop routing its tgid (and mm) at once,
 * before the tgid can be reused. Programs may only look up in a
 * map-in-map, so the daemon drops procs[{tgid, *}] when the client's pidfd
 * reports the exit. When the daemon itself exits (SIGKILL included: this
 * runs before exit_files() closes its links), every client gets DEAD. */
/* The tracepoint's group_dead argument is new (6.16); before it the event
 * has the task alone. do_exit() decrements signal->live before the event
 * on every kernel, so the last thread reads 0 (two threads that exit at
 * once may both read it: the deletes below are idempotent). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(rc_proc_exit, struct task_struct *task)
{
	__u32 tgid;
	rc_proc_t *p;
	__u64 mm;

	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	tgid = BPF_CORE_READ(task, tgid);
	if (daemon_tgid && tgid == daemon_tgid) {
		tombstone(0, ~0u);
		return 0;
	}
	p = bpf_map_lookup_elem(&procs_state, &tgid);
	if (!p)
		return 0;
	mm = p->mm;
	if (mm)
		bpf_map_delete_elem(&mms, &mm);
	bpf_map_delete_elem(&procs_state, &tgid);
	return 0;
}
#endif
