/* SPDX-License-Identifier: MIT */
/*
 * The eBPF monitor backend: BPF programs on syscall and mm tracepoints
 * (src/monitor/bpf/rc_monitor.bpf.c) push every range this process is about
 * to change into a per-process BPF ring buffer, synchronously, inside the
 * changing thread. The hit path's generation word is the ring's producer
 * position, which the kernel maps read-only; ->pull() drains the ring into
 * the monitor's queue. See docs/monitor-bpf.md.
 *
 * Lifetime: the programs are loaded and attached by ->start() and destroyed
 * by ->stop(), because attached programs tax every process on the machine:
 * syscall tracepoints every syscall, fentry programs (where the kernel
 * allows them, bpf_kernel.c:rc_bpf_fit) the decoded calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/types.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/membarrier.h>

#include "../base/log.h"
#include "../base/clock.h"
#include "../base/env.h"
#include "../base/fork.h"
#include "backend.h"
#include "bpf_files.h"
#include "../kernel/bpf_kernel.h"
#include "ring.h"
#include "../kernel/vma.h"
#include "../abi/rc_bpf_abi.h"
#include "rc_monitor.skel.h"

#define RC_PAGE 4096u
/* Every "unavailable" line ends with this: the tool explains the
 * machine's settings (capabilities, sysctls, BTF, lockdown) in full. */
#define RC_BPF_SEE_INFO "; regcache-info shows why"

/* The one instance (the monitor is process-wide). Fields are written by
 * ->start()/->stop()/->forked() under the monitor lock; ->pull() also runs
 * under it; ->watch() takes files.lock. */
static struct bpf_backend {
	struct rc_monitor_bpf *skel;
	int ring_fd;
	struct rc_vma_source vmas;	/* for ->watch() */
	int null_fd;		/* replaces inherited link fds in a child */
	__u32 tgid;		/* global tgid, as the programs see it */
	size_t page;
	struct rc_ring ring;	/* the process's ring; .gen is the generation */
	uint64_t drops_seen;
	bool file_hook;		/* page-cache removals are seen */
	bool ignore_drops;	/* test only: rely on the headroom alone */
	struct rc_bpf_files files;	/* ->watch() of file mappings */
	struct rc_bpf_fit fit;	/* how the syscall stages attach, and why */
} ebpf = {
	.ring_fd = -1,
	.vmas = { .maps_fd = -1 },
	.null_fd = -1,
	.files = RC_BPF_FILES_INIT,
};


/*
 * VMA facts: the last few VMAs that ->watch() found private, anonymous and
 * of base pages (nothing to subscribe to), each with a generation at which
 * it was still known to be one. Most misses land in a VMA an earlier miss
 * looked up already; the lookup (PROCMAP_QUERY, ~0.5 us) is paid again only
 * once the mappings there may have changed.
 *
 * Why a fact holds while its generation is current: [start, end) stops
 * being private anonymous memory of base pages only by being unmapped or
 * replaced (munmap, mmap MAP_FIXED, mremap from or onto it, brk shrinking,
 * shmat SHM_REMAP, remap_file_pages). The programs record each of these
 * for a range covering the change, or as "everything", and one of the
 * records (stage 2, in the mmap lock, or stage 3, at exit) is reserved
 * after the change is made: the producer position then moves past every
 * value read before the change. A fact's generation is read before the
 * lookup that found it, so a change that lookup did not see moves the
 * generation past the fact's. A mapping made in a hole is not recorded,
 * but changes no byte of [start, end); mprotect and the harmless madvise
 * advice change permissions or hints, never what backs the range. A change
 * made while a miss uses a fact is the same race as with a fresh lookup,
 * stale the moment it returns: the change's record comes after the cache's
 * pending position and taints the registration (docs/design.md, rule 2).
 *
 * ->pull() sees every record: when none from a fact's generation on
 * overlaps the fact, it carries the fact to the pulled position, so that
 * unmaps elsewhere (free() returning memory) do not throw it away.
 *
 * Writers take facts.lock (alone, or inside the monitor lock in ->pull())
 * and bracket their changes with facts.version (odd meanwhile); a miss
 * reads without the lock, as a seqlock reader, and looks the VMA up when it
 * raced with a writer.
 */
