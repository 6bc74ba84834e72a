/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <linux/bpf.h>
#include <linux/userfaultfd.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "helpers.h"

int t_failures;

__attribute__((constructor)) static void tests_start(void)
{
	t_crash_report_install();
}

/* Can this process load tracing BPF programs? The smallest tracepoint
 * program; only EPERM/EACCES mean "not here". */
static int bpf_probe(void)
{
	struct bpf_insn insns[] = {
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },	/* r0 = 0 */
		{ .code = 0x95 },				/* exit */
	};
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_TRACEPOINT;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (uintptr_t)"GPL";
	fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Can this process create a userfaultfd, by syscall or /dev/userfaultfd? */
static int uffd_probe(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1);
	int err = errno;

	if (fd < 0) {
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
			close(dev);
		}
	}
	if (fd < 0)
		return -err;
	close(fd);
	return 0;
}

bool t_monitor_is(const char *name)
{
	return !strcmp(regcache_monitor_name(), name);
}

/* Why the wanted monitor cannot run in this process, or NULL when it
 * could (then not getting it is a failure). */
static const char *unavailable(const char *want, char *why, size_t n)
{
	int err;

	if (!strcmp(want, "bpf")) {
		err = bpf_probe();
		if (err == -EPERM || err == -EACCES) {
			snprintf(why, n, "this process may not load BPF "
				 "programs (%s); run as root or with "
				 "CAP_BPF+CAP_PERFMON", strerror(-err));
			return why;
		}
	} else if (!strcmp(want, "userfaultfd")) {
		const char *pre = getenv("LD_PRELOAD");

		if (pre && strstr(pre, "vgpreload")) {
			snprintf(why, n, "under valgrind the userfaultfd "
				 "monitor refuses to start");
			return why;
		}
		err = uffd_probe();
		if (err) {
			snprintf(why, n, "this process cannot create a "
				 "userfaultfd (%s: seccomp, "
				 "vm.unprivileged_userfaultfd or an old kernel)",
				 strerror(-err));
			return why;
		}
	}
	return NULL;
}

void t_monitor_only(const char *name)
{
	setenv("REGCACHE_MONITOR", name, 1);
}

void t_monitor_skip_unavailable(const char *name)
{
	char why[256];

	if (unavailable(name, why, sizeof(why))) {
		printf("SKIP: monitor \"%s\" unavailable: %s\n", name, why);
		exit(T_EXIT_SKIP);
	}
}

void t_monitor_require(void)
{
	const char *want = getenv("REGCACHE_MONITOR");
	char why[256];

	if (!want || !*want || !strcmp(want, "auto") || t_monitor_is(want))
		return;
	if (unavailable(want, why, sizeof(why))) {
		printf("SKIP: monitor \"%s\" unavailable: %s\n", want, why);
		exit(T_EXIT_SKIP);
	}
	fprintf(stderr, "monitor is \"%s\", expected \"%s\", which should "
		"work here; run with REGCACHE_LOG=info for why\n",
		regcache_monitor_name(), want);
	exit(T_EXIT_FAIL);
}

int t_slowdown(void)
{
	const char *env = getenv("REGCACHE_TEST_SLOWDOWN");
	long slowdown = env ? strtol(env, NULL, 10) : 1;

	return slowdown > 1 && slowdown < 1000 ? (int)slowdown : 1;
}

int t_scale(long n)
{
	n /= t_slowdown();
	return n > 0 ? (int)n : 1;
}

void t_ring_init(struct io_uring *ring)
{
	int ret = io_uring_queue_init(8, ring, 0);

	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		exit(T_EXIT_FAIL);
	}
}