#define RC_VMA_FACTS 4
static struct {
	pthread_mutex_t lock;
	unsigned next;
	_Atomic uint32_t version;
	struct vma_fact {
		_Atomic uint64_t start, end, gen;
		_Atomic bool valid;
	} f[RC_VMA_FACTS];
} facts = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Under facts.lock. */
static void facts_write_begin(void)
{
	rc_store_relaxed(&facts.version, rc_load_relaxed(&facts.version) + 1);
	atomic_thread_fence(memory_order_release);
}

static void facts_write_end(void)
{
	rc_store_release(&facts.version, rc_load_relaxed(&facts.version) + 1);
}

/* Under facts.lock. */
static void facts_forget_all(void)
{
	facts_write_begin();
	for (unsigned i = 0; i < RC_VMA_FACTS; i++)
		rc_store_relaxed(&facts.f[i].valid, false);
	facts_write_end();
}

/* The end of a VMA known to be private anonymous memory of base pages that
 * contains @addr, or 0 (also when a writer got in the way). */
static uintptr_t facts_lookup(uintptr_t addr)
{
	uint64_t gen = rc_load_acquire(ebpf.ring.gen);
	uint32_t version = rc_load_acquire(&facts.version);
	uintptr_t end = 0;

	if (version & 1)
		return 0;
	for (unsigned i = 0; i < RC_VMA_FACTS; i++) {
		struct vma_fact *f = &facts.f[i];

		if (rc_load_relaxed(&f->valid) &&
		    rc_load_relaxed(&f->gen) == gen &&
		    rc_load_relaxed(&f->start) <= addr &&
		    addr < rc_load_relaxed(&f->end)) {
			end = (uintptr_t)rc_load_relaxed(&f->end);
			break;
		}
	}
	atomic_thread_fence(memory_order_acquire);
	return rc_load_relaxed(&facts.version) == version ? end : 0;
}

/* A lookup that began at generation @gen found [start, end) private,
 * anonymous and of base pages. */
static void facts_add(uint64_t start, uint64_t end, uint64_t gen)
{
	struct vma_fact *f;

	pthread_mutex_lock(&facts.lock);
	f = &facts.f[facts.next++ % RC_VMA_FACTS];
	facts_write_begin();
	rc_store_relaxed(&f->start, start);
	rc_store_relaxed(&f->end, end);
	rc_store_relaxed(&f->gen, gen);
	rc_store_relaxed(&f->valid, true);
	facts_write_end();
	pthread_mutex_unlock(&facts.lock);
}

/* The first warning libbpf printed during start() (usually the cause), for
 * the info line that says why the backend is unavailable. */
static char libbpf_last[160];

/* libbpf's messages (verifier logs on failure) go to our log at debug level
 * instead of the application's stderr. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap)
{
	char buf[256];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	if (n && !libbpf_last[0]) {
		/* Keep one line: a verifier log follows its header. */
		buf[strcspn(buf, "\n")] = 0;
		n = strnlen(buf, sizeof(libbpf_last) - 1);
		memcpy(libbpf_last, buf, n);
		libbpf_last[n] = 0;
	}
	rc_debug("libbpf: %s", buf);
	return 0;
}

/* In a forked child, drop our references to the parent's links, programs
 * and maps at once: otherwise a child that never calls regcache again would
 * keep the parent's programs attached (taxing every syscall) after the
 * parent stops. dup3 over each fd keeps libbpf's bookkeeping valid; the fd
 * now names /dev/null and ->forked() closes it. A raw clone() skips this
 * handler; its references go at its exit, exec or next regcache call. */
static void null_over(int fd)
{
	/* dup3, not dup2: dup2 clears FD_CLOEXEC, and a child that forks and
	 * execs a helper would leak every one of these into it. */
	if (fd >= 0 && fd != ebpf.null_fd)
		dup3(ebpf.null_fd, fd, O_CLOEXEC);
}

static void atfork_child(void)
{
	struct bpf_program *prog;
	struct bpf_map *map;
	struct bpf_link **links;

	if (!ebpf.skel || ebpf.null_fd < 0)
		return;
	links = (struct bpf_link **)&ebpf.skel->links;
	for (size_t i = 0; i < sizeof(ebpf.skel->links) / sizeof(*links); i++)
		if (links[i])
			null_over(bpf_link__fd(links[i]));
	bpf_object__for_each_program(prog, ebpf.skel->obj)
		null_over(bpf_program__fd(prog));
	bpf_object__for_each_map(map, ebpf.skel->obj)
		null_over(bpf_map__fd(map));
	null_over(ebpf.ring_fd);
}