void t_uring_require_registrable(void *buf, size_t len, const char *what)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct io_uring ring;
	int ret;

	t_ring_init(&ring);
	ret = io_uring_register_buffers(&ring, &iov, 1);
	if (ret == 0)
		io_uring_unregister_buffers(&ring);
	io_uring_queue_exit(&ring);
	if (ret == -EOPNOTSUPP) {
		printf("SKIP: io_uring on this kernel refuses to register %s "
		       "(EOPNOTSUPP: kernels such as 6.1 take anonymous, shmem "
		       "and hugetlbfs memory only; newer ones leave it to "
		       "pin_user_pages); the verbs tests on an RDMA device "
		       "cover it\n", what);
		exit(T_EXIT_SKIP);
	}
	T_REQUIRE(ret == 0);
}

struct regcache *t_uring_cache(struct io_uring *ring, unsigned flags,
			       size_t max_regions, size_t max_bytes)
{
	struct regcache_params p = {
		.flags = flags,
		.max_regions = max_regions,
		.max_bytes = max_bytes,
	};
	struct regcache *c;
	int ret = regcache_uring_create(ring, &p, &c);

	if (ret) {
		fprintf(stderr, "regcache_uring_create: %s\n", strerror(-ret));
		exit(T_EXIT_FAIL);
	}
	return c;
}

struct regcache *t_monitor_cache(struct io_uring *ring)
{
	struct regcache *c;

	t_ring_init(ring);
	c = t_uring_cache(ring, 0, 0, 0);
	t_monitor_require();
	return c;
}

static unsigned char pattern_byte(unsigned seed, size_t i)
{
	return (unsigned char)((seed * 131u + i * 7u + (i >> 8)) | 1u);
}

/*
 * The DMA oracle around a READ_FIXED from fds[0] into @buf. Before: a pipe
 * holding @len bytes of @byte(@seed, i), and the application's view
 * cleared. After the read returned @ret: the pipe closed, a short or
 * failed read fails the test, and whether the application sees every byte.
 */
static void oracle_fill(int fds[2], unsigned char (*byte)(unsigned, size_t),
			unsigned seed, void *buf, size_t len)
{
	static unsigned char src[65536];

	T_REQUIRE(len <= sizeof(src));
	T_REQUIRE(pipe(fds) == 0);
	fcntl(fds[0], F_SETPIPE_SZ, 1 << 17);
	for (size_t i = 0; i < len; i++)
		src[i] = byte(seed, i);
	T_REQUIRE(write(fds[1], src, len) == (ssize_t)len);
	/* The application's view starts with something else. */
	memset(buf, 0, len);
}

static bool oracle_seen(int fds[2], int ret,
			unsigned char (*byte)(unsigned, size_t), unsigned seed,
			const void *buf, size_t len)
{
	const unsigned char *dst = buf;

	close(fds[0]);
	close(fds[1]);
	if (ret != (int)len) {
		fprintf(stderr, "READ_FIXED returned %d (%s), expected %zu\n",
			ret, ret < 0 ? strerror(-ret) : "short", len);
		exit(T_EXIT_FAIL);
	}
	for (size_t i = 0; i < len; i++)
		if (dst[i] != byte(seed, i))
			return false;
	return true;
}

void t_die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(T_EXIT_FAIL);
}

/*
 * How often a READ_FIXED the kernel canceled before it ran is submitted
 * again. Where pipes lack FMODE_NOWAIT (6.1; not 6.18) every pipe read goes
 * to an io-wq worker, and while signals keep arriving the kernel may fail
 * to start a thread's first worker and cancel the queued read (-ECANCELED,
 * nothing read: tools/repro/uring-pipe-signals.c, 21 of 500 under a storm).
 * That is no answer about the buffer, so the oracle asks again.
 */
#define T_CANCELED_RESUBMITS 100

bool t_dma_visible(struct io_uring *ring, struct regcache_region *region,
		   void *buf, size_t len, unsigned seed)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int fds[2], ret, tries = 0;

	oracle_fill(fds, pattern_byte, seed, buf, len);
	do {
		sqe = io_uring_get_sqe(ring);
		T_REQUIRE(sqe);
		io_uring_prep_read_fixed(sqe, fds[0], buf, len, 0,
					 regcache_region_buf_index(region));
		T_REQUIRE(io_uring_submit(ring) == 1);
		/* A signal handler may interrupt the wait (signal-storm). */
		while ((ret = io_uring_wait_cqe(ring, &cqe)) == -EINTR)
			;
		T_REQUIRE(ret == 0);
		ret = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	} while (ret == -ECANCELED && ++tries < T_CANCELED_RESUBMITS);
	return oracle_seen(fds, ret, pattern_byte, seed, buf, len);
}

static void proc_line(const char *path, const char *key, char *out, size_t n);

/* This process's pinned memory (VmPin), in kB; -1 where not shown. */
static long vm_pin_kb(void)
{
	char v[64];

	proc_line("/proc/self/status", "VmPin:", v, sizeof(v));
	return v[0] ? strtol(v, NULL, 10) : -1;
}

bool t_user_memlock_free(size_t limit)
{
	/* The cache's budget (3/4 of the limit): the kernel may count the
	 * ring's own pages against the rest. */
	size_t want = limit / 4 * 3;
	char *buf = t_map_small_pages(want);
	struct iovec iov = { buf, want };
	double t0 = t_now();
	struct io_uring ring;
	int ret;

	long pinned_before = vm_pin_kb();

	t_ring_init(&ring);
	while ((ret = io_uring_register_buffers(&ring, &iov, 1)) == -ENOMEM &&
	       t_now() - t0 < 10.0 * t_slowdown())
		usleep(50000);
	if (ret == 0)
		io_uring_unregister_buffers(&ring);
	io_uring_queue_exit(&ring);
	munmap(buf, want);
	/* Until 6.2ish the kernel gives a released buffer back to the
	 * user's count (and VmPin) about a second late: wait for this probe's
	 * own pages, or the caller's first registration meets them (seen in
	 * the 6.1 guest under load: limits-rlimit's first 64 KiB get failed,
	 * and no release of its cache's own was there to wait for). */
	while (ret == 0 && pinned_before >= 0 && vm_pin_kb() > pinned_before &&
	       t_now() - t0 < 10.0 * t_slowdown())
		usleep(20000);
	if (ret == 0 && pinned_before >= 0 && vm_pin_kb() > pinned_before) {
		fprintf(stderr, "  uid %d: the probe's %zu KiB were not given "
			"back in %.0f s (VmPin %ld kB)\n", (int)getuid(),
			want >> 10, t_now() - t0, vm_pin_kb());
		return false;
	}
	if (ret == 0) {
		if (t_now() - t0 > 0.1)
			printf("  uid %d's memlock was free after %.1f s\n",
			       (int)getuid(), t_now() - t0);
		return true;
	}
	fprintf(stderr, "  uid %d cannot pin %zu KiB of its %zu KiB limit "
		"after %.0f s (%s); other processes of the uid hold some:\n",
		(int)getuid(), want >> 10, limit >> 10, t_now() - t0,
		strerror(-ret));
	fflush(stderr);
	if (system("ps -o pid,ppid,stat,etime,args -u \"$(id -u)\" >&2"))
		fprintf(stderr, "  (ps failed)\n");
	return false;
}

/* The value of the first line of @path that starts with @key (the rest of
 * the line, without the blanks after the key); "" if none. */
static void proc_line(const char *path, const char *key, char *out, size_t n)
{
	FILE *f = fopen(path, "r");
	char line[256];

	out[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			char *v = line + strlen(key);

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = 0;
			snprintf(out, n, "%.*s", (int)n - 1, v);
			break;
		}
	fclose(f);
}