/* A fork while another thread is inside rc_bpf_files_watch() would leave
 * its lock locked forever in the child (the owner does not exist there),
 * and the child's first watch of a shared mapping would hang: hold it
 * across fork.
 * fork.h takes it after the monitor lock: nothing takes the monitor lock
 * while holding files.lock. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&ebpf.files.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&ebpf.files.lock);
}

static void atfork_child_unlock(void)
{
	pthread_mutex_unlock(&ebpf.files.lock);
	/* Another thread may have held it; the facts are the parent's. */
	pthread_mutex_init(&facts.lock, NULL);
	rc_store_relaxed(&facts.version, 0);
	facts_forget_all();
	atfork_child();
}

static const struct rc_fork_handlers bpf_fork = {
	atfork_prepare, atfork_parent, atfork_child_unlock
};

/* Release everything start() made; safe on a partial start. */
static void teardown(bool in_child)
{
	if (ebpf.skel) {
		if (in_child) {
			/* The links belong to the parent: only close our
			 * fds, never detach through a shared object. */
			struct bpf_link **links =
				(struct bpf_link **)&ebpf.skel->links;

			for (size_t i = 0;
			     i < sizeof(ebpf.skel->links) / sizeof(*links); i++) {
				if (!links[i])
					continue;
				/* A disconnected link's fd is not closed by
				 * libbpf: close it here. */
				if (bpf_link__fd(links[i]) >= 0)
					close(bpf_link__fd(links[i]));
				bpf_link__disconnect(links[i]);
			}
		}
		rc_monitor_bpf__destroy(ebpf.skel);
		ebpf.skel = NULL;
	}
	/* In a child the ring was forgotten by bpf_forked(): its consumer
	 * and data pages were MADV_DONTFORK, and the addresses may already
	 * hold the child's own memory. */
	if (!in_child)
		rc_ring_unmap(&ebpf.ring);
	if (ebpf.ring_fd >= 0)
		close(ebpf.ring_fd);
	rc_vma_source_close(&ebpf.vmas);
	pthread_mutex_lock(&facts.lock);
	facts_forget_all();
	pthread_mutex_unlock(&facts.lock);
	if (ebpf.null_fd >= 0)
		close(ebpf.null_fd);
	rc_bpf_files_close(&ebpf.files);
	ebpf.ring_fd = ebpf.null_fd = -1;
	ebpf.drops_seen = 0;
}

static const char *bpf_errno_hint(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return "not permitted: loading BPF needs CAP_BPF and "
		       "CAP_PERFMON (or CAP_SYS_ADMIN), and "
		       "kernel.unprivileged_bpf_disabled/lockdown may forbid it";
	case ENOMEM:
		return "out of memory (loading the programs parses the "
		       "kernel's BTF, several MiB: is RLIMIT_AS or RLIMIT_DATA "
		       "too small?)";
	case ENOENT:
	case EINVAL:
	case 524: /* ENOTSUPP, kernel-internal */
	case EOPNOTSUPP:
		return "the kernel lacks a needed tracepoint or BPF feature "
		       "(tp_btf programs, ring buffers, BTF)";
	}
	return strerror(err);
}

/* libbpf reports any failure to load the kernel's BTF as ESRCH ("failed
 * to find valid kernel BTF"), out of memory included. Parse it again
 * ourselves, on this failure path only, to tell the two apart. */
static bool out_of_memory_for_btf(void)
{
	struct btf *btf = btf__parse("/sys/kernel/btf/vmlinux", NULL);
	int err = btf ? 0 : errno;

	btf__free(btf);
	return err == ENOMEM;
}

/* Learn the tgid and mm the kernel reports for this process. getpid() is
 * the pid in our PID namespace, while the programs see the global tgid
 * (bpf_get_current_pid_tgid); keying the maps by getpid() inside a
 * container would make them watch whichever process holds that global
 * tgid. One madvise(0, 0, cookie) with a random cookie (it fails with
 * EINVAL or changes nothing) is recorded by the sys_enter program. */
static int learn_tgid(__u64 *mm)
{
	__u64 cookie = 0, tgid;

	while (!cookie)
		if (getrandom(&cookie, sizeof(cookie), 0) != sizeof(cookie))
			return -errno;
	__atomic_store_n(&ebpf.skel->bss->learn_cookie, cookie,
			 __ATOMIC_RELEASE);
	syscall(SYS_madvise, 0UL, 0UL, cookie);
	__atomic_store_n(&ebpf.skel->bss->learn_cookie, 0, __ATOMIC_RELEASE);
	/* The program ran in this thread, before the syscall returned. */
	tgid = __atomic_load_n(&ebpf.skel->bss->learned_tgid, __ATOMIC_ACQUIRE);
	*mm = __atomic_load_n(&ebpf.skel->bss->learned_mm, __ATOMIC_ACQUIRE);
	if (!tgid || tgid > UINT32_MAX || !*mm) {
		rc_info("BPF programs are attached but did not see the start "
			"marker syscall");
		return -ENOSYS;
	}
	if (tgid != (__u64)getpid())
		rc_debug("eBPF monitor: global tgid %" PRIu64 ", getpid() %d "
			 "(PID namespace)", (uint64_t)tgid, (int)getpid());
	ebpf.tgid = (__u32)tgid;
	return 0;
}

struct self_test_seen {
	uint64_t start, end;
	bool found;
};

static void self_test_record(void *arg, uint64_t start, uint64_t end)
{
	struct self_test_seen *s = arg;

	if (start == s->start && end == s->end)
		s->found = true;
}

/* Attach, then prove with one munmap that the programs see this process:
 * a kernel that loads the programs but never fires them must not be
 * trusted, and neither must maps keyed by the wrong tgid (the ring must
 * hold our own munmap's range, not just move). */