void t_io_uring_census(void)
{
	DIR *proc = opendir("/proc");
	struct dirent *p;
	int rings = 0;

	if (!proc)
		return;
	fprintf(stderr, "  io_uring census (rings open, tasks in teardown):\n");
	while ((p = readdir(proc))) {
		char path[600], link[64], uid[64], comm[64], bufs[64];
		struct dirent *fd;
		DIR *fds;
		FILE *f;

		if (p->d_name[0] < '0' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", p->d_name);
		proc_line(path, "Uid:", uid, sizeof(uid));
		proc_line(path, "Name:", comm, sizeof(comm));
		snprintf(path, sizeof(path), "/proc/%s/stack", p->d_name);
		if ((f = fopen(path, "r"))) {
			char stack[2048];
			size_t n = fread(stack, 1, sizeof(stack) - 1, f);

			stack[n] = 0;
			fclose(f);
			if (strstr(stack, "io_ring_exit") || strstr(stack, "io_wq"))
				fprintf(stderr, "    pid %s (%s) in io_uring's "
					"teardown:\n%s", p->d_name, comm, stack);
		}
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		if (!(fds = opendir(path)))
			continue;
		while ((fd = readdir(fds))) {
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%s/fd/%s", p->d_name,
				 fd->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n < 0)
				continue;
			link[n] = 0;
			if (strcmp(link, "anon_inode:[io_uring]"))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s",
				 p->d_name, fd->d_name);
			proc_line(path, "UserBufs:", bufs, sizeof(bufs));
			fprintf(stderr, "    pid %s (%s, uids %s) fd %s: %s fixed buffers\n",
				p->d_name, comm, uid, fd->d_name, bufs);
			rings++;
		}
		closedir(fds);
	}
	closedir(proc);
	fprintf(stderr, "  %d rings open\n", rings);
}

long t_vma_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	long n = 0;
	int ch;

	T_REQUIRE(f);
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

size_t t_vm_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t kib = 0;

	T_REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %zu", &kib) == 1)
			break;
	fclose(f);
	T_REQUIRE(kib);
	return kib * 1024;
}

void *t_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	T_REQUIRE(p != MAP_FAILED);
	return p;
}

void *t_map_small_pages(size_t len)
{
	void *p = t_map(len);

	/* EINVAL where the kernel has no THP: small pages anyway. */
	T_REQUIRE(madvise(p, len, MADV_NOHUGEPAGE) == 0 || errno == EINVAL);
	return p;
}

void t_remap(void *buf, size_t len)
{
	T_REQUIRE(munmap(buf, len) == 0);
	T_REQUIRE(mmap(buf, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		       0) == buf);
}

char *t_map_until(void *want, size_t len)
{
	for (long spins = 0; spins < 20000; spins++) {
		char *y = t_map(len);

		if (y == want)
			return y;
		T_REQUIRE(munmap(y, len) == 0);
		/* On a loaded machine the unmapping thread may share this
		 * CPU: without the yield it waits for our time slice to end
		 * and the tries run out first. */
		sched_yield();
	}
	return NULL;
}

long t_get_hits(struct regcache *c, void *buf, size_t len,
		struct regcache_region **r)
{
	struct regcache_stats st, st2;

	regcache_get_stats(c, &st);
	T_REQUIRE(regcache_get(c, buf, len, 0, r) == 0);
	regcache_get_stats(c, &st2);
	return (long)(st2.hits - st.hits);
}

int t_fork_wait(int (*fn)(void *arg), void *arg, bool die_with_parent)
{
	pid_t parent = getpid(), pid;
	int status;

	fflush(stdout);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		if (die_with_parent)
			t_die_with_parent(parent);
		_exit(fn(arg));
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	return status;
}

double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void t_daemon_ctl(char cmd)
{
	const char *fd_s = getenv("RCD_TEST_CONTROL");
	int fd = fd_s ? atoi(fd_s) : -1;
	char ok = 0;

	T_REQUIRE(fd >= 0);
	T_REQUIRE(write(fd, &cmd, 1) == 1);
	T_REQUIRE(read(fd, &ok, 1) == 1);
	T_REQUIRE(ok == '+');
}

unsigned t_rnd(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

double t_arg_seconds(int argc, char **argv, double dflt)
{
	double seconds = dflt;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else {
			fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
			exit(2);
		}
	}
	return seconds;
}