static int self_test(__u64 mm)
{
	struct rc_bpf_proc st;
	struct self_test_seen seen;
	uint64_t before = rc_load_acquire(ebpf.ring.gen);
	void *p = mmap(NULL, ebpf.page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	munmap(p, ebpf.page);
	seen.start = (uintptr_t)p;
	seen.end = (uintptr_t)p + ebpf.page;
	seen.found = false;
	/* Nothing of ours is cached yet: consume the test's records. */
	rc_ring_walk(&ebpf.ring, self_test_record, &seen);
	if (bpf_map_lookup_elem(bpf_map__fd(ebpf.skel->maps.procs_state),
				&ebpf.tgid, &st))
		return -errno;
	if (rc_load_acquire(ebpf.ring.gen) == before || !seen.found ||
	    st.mm != mm) {
		rc_info("BPF programs are attached but did not record this "
			"process's munmap (generation %s, range %s, mm %s)",
			rc_load_acquire(ebpf.ring.gen) == before ? "still" : "moved",
			seen.found ? "found" : "missing",
			st.mm == mm ? "matches" : "differs");
		return -ENOSYS;
	}
	/* A clone(CLONE_VM) child that is not a thread has its own tgid but
	 * changes our address space: the programs also look up the mm. */
	if (bpf_map_update_elem(bpf_map__fd(ebpf.skel->maps.mms), &st.mm,
				&ebpf.tgid, BPF_ANY))
		return -errno;
	ebpf.drops_seen = st.drops;
	return 0;
}

/* Headroom at the end of the ring, in bytes: once less is free, the
 * programs publish "everything" instead of a range. A record that then
 * fails to fit must find an unconsumed "everything" record ahead of it;
 * only records whose fill check ran before the ring crossed the threshold
 * can be normal ones: at most one per CPU and nesting level (task, softirq,
 * hardirq, NMI), 24 bytes each, plus one record of slack. Capped at half
 * the ring (reached above ~340 CPUs; beyond it the guarantee is the drop
 * counter alone). */
static void set_headroom(void)
{
	int cpus = libbpf_num_possible_cpus();
	__u64 rec = BPF_RINGBUF_HDR_SZ + sizeof(struct rc_bpf_range);
	__u64 h = rec * (4 * (__u64)(cpus > 0 ? cpus : 1024) + 2);

	if (h > RC_BPF_RING_BYTES / 2)
		h = RC_BPF_RING_BYTES / 2;
	ebpf.skel->rodata->headroom = h;
}

/* Opens the programs and fits them to this kernel: the ring's headroom,
 * the io_uring tracepoint's name, the way the syscall stages attach
 * (@want), and the page-cache hook if @file_hook. */
static int open_skeleton(enum rc_bpf_attach want, bool file_hook)
{
	int ret;

	ebpf.skel = rc_monitor_bpf__open();
	if (!ebpf.skel)
		return -errno;
	set_headroom();
	ret = rc_bpf_fit(ebpf.skel->obj, ebpf.skel->progs.rc_uring_submit,
			 ebpf.skel->progs.rc_uring_complete, want, &ebpf.fit);
	if (ret)
		return ret;
	if (!ebpf.fit.uring)
		rc_info("eBPF monitor: %s: io_uring MADVISE is not watched",
			ebpf.fit.uring_why);
	if (!file_hook)
		bpf_program__set_autoload(ebpf.skel->progs.rc_filemap_delete,
					  false);
	return 0;
}

/* Open, fit and load the programs (see open_skeleton). */
static int load_programs(enum rc_bpf_attach want)
{
	int ret = open_skeleton(want, true);

	if (ret)
		return ret;
	ret = rc_monitor_bpf__load(ebpf.skel);
	ebpf.file_hook = true;
	if (!ret)
		return 0;
	/* Without the page-cache tracepoint (its argument became a folio in
	 * 5.19) everything but shared and file mappings can still be
	 * watched: retry without it. */
	rc_monitor_bpf__destroy(ebpf.skel);
	ebpf.skel = NULL;
	if (open_skeleton(want, false) || rc_monitor_bpf__load(ebpf.skel))
		return ret;	/* the first error says more */
	ebpf.file_hook = false;
	rc_info("eBPF monitor: no usable mm_filemap_delete_from_page_cache "
		"tracepoint (%s): shared and file mappings are served "
		"uncached", strerror(-ret));
	return 0;
}

static void restore_memlock(const struct rlimit *was)
{
	struct rlimit now;

	if (!getrlimit(RLIMIT_MEMLOCK, &now) &&
	    (now.rlim_cur != was->rlim_cur || now.rlim_max != was->rlim_max) &&
	    setrlimit(RLIMIT_MEMLOCK, was))
		rc_info("cannot restore RLIMIT_MEMLOCK after loading BPF: %s",
			strerror(errno));
}

/* Free descriptors a load needs (maps, programs, links, the ring, libbpf's
 * probes): it failed with 16 free and worked with 24 on Linux 6.18
 * (tests/limits-rlimit.c); 32 leaves a margin. */
#define RC_BPF_FDS_NEEDED 32

/*
 * After a failed load, with every descriptor of ours closed again: could
 * the process not even open RC_BPF_FDS_NEEDED descriptors? libbpf's feature
 * probes take running out of descriptors for a missing kernel feature and
 * then fail the load with EINVAL, so the limit must be named here.
 */
static bool descriptors_scarce(void)
{
	int fds[RC_BPF_FDS_NEEDED];
	bool scarce = false;
	int n;

	for (n = 0; n < RC_BPF_FDS_NEEDED; n++) {
		fds[n] = open("/", O_PATH | O_CLOEXEC);
		if (fds[n] < 0) {
			scarce = errno == EMFILE || errno == ENFILE;
			break;
		}
	}
	while (n--)
		close(fds[n]);
	return scarce;
}

/* Load, attach and self-test the programs with the syscall stages
 * attached as @want says; the caller tears a failure down. Sets *@t_load
 * to the time the load ended. */
static int start_programs(enum rc_bpf_attach want, double *t_load)
{
	struct rc_bpf_proc st = { 0 };
	__u64 mm = 0;
	int ret;

	ret = load_programs(want);
	if (ret)
		return ret;
	*t_load = rc_now_ms();
	/* Before attaching: without it a forked child could not drop the
	 * parent's links, and would keep the programs attached. */
	ebpf.null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (ebpf.null_fd < 0)
		return -errno;
	ebpf.ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "rc_ring", 0, 0,
				      RC_BPF_RING_BYTES, NULL);
	if (ebpf.ring_fd < 0)
		return ebpf.ring_fd;
	ebpf.ring.page = ebpf.page;
	ret = rc_ring_map(&ebpf.ring, ebpf.ring_fd, RC_BPF_RING_BYTES);
	if (ret)
		return ret;
	ret = rc_monitor_bpf__attach(ebpf.skel);
	if (ret)
		return ret;
	/* The programs see nothing of ours until procs holds our ring. */
	ret = learn_tgid(&mm);
	if (ret)
		return ret;
	st.mm = mm;
	if (bpf_map_update_elem(bpf_map__fd(ebpf.skel->maps.procs_state),
				&ebpf.tgid, &st, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(ebpf.skel->maps.procs), &ebpf.tgid,
				&ebpf.ring_fd, BPF_ANY))
		return -errno;
	return self_test(mm);
}