static int t_reg(void *ctx, void *addr, size_t len, unsigned access,
		 void **handle)
{
	struct t_registrar *t = ctx;
	struct iovec iov = { .iov_base = addr, .iov_len = len };
	unsigned slot;
	int ret;

	(void)access;
	pthread_mutex_lock(&t->lock);
	if (!t->nfree) {
		pthread_mutex_unlock(&t->lock);
		return -ENOSPC;
	}
	slot = t->free_slots[--t->nfree];
	pthread_mutex_unlock(&t->lock);
	ret = io_uring_register_buffers_update_tag(&t->ring, slot, &iov, NULL, 1);
	if (ret != 1) {
		pthread_mutex_lock(&t->lock);
		t->free_slots[t->nfree++] = slot;
		pthread_mutex_unlock(&t->lock);
		return ret < 0 ? ret : -EIO;
	}
	t->slot[slot].addr = (uintptr_t)addr;
	t->slot[slot].len = len;
	t->slot[slot].pfn = t_pfn(addr);
	atomic_store(&t->slot[slot].registered, 1);
	atomic_fetch_add(&t->live, 1);
	atomic_fetch_add(&t->regs, 1);
	*handle = (void *)(uintptr_t)(slot + 1);
	return 0;
}

static void t_dereg(void *ctx, void *handle)
{
	struct t_registrar *t = ctx;
	unsigned slot = (unsigned)((uintptr_t)handle - 1);
	struct iovec empty = { 0 };

	if (slot >= t->nslots || !atomic_exchange(&t->slot[slot].registered, 0)) {
		fprintf(stderr, "dereg of slot %u that is not registered\n", slot);
		abort();
	}
	T_REQUIRE(io_uring_register_buffers_update_tag(&t->ring, slot, &empty,
						       NULL, 1) == 1);
	atomic_fetch_sub(&t->live, 1);
	atomic_fetch_add(&t->deregs, 1);
	pthread_mutex_lock(&t->lock);
	t->free_slots[t->nfree++] = slot;
	pthread_mutex_unlock(&t->lock);
}

const struct regcache_ops t_registrar_ops = { .reg = t_reg, .dereg = t_dereg };

void t_registrar_init(struct t_registrar *t, unsigned nslots)
{
	memset(t, 0, sizeof(*t));
	t_ring_init(&t->ring);
	T_REQUIRE(nslots && nslots <= T_REG_SLOTS);
	T_REQUIRE(io_uring_register_buffers_sparse(&t->ring, nslots) == 0);
	pthread_mutex_init(&t->lock, NULL);
	t->nslots = nslots;
	for (unsigned i = 0; i < nslots; i++)
		t->free_slots[t->nfree++] = nslots - 1 - i;
}

void t_registrar_fini(struct t_registrar *t)
{
	io_uring_queue_exit(&t->ring);
	pthread_mutex_destroy(&t->lock);
}

struct regcache *t_registrar_cache(struct t_registrar *t, unsigned flags,
				   size_t max_regions, size_t max_bytes)
{
	struct regcache_params p = {
		.ops = &t_registrar_ops,
		.ctx = t,
		.flags = flags,
		.max_regions = max_regions,
		.max_bytes = max_bytes,
	};
	struct regcache *c;
	int ret = regcache_create(&p, &c);

	if (ret) {
		fprintf(stderr, "regcache_create: %s\n", strerror(-ret));
		exit(T_EXIT_FAIL);
	}
	return c;
}

bool t_registrar_covers(struct t_registrar *t, struct regcache_region *region,
			const void *addr, size_t len)
{
	unsigned slot = (unsigned)((uintptr_t)regcache_region_handle(region) - 1);

	return slot < t->nslots && atomic_load(&t->slot[slot].registered) &&
	       t->slot[slot].addr <= (uintptr_t)addr &&
	       (uintptr_t)addr + len <= t->slot[slot].addr + t->slot[slot].len;
}