static int bpf_start(struct rc_monitor *mon)
{
	libbpf_print_fn_t old_print;
	struct rlimit memlock;
	enum rc_bpf_attach want;
	const char *files_problem;
	double t0 = rc_now_ms(), t1 = t0;
	int ret;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		rc_info("eBPF monitor unavailable: no kernel BTF "
			"(/sys/kernel/btf/vmlinux)" RC_BPF_SEE_INFO);
		return -EOPNOTSUPP;
	}
	if (rc_bpf_attach_wanted(&want)) {
		rc_info("eBPF monitor unavailable: REGCACHE_BPF_ATTACH=%s is "
			"not auto, fentry or syscalls",
			rc_env_str(RC_ENV_BPF_ATTACH));
		return -EINVAL;
	}
	rc_fork_enable(RC_FORK_BPF, &bpf_fork);
	ebpf.page = sysconf(_SC_PAGESIZE);
	ebpf.tgid = 0;
	/* Tests prove that the headroom alone covers a lost record. */
	ebpf.ignore_drops = rc_env_flag(RC_ENV_BPF_IGNORE_DROPS);

	libbpf_last[0] = 0;
	old_print = libbpf_set_print(libbpf_log);
	/* libbpf raises RLIMIT_MEMLOCK to infinity on kernels without memcg
	 * accounting of BPF memory (and tries to when it cannot tell); the
	 * caches size themselves from that limit, so it is put back after
	 * the load (libbpf_set_memlock_rlim is not exported by libbpf 1.1). */
	if (getrlimit(RLIMIT_MEMLOCK, &memlock))
		memlock.rlim_cur = memlock.rlim_max = RLIM_INFINITY;
	ret = start_programs(want, &t1);
	if (ret && want == RC_BPF_ATTACH_AUTO &&
	    ebpf.fit.mode == RC_BPF_ATTACH_FENTRY) {
		/* The probe passed but the set did not: the tracepoints
		 * still do the job, at their cost. */
		char why[sizeof(libbpf_last) + 64];

		snprintf(why, sizeof(why), "%s%s%s", strerror(ret < 0 ? -ret : ret),
			 libbpf_last[0] ? ": " : "", libbpf_last);
		teardown(false);
		libbpf_last[0] = 0;
		ret = start_programs(RC_BPF_ATTACH_SYSCALLS, &t1);
		snprintf(ebpf.fit.why, sizeof(ebpf.fit.why),
			 "sys_enter/sys_exit: every syscall of the machine runs "
			 "a program, because the fentry programs failed (%s)",
			 why);
	}
	if (ret)
		goto fail;
	libbpf_set_print(old_print);
	restore_memlock(&memlock);

	rc_vma_source_open(&ebpf.vmas, RC_ENV_BPF_NO_PROCMAP_QUERY);
	files_problem = rc_bpf_files_open(&ebpf.files);
	if (ebpf.file_hook && files_problem)
		rc_info("eBPF monitor: %s: some shared and file mappings are "
			"served uncached", files_problem);
	mon->caps = (struct rc_monitor_caps){
		.can_cache = true,
		.synchronous = true,
	};
	mon->backend = &ebpf;
	/* From here the hit path reads the producer position. The kernel
	 * advances it (smp_store_release) when a stage reserves a record,
	 * before the change it describes is made. */
	mon->gen = ebpf.ring.gen;
	rc_info("eBPF monitor: attach mode %s: %s",
		rc_bpf_attach_name(ebpf.fit.mode), ebpf.fit.why);
	rc_info("eBPF monitor: loaded in %.1f ms, attached and self-tested in "
		"%.1f ms", t1 - t0, rc_now_ms() - t1);
	return 0;