uint64_t t_pfn(const void *addr)
{
	uint64_t entry = 0;
	long page = sysconf(_SC_PAGESIZE);
	int fd = open("/proc/self/pagemap", O_RDONLY);

	T_REQUIRE(fd >= 0);
	T_REQUIRE(pread(fd, &entry, sizeof(entry),
			((uintptr_t)addr / page) * sizeof(entry)) == sizeof(entry));
	close(fd);
	/* bit 63: present; bits 0-54: the frame number */
	return (entry >> 63) ? entry & ((1ull << 55) - 1) : 0;
}

bool t_registrar_same_pages(struct t_registrar *t,
			    struct regcache_region *region, const void *addr)
{
	unsigned slot = (unsigned)((uintptr_t)regcache_region_handle(region) - 1);
	uint64_t now = t_pfn(addr);

	return slot < t->nslots && now && t->slot[slot].pfn == now;
}

void t_case_begin(struct t_case *k, struct io_uring *ring, struct regcache *c,
		  void *buf, size_t len)
{
	struct regcache_region *r;
	struct regcache_stats st;

	k->ring = ring;
	k->cache = c;
	k->buf = buf;
	k->len = len;
	T_REQUIRE(regcache_get(c, buf, len, 0, &r) == 0);
	T_CHECK(t_dma_visible(ring, r, buf, len, 1));
	regcache_put(c, r);
	regcache_get_stats(c, &st);
	T_REQUIRE(regcache_get(c, buf, len, 0, &k->held) == 0);
	regcache_get_stats(c, &k->before);
	T_EXPECT_EQ(st.hits + 1, k->before.hits);
	T_CHECK(t_dma_visible(ring, k->held, buf, len, 2));
}

bool t_case_end(struct t_case *k, const char *what, bool stale_expected)
{
	struct regcache_region *r;
	struct regcache_stats st;
	bool ok = true;

	if (stale_expected &&
	    t_dma_visible(k->ring, k->held, k->buf, k->len, 3)) {
		fprintf(stderr, "%s: negative control failed: DMA through the "
			"old registration is still visible, so this change is "
			"not tested\n", what);
		t_failures++;
	}
	regcache_put(k->cache, k->held);
	T_REQUIRE(regcache_get(k->cache, k->buf, k->len, 0, &r) == 0);
	regcache_get_stats(k->cache, &st);
	if (st.hits != k->before.hits) {
		fprintf(stderr, "%s: the get after the change was a hit on a "
			"stale region\n", what);
		t_failures++;
		ok = false;
	}
	if (!t_dma_visible(k->ring, r, k->buf, k->len, 4)) {
		fprintf(stderr, "%s: DMA after the change is not visible "
			"(stale registration)\n", what);
		t_failures++;
		ok = false;
	}
	regcache_put(k->cache, r);
	if (ok)
		printf("ok: %s\n", what);
	return ok;
}

void t_passthrough_case(struct io_uring *ring, struct regcache *c, char *buf,
			size_t len, void (*change)(void *), void *arg,
			const char *what)
{
	struct regcache_stats st, st2;
	struct regcache_region *r, *held;

	regcache_get_stats(c, &st);
	T_REQUIRE(regcache_get(c, buf, len, 0, &r) == 0);
	T_CHECK(t_dma_visible(ring, r, buf, len, 1));
	regcache_put(c, r);
	T_REQUIRE(regcache_get(c, buf, len, 0, &held) == 0);
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits, st2.hits);
	T_EXPECT_EQ(st.uncached + 2, st2.uncached);
	change(arg);
	if (t_dma_visible(ring, held, buf, len, 3)) {
		fprintf(stderr, "%s: negative control failed: DMA through the "
			"old registration is still visible\n", what);
		t_failures++;
	}
	regcache_put(c, held);
	T_REQUIRE(regcache_get(c, buf, len, 0, &r) == 0);
	if (!t_dma_visible(ring, r, buf, len, 4)) {
		fprintf(stderr, "%s: DMA after the change is not visible\n",
			what);
		t_failures++;
	}
	regcache_put(c, r);
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits, st2.hits);
	T_EXPECT_EQ(st.uncached + 3, st2.uncached);
	printf("ok: %s (served uncached)\n", what);
}

/* The DMA oracle driven through the pointer-only helpers: the test never
 * sees a fixed-buffer index. */
unsigned char t_prep_byte(unsigned seed, size_t i)
{
	return (unsigned char)((seed * 151u + i * 13u + (i >> 9)) | 1u);
}

bool t_prep_read_visible(struct io_uring *ring, struct regcache *c, void *buf,
			 size_t len, unsigned seed)
{
	struct regcache_region *r = NULL;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int fds[2], ret;

	oracle_fill(fds, t_prep_byte, seed, buf, len);
	sqe = io_uring_get_sqe(ring);
	T_REQUIRE(sqe);
	ret = regcache_uring_prep_read_fixed(c, sqe, fds[0], buf,
					     (unsigned)len, 0, &r);
	if (ret) {
		fprintf(stderr, "regcache_uring_prep_read_fixed: %s\n",
			strerror(-ret));
		exit(T_EXIT_FAIL);
	}
	io_uring_sqe_set_data(sqe, r);
	T_REQUIRE(io_uring_submit(ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(ring, &cqe) == 0);
	ret = cqe->res;
	r = io_uring_cqe_get_data(cqe);
	io_uring_cqe_seen(ring, cqe);
	regcache_put(c, r);
	return oracle_seen(fds, ret, t_prep_byte, seed, buf, len);
}

_Atomic long t_null_regs, t_null_deregs;
static _Atomic(struct t_null_handle *) null_handles;

static int null_reg(void *ctx, void *addr, size_t len, unsigned access,
		    void **handle)
{
	struct t_null_handle *h = malloc(sizeof(*h));

	(void)ctx, (void)addr, (void)len, (void)access;
	if (!h)
		return -ENOMEM;
	atomic_store(&h->live, 1);
	h->pid = getpid();
	h->next = atomic_load(&null_handles);
	while (!atomic_compare_exchange_weak(&null_handles, &h->next, h))
		;
	atomic_fetch_add(&t_null_regs, 1);
	*handle = h;
	return 0;
}

static void null_dereg(void *ctx, void *handle)
{
	struct t_null_handle *h = handle;

	(void)ctx;
	if (!atomic_exchange(&h->live, 0)) {
		fprintf(stderr, "double deregistration\n");
		abort();
	}
	atomic_fetch_add(&t_null_deregs, 1);
}

const struct regcache_ops t_null_ops = {
	.reg = null_reg,
	.dereg = null_dereg,
};

struct regcache *t_null_cache(size_t max_regions)
{
	struct regcache_params p = {
		.ops = &t_null_ops,
		.flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
		.max_regions = max_regions,
	};
	struct regcache *c;

	T_REQUIRE(regcache_create(&p, &c) == 0);
	return c;
}

/* A registrar that holds one registration in flight. */
static pthread_mutex_t pending_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pending_cv = PTHREAD_COND_INITIALIZER;
/* 1: the armed reg has pinned and waits; 2: it may return */
static int pending_stage;
static atomic_bool pending_armed;

static int pending_reg(void *ctx, void *addr, size_t len, unsigned access,
		       void **handle)
{
	int ret = t_registrar_ops.reg(ctx, addr, len, access, handle);

	if (atomic_exchange(&pending_armed, false)) {
		pthread_mutex_lock(&pending_m);
		pending_stage = 1;
		pthread_cond_broadcast(&pending_cv);
		while (pending_stage != 2)
			pthread_cond_wait(&pending_cv, &pending_m);
		pthread_mutex_unlock(&pending_m);
	}
	return ret;
}

static void pending_dereg(void *ctx, void *handle)
{
	t_registrar_ops.dereg(ctx, handle);
}

const struct regcache_ops t_pending_ops = {
	.reg = pending_reg,
	.dereg = pending_dereg,
};

void t_pending_arm(void)
{
	pthread_mutex_lock(&pending_m);
	pending_stage = 0;
	pthread_mutex_unlock(&pending_m);
	atomic_store(&pending_armed, true);
}

void t_pending_wait(void)
{
	pthread_mutex_lock(&pending_m);
	while (pending_stage != 1)
		pthread_cond_wait(&pending_cv, &pending_m);
	pthread_mutex_unlock(&pending_m);
}

void t_pending_release(void)
{
	pthread_mutex_lock(&pending_m);
	pending_stage = 2;
	pthread_cond_broadcast(&pending_cv);
	pthread_mutex_unlock(&pending_m);
}

static struct {
	struct regcache *c;
	void *buf;
	size_t len;
	int ret;
	pthread_t th;
} pending_get;

static void *pending_getter(void *arg)
{
	struct regcache_region *r;

	(void)arg;
	pending_get.ret = regcache_get(pending_get.c, pending_get.buf,
				       pending_get.len, 0, &r);
	if (pending_get.ret == 0)
		regcache_put(pending_get.c, r);
	return NULL;
}

struct regcache *t_pending_get_start(struct t_registrar *t, void *buf,
				     size_t len)
{
	struct regcache_params p = {
		.ops = &t_pending_ops, .ctx = t,
		.flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
	};

	t_registrar_init(t, 64);
	T_REQUIRE(regcache_create(&p, &pending_get.c) == 0);
	pending_get.buf = buf;
	pending_get.len = len;
	t_pending_arm();
	T_REQUIRE(pthread_create(&pending_get.th, NULL, pending_getter,
				 NULL) == 0);
	t_pending_wait();
	return pending_get.c;
}

int t_pending_get_join(void)
{
	T_REQUIRE(pthread_join(pending_get.th, NULL) == 0);
	return pending_get.ret;
}

/* The start of the file at @path as a string; empty if it cannot be read. */
static void read_text(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, size - 1, f);
		fclose(f);
	}
	buf[n] = 0;
}