fail:
	libbpf_set_print(old_print);
	restore_memlock(&memlock);
	if (ret > 0)
		ret = -ret;
	if (!ret)
		ret = -EINVAL;
	if (ret == -ESRCH && out_of_memory_for_btf())
		ret = -ENOMEM;
	teardown(false);
	if (ret != -EMFILE && descriptors_scarce())
		ret = -EMFILE;
	if (ret == -EOPNOTSUPP && want == RC_BPF_ATTACH_FENTRY) {
		rc_info("eBPF monitor unavailable: %s" RC_BPF_SEE_INFO,
			ebpf.fit.why);
		return ret;
	}
	rc_info("eBPF monitor unavailable: %s%s%s" RC_BPF_SEE_INFO,
		bpf_errno_hint(-ret), libbpf_last[0] ? "; libbpf said: " : "",
		libbpf_last);
	return ret;
}

/* One pull's view of the records: everything it publishes is applied by
 * every cache in one sync, so within a pull one "everything" subsumes all
 * other records and a record equal to the one before it adds nothing. */
struct pull_batch {
	struct rc_monitor *mon;
	bool everything;
	uint64_t last_start, last_end;	/* last range published */
	unsigned facts_hit;		/* bit i: a record overlaps facts.f[i] */
};

static void pull_record(void *arg, uint64_t start, uint64_t end)
{
	struct pull_batch *b = arg;

	if (b->everything)
		return;
	if (start == 0 && end >= UINTPTR_MAX) {
		/* Published once, at the end of the pull. */
		b->everything = true;
		return;
	}
	for (unsigned i = 0; i < RC_VMA_FACTS; i++)
		if (start < rc_load_relaxed(&facts.f[i].end) &&
		    rc_load_relaxed(&facts.f[i].start) < end)
			b->facts_hit |= 1u << i;
	/* The programs record each change up to three times (before it,
	 * under the mmap lock, after it); back to back, publish it once. */
	if (start == b->last_start && end == b->last_end)
		return;
	b->last_start = start;
	b->last_end = end;
	rc_monitor_publish(b->mon, (uintptr_t)start,
			   end > UINTPTR_MAX ? UINTPTR_MAX : (uintptr_t)end);
}

/*
 * Drain the ring into the monitor's queue. The caller read the generation
 * (the producer position) before calling; every record below it is
 * published before we return, so adopting that generation afterwards is
 * safe. Under the monitor lock: single consumer, no allocation.
 */
static void bpf_pull(struct rc_monitor *mon)
{
	uint64_t cons = rc_load_relaxed(ebpf.ring.cons), prod;
	struct pull_batch b = { .mon = mon, .last_start = 1, .last_end = 0 };
	struct rc_bpf_proc st;

	/* Held across the walk: a fact added meanwhile could miss a record
	 * that was checked before it existed. The walk reads the producer
	 * position once and returns it: every record in [cons, prod) was
	 * checked. */
	pthread_mutex_lock(&facts.lock);
	prod = rc_ring_walk(&ebpf.ring, pull_record, &b);
	/* A record that did not fit: the producer position was already past
	 * every adopted generation when it was lost (the ring was full), so
	 * this pull runs for it; treat it as "everything" (design rule 5). */
	if (!bpf_map_lookup_elem(bpf_map__fd(ebpf.skel->maps.procs_state),
				 &ebpf.tgid, &st) &&
	    st.drops != ebpf.drops_seen && !ebpf.ignore_drops) {
		rc_debug("eBPF ring overflowed (%" PRIu64 " records lost): "
			 "invalidating everything",
			 (uint64_t)(st.drops - ebpf.drops_seen));
		ebpf.drops_seen = st.drops;
		b.everything = true;
	}
	if (b.everything)
		rc_monitor_publish_all(mon);
	/* Every record in [cons, prod) was checked against the facts. */
	facts_write_begin();
	for (unsigned i = 0; i < RC_VMA_FACTS; i++) {
		struct vma_fact *f = &facts.f[i];
		uint64_t gen = rc_load_relaxed(&f->gen);

		if (b.everything || (b.facts_hit & (1u << i)))
			rc_store_relaxed(&f->valid, false);
		else if (rc_load_relaxed(&f->valid) && cons <= gen && gen <= prod)
			rc_store_relaxed(&f->gen, prod);
	}
	facts_write_end();
	pthread_mutex_unlock(&facts.lock);
}

static int vma_query(uintptr_t addr, struct rc_procmap_query *q)
{
	return rc_vma_query(&ebpf.vmas, addr, q);
}

/*
 * Can every change to [start, end) be seen? Private anonymous memory: yes,
 * only this process changes it, through the hooked calls. Shared or
 * file-backed memory: yes once its inode is in the `files` map (another
 * process can only take pages away by truncating or punching the file,
 * which removes them from the page cache), on filesystems where that inode
 * is the page-cache inode (bpf_files.c). Private file mappings: no, a
 * truncation by another process discards their copy-on-write pages, which
 * were never in the page cache. Huge pages (hugetlbfs): no, their
 * truncation path is not hooked.
 */
static int bpf_watch(struct rc_monitor *mon, uintptr_t start, uintptr_t end)
{
	uintptr_t addr = start;

	(void)mon;
	while (addr < end) {
		struct rc_procmap_query q;
		uintptr_t known_end = facts_lookup(addr);
		uint64_t gen;
		int ret;

		if (known_end) {
			addr = known_end;
			continue;
		}
		/* Before the lookup: see the VMA facts. */
		gen = rc_load_acquire(ebpf.ring.gen);
		ret = vma_query(addr, &q);
		if (ret == -ENOENT)
			break;	/* no VMA above: pinning will fail */
		if (ret)
			return ret;
		if (q.vma_start >= end)
			break;
		if (q.vma_page_size != RC_PAGE)
			return -EOPNOTSUPP;
		if (q.inode) {
			/* Private file mapping: truncation by any process
			 * throws its copy-on-write pages away without a page
			 * leaving the page cache, so nothing would tell us. */
			if (!(q.vma_flags & RC_PROCMAP_VMA_SHARED))
				return -EOPNOTSUPP;
			if (!ebpf.file_hook)
				return -EOPNOTSUPP;
			ret = rc_bpf_files_watch(
				&ebpf.files,
				bpf_map__fd(ebpf.skel->maps.files),
				&ebpf.skel->bss->nfiles, ebpf.tgid, &q, start,
				end);
			if (ret)
				return ret;
		} else if (!(q.vma_flags & RC_PROCMAP_VMA_SHARED)) {
			facts_add(q.vma_start, q.vma_end, gen);
		}
		addr = q.vma_end;
	}
	return 0;
}

static void bpf_forked(struct rc_monitor *mon)
{
	/* Another thread of the child may still read the old generation
	 * pointer: turn that page into a private zero page instead of
	 * unmapping it (one page per fork is leaked, on purpose). */
	rc_ring_forget_in_child(&ebpf.ring);
	mon->gen = &mon->queue_head;
	teardown(true);
}

static void bpf_stop(struct rc_monitor *mon)
{
	double t0 = rc_now_ms();

	mon->gen = &mon->queue_head;
	teardown(false);
	rc_debug("eBPF monitor: detached and unloaded in %.1f ms",
		 rc_now_ms() - t0);
}

/*
 * A thread is about to sleep in rc_monitor_wait() (docs/monitor-bpf.md,
 * Waiting). The programs read wake_waiter after they reserve a record
 * (which moves the generation); membarrier() then puts a full barrier into
 * every thread of this mm between the two: a program that still read 0
 * reserved its record before that barrier, so the waiter's later look at
 * the generation sees it; one that reads 1 wakes the ring's poll.
 */
static int bpf_wake(struct rc_monitor *mon, bool on, int *fd)
{
	long ret;

	(void)mon;
	if (!ebpf.skel || !ebpf.skel->bss)
		return -EOPNOTSUPP;
	if (!on) {
		__atomic_store_n(&ebpf.skel->bss->wake_waiter, 0,
				 __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_store_n(&ebpf.skel->bss->wake_waiter, 1, __ATOMIC_SEQ_CST);
	ret = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	if (ret && errno == EPERM &&
	    !syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		     0, 0))
		ret = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
			      0, 0);
	if (ret) {
		ret = -errno;
		__atomic_store_n(&ebpf.skel->bss->wake_waiter, 0,
				 __ATOMIC_RELAXED);
		rc_info("eBPF monitor: membarrier() failed (%s): a sleeper "
			"cannot be woken; waiting is unsupported",
			strerror((int)-ret));
		return -EOPNOTSUPP;
	}
	*fd = ebpf.ring_fd;
	return 0;
}

const struct rc_monitor_ops rc_monitor_bpf_ops = {
	.name = "bpf",
	.start = bpf_start,
	.watch = bpf_watch,
	.pull = bpf_pull,
	.forked = bpf_forked,
	.stop = bpf_stop,
	.wake = bpf_wake,
};