/* Where each thread of a hung child sleeps, for the report. */
static void print_wchans(pid_t pid)
{
	char path[384], wchan[128], state[512];
	struct dirent *e;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan",
			 (int)pid, e->d_name);
		read_text(path, wchan, sizeof(wchan));
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat",
			 (int)pid, e->d_name);
		read_text(path, state, sizeof(state));
		fprintf(stderr, "    thread %s: %.40s ... sleeping in %s\n",
			e->d_name, state, wchan);
	}
	closedir(dir);
}

void t_child_case(struct t_child_cases *k, const char *what,
		  int (*fn)(const void *arg), const void *arg)
{
	double t0 = t_now();
	int status = 0;
	pid_t pid, parent = getpid();

	fflush(stdout);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		int rc;

		t_die_with_parent(parent);
		rc = fn(arg);

		fflush(stdout);
		fflush(stderr);
		/* _exit: no atexit work (sanitizer reports open files) under
		 * a filter or a limit */
		_exit(rc);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (t_now() - t0 > T_CASE_SECONDS * t_slowdown()) {
			print_wchans(pid);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fprintf(stderr, "  HANG: %s: no exit after %d s, killed\n",
				what, T_CASE_SECONDS * t_slowdown());
			status = T_EXIT_FAIL << 8;
			break;
		}
		usleep(10000);
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "  CRASH: %s: signal %d\n", what,
			WTERMSIG(status));
		k->failed++;
	} else if (WEXITSTATUS(status) == T_EXIT_SKIP) {
		k->skipped++;
	} else if (WEXITSTATUS(status) == T_EXIT_PASS) {
		printf("  ok (%.1f s)\n", t_now() - t0);
		k->passed++;
	} else {
		fprintf(stderr, "  FAIL: %s\n", what);
		k->failed++;
	}
}

int t_child_cases_status(const struct t_child_cases *k)
{
	printf("%d passed, %d failed, %d skipped\n", k->passed, k->failed,
	       k->skipped);
	if (k->failed)
		return T_EXIT_FAIL;
	return k->passed ? T_EXIT_PASS : T_EXIT_SKIP;
}
