/* SPDX-License-Identifier: MIT */
/*
 * The "regcached" monitor backend: the node's daemon (tools/regcached/regcached.c)
 * runs one eBPF program set for every process; this process gets a ring of
 * its own over a unix socket, and consumes it exactly as the in-process
 * bpf backend consumes its ring. No privilege is needed. The hit path's
 * generation is the ring's producer position, mapped read-only by the
 * kernel. See docs/regcached.md.
 *
 * Daemon death: the programs write a DEAD record into the ring as the
 * daemon exits (SIGKILL included), so the next hit syncs and the pull
 * below sees it before trusting anything. From then on, until the daemon
 * is back, every sync invalidates everything and the hit path reads a
 * private odd counter that never equals an adopted generation, and watch()
 * refuses (pass-through). A later miss reconnects and hands the same ring
 * to the new daemon, so the generation keeps growing; the first pull after
 * that invalidates everything once more, for the gap.
 *
 * A daemon that stays away longer than $REGCACHE_REGCACHED_FALLBACK_MS
 * (default 5 s, 0: never), or one that answers but will not take our ring
 * back, is given up for good: the miss that finds out asks the monitor to
 * fall back to the next backend (rc_monitor_fall_back()), after releasing
 * our locks. Watches taken here need no undoing (no ->unwatch), which is
 * what lets another backend take over.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/types.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../abi/fdpass.h"
#include "../base/clock.h"
#include "../abi/protocol.h"
#include "../base/env.h"
#include "../base/fork.h"
#include "../base/log.h"
#include "../abi/rc_bpf_abi.h"
#include "backend.h"
#include "ring.h"
#include "../kernel/vma.h"

#define RC_PAGE 4096u
/* A reply slower than this means the daemon is stuck: treat it as gone;
 * $REGCACHE_REGCACHED_TIMEOUT_MS overrides (a node that starts hundreds
 * of clients at once on slow or emulated CPUs). */
#define RCD_TIMEOUT_MS 5000
/* How often a miss may try to reach a daemon that went away. */
#define RCD_RETRY_MS 200
/* Watches already granted, remembered so a miss on the same file costs no
 * round trip. */
#define RCD_KNOWN_FILES 64
static struct rcd_backend {
	/* Socket use (requests, reconnect); never held by pull. */
	pthread_mutex_t sock_lock;
	/* Ring consumption and the dead/alive switch; pull holds it (under
	 * the monitor lock), watch only briefly. */
	pthread_mutex_t ring_lock;
	int sock;
	int ring_fd;
	struct rc_ring ring;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct rc_vma_source vmas;
	__u64 shmem_dev;
	_Atomic bool dead;
	bool resumed;		/* the next pull invalidates everything */
	/* Read by the hit path while dead: odd, so never an adopted ring
	 * position (those are multiples of 8). */
	_Atomic uint64_t dead_gen;
	double next_retry_ms;
	/* Set by go_dead (ring_lock), read by watch (sock_lock). */
	_Atomic uint64_t dead_since_ms;
	long fallback_ms;	/* < 0: never fall back */
	bool gave_up;		/* asked to fall back (sock_lock) */
	unsigned dropped;	/* resumes in a row that a daemon accepted
				   and then dropped unanswered (sock_lock) */
	bool told_no_fallback;	/* sock_lock */
	unsigned nknown;
	struct {
		__u64 dev, ino, lo, hi;
	} known[RCD_KNOWN_FILES];
} rb = {
	.sock_lock = PTHREAD_MUTEX_INITIALIZER,
	.ring_lock = PTHREAD_MUTEX_INITIALIZER,
	.sock = -1,
	.ring_fd = -1,
	.vmas = { .maps_fd = -1 },
	.dead_gen = 1,
};

/* A fork while another thread is inside watch() would leave sock_lock
 * locked forever in the child: hold it across fork. ring_lock is free
 * then: pull holds it only under the monitor lock, and watch only under
 * sock_lock, both held across fork (fork.h). */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&rb.sock_lock);
}

static void atfork_release(void)
{
	pthread_mutex_unlock(&rb.sock_lock);
}

static const struct rc_fork_handlers regcached_fork = {
	atfork_prepare, atfork_release, atfork_release
};

static const char *socket_path(void)
{
	const char *p = rc_env_str(RC_ENV_SOCKET);

	return p ? p : RCD_SOCKET_DEFAULT;
}

static long reply_timeout_ms(void)
{
	size_t ms = rc_env_size(RC_ENV_REGCACHED_TIMEOUT_MS);

	return ms ? (long)ms : RCD_TIMEOUT_MS;
}

static int connect_daemon(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long ms = reply_timeout_ms();
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv))) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

/* One request, one reply; @fd_out receives the reply's fd if any. Returns
 * the reply's status, or -errno when the exchange itself failed (then the
 * connection is unusable: -EPIPE). */
static int call(int sock, struct rcd_request *q, int fd_in, struct rcd_reply *r,
		int *fd_out)
{
	int fds[RC_FDPASS_MAX], nfds;
	ssize_t n;

	q->magic = RCD_MAGIC;
	q->version = RCD_VERSION;
	if (rc_fd_send(sock, q, sizeof(*q), fd_in, MSG_NOSIGNAL) != sizeof(*q))
		return -EPIPE;
	do
		n = rc_fd_recv(sock, r, sizeof(*r), 0, fds, &nfds, NULL);
	while (n < 0 && errno == EINTR);
	/* The daemon attaches at most one descriptor; more is not a reply. */
	for (int i = 0; i < nfds; i++) {
		if (nfds == 1 && fd_out)
			*fd_out = fds[i];
		else
			close(fds[i]);
	}
	if (n != sizeof(*r) || r->magic != RCD_MAGIC || r->op != q->op)
		return -EPIPE;
	return r->status;
}

struct self_test {
	uint64_t start, end;
	bool found;
};

static void self_test_record(void *arg, uint64_t start, uint64_t end)
{
	struct self_test *t = arg;

	if (start == t->start && end == t->end)
		t->found = true;
}

/* One munmap must land in our ring with its exact range: the daemon routes
 * this process's events here. Consumes the ring (nothing is cached yet). */
static int self_test(void)
{
	struct self_test t = { 0 };
	void *p = mmap(NULL, RC_PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	munmap(p, RC_PAGE);
	t.start = (uintptr_t)p;
	t.end = (uintptr_t)p + RC_PAGE;
	rc_ring_walk(&rb.ring, self_test_record, &t);
	if (!t.found) {
		rc_info("regcached: the ring did not record this process's "
			"munmap: the daemon does not see us");
		return -ENOSYS;
	}
	return 0;
}

static void learn_shmem_dev(void)
{
	struct stat st;
	int fd = memfd_create("regcache-shmem-probe", MFD_CLOEXEC);

	if (fd < 0)
		return;
	if (!fstat(fd, &st))
		rb.shmem_dev = ((__u64)major(st.st_dev) << 20) | minor(st.st_dev);
	close(fd);
}

static void teardown(bool in_child)
{
	if (in_child)
		rc_ring_forget_in_child(&rb.ring);
	else
		rc_ring_unmap(&rb.ring);
	if (rb.sock >= 0)
		close(rb.sock);
	if (rb.ring_fd >= 0)
		close(rb.ring_fd);
	rb.sock = rb.ring_fd = -1;
	rc_vma_source_close(&rb.vmas);
	rb.nknown = 0;
	rb.resumed = false;
	rb.gave_up = false;
	rb.dropped = 0;
	rb.told_no_fallback = false;
	rc_store_relaxed(&rb.dead, false);
}

static long fallback_ms(void)
{
	long long ms = rc_env_time(RC_ENV_REGCACHED_FALLBACK_MS, NULL);

	return ms ? (long)ms : -1;
}

static int rcd_start(struct rc_monitor *mon)
{
	struct rcd_request q = { .op = RCD_REGISTER };
	struct rcd_reply r;
	double t0 = rc_now_ms();
	int ret;

	rc_fork_enable(RC_FORK_REGCACHED, &regcached_fork);
	rb.fallback_ms = fallback_ms();
	snprintf(rb.path, sizeof(rb.path), "%s", socket_path());
	rb.ring.page = sysconf(_SC_PAGESIZE);
	rb.sock = connect_daemon(rb.path);
	if (rb.sock < 0) {
		ret = rb.sock;
		rb.sock = -1;
		rc_info("regcached: no daemon answers at %s (%s)%s", rb.path,
			strerror(-ret),
			rc_env_str(RC_ENV_SOCKET) ? "" :
			"; REGCACHE_SOCKET names another socket");
		return ret;
	}
	ret = call(rb.sock, &q, -1, &r, &rb.ring_fd);
	if (!ret && (rb.ring_fd < 0 || r.ring_bytes != RC_BPF_RING_BYTES))
		ret = -EPROTO;
	if (ret) {
		rc_info("regcached: the daemon at %s refused to register this "
			"process: %s", rb.path, strerror(-ret));
		goto fail;
	}
	ret = rc_ring_map(&rb.ring, rb.ring_fd, r.ring_bytes);
	if (ret) {
		rc_info("regcached: cannot map the ring: %s", strerror(-ret));
		goto fail;
	}
	ret = self_test();
	if (ret)
		goto fail;
	rc_vma_source_open(&rb.vmas, RC_ENV_BPF_NO_PROCMAP_QUERY);
	learn_shmem_dev();
	rb.dead_gen = 1;
	mon->caps = (struct rc_monitor_caps){
		.can_cache = true,
		.synchronous = true,
	};
	mon->backend = &rb;
	mon->gen = rb.ring.gen;
	rc_info("regcached: registered at %s (ring slot %u) in %.1f ms",
		rb.path, r.slot, rc_now_ms() - t0);
	return 0;
fail:
	teardown(false);
	return ret < 0 ? ret : -EPROTO;
}

/* Stop trusting anything (ring_lock held). */
static void go_dead(struct rc_monitor *mon, const char *why)
{
	if (rc_load_relaxed(&rb.dead))
		return;
	rc_store_relaxed(&rb.dead_gen, rc_load_relaxed(&rb.dead_gen) + 2);
	rc_store_relaxed(&rb.dead_since_ms, (uint64_t)rc_now_ms());
	rc_store_release(&rb.dead, true);
	atomic_store_explicit(&mon->gen, &rb.dead_gen, memory_order_release);
	rc_warn("regcached: %s: every cached registration is dropped and new "
		"ones are served uncached until the daemon is back", why);
}

/* One pull is applied by every cache in one sync, so within it one
 * "everything" subsumes every other record (published once, at the end)
 * and a record equal to the one before it adds nothing (the programs
 * record each change up to three times, back to back). */
struct pull_ctx {
	struct rc_monitor *mon;
	bool dead;
	bool everything;
	uint64_t last_start, last_end;	/* last range published */
};

static void pull_record(void *arg, uint64_t start, uint64_t end)
{
	struct pull_ctx *p = arg;

	if (start == RC_BPF_DEAD_START && end == RC_BPF_DEAD_END) {
		p->dead = true;
		return;
	}
	if (p->everything)
		return;
	if (start == 0 && end >= UINTPTR_MAX) {
		p->everything = true;
		return;
	}
	if (start == p->last_start && end == p->last_end)
		return;
	p->last_start = start;
	p->last_end = end;
	rc_monitor_publish(p->mon, (uintptr_t)start,
			   end > UINTPTR_MAX ? UINTPTR_MAX : (uintptr_t)end);
}

/*
 * Drain the ring into the monitor's queue (monitor lock held). The caller
 * read the generation before calling: every record below it is published
 * before we return. While the daemon is gone every pull publishes
 * "everything" and moves the private generation, so no hit is served
 * until a sync has run after the daemon came back.
 */
static void rcd_pull(struct rc_monitor *mon)
{
	struct pull_ctx p = { .mon = mon, .last_start = 1, .last_end = 0 };

	pthread_mutex_lock(&rb.ring_lock);
	if (rb.ring.gen)
		rc_ring_walk(&rb.ring, pull_record, &p);
	if (p.dead)
		go_dead(mon, "the daemon is gone (DEAD record)");
	if (p.everything && !rc_load_relaxed(&rb.dead) && !rb.resumed)
		rc_monitor_publish_all(mon);
	if (rc_load_relaxed(&rb.dead)) {
		rc_monitor_publish_all(mon);
		rc_store_release(&rb.dead_gen, rc_load_relaxed(&rb.dead_gen) + 2);
	} else if (rb.resumed) {
		rc_monitor_publish_all(mon);
		rb.resumed = false;
	}
	pthread_mutex_unlock(&rb.ring_lock);
}

/*
 * The daemon is back? Hand it our ring (sock_lock held). *@refused: a
 * daemon is there and will not take it: it answered with an error, does
 * not feed our ring, or twice in a row accepted the connection and closed
 * it unanswered or said "try again" (once may be the old daemon's
 * listening socket still closing as it exits).
 */
static int resume(struct rc_monitor *mon, bool *refused)
{
	struct rcd_request q = { .op = RCD_REGISTER,
				 .flags = RCD_REGISTER_RESUME };
	struct rcd_reply r;
	uint64_t before;
	void *page;
	int sock, ret;

	/* After a failed attempt, misses go pass-through for a while
	 * instead of each paying a connect. */
	if (rc_now_ms() < rb.next_retry_ms)
		return -ENOTCONN;
	sock = connect_daemon(rb.path);
	if (sock < 0) {
		rb.next_retry_ms = rc_now_ms() + RCD_RETRY_MS;
		rb.dropped = 0;
		return sock;
	}
	ret = call(sock, &q, rb.ring_fd, &r, NULL);
	if (ret) {
		/* No answer, or "try again": maybe a daemon on its way out
		 * or in; an error answer is a refusal. */
		bool unsure = ret == -EPIPE || ret == -EAGAIN;

		rb.dropped = unsure ? rb.dropped + 1 : 0;
		*refused = !unsure || rb.dropped >= 2;
		close(sock);
		rb.next_retry_ms = rc_now_ms() + RCD_RETRY_MS;
		rc_info("regcached: the daemon at %s did not take our ring "
			"back (%s): registrations stay uncached", rb.path,
			strerror(-ret));
		return ret;
	}
	/* Our own munmap must move the producer position: the programs
	 * see us again, and every cursor adopted before is now stale. */
	before = rc_load_acquire(rb.ring.gen);
	page = mmap(NULL, RC_PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page != MAP_FAILED)
		munmap(page, RC_PAGE);
	if (rc_load_acquire(rb.ring.gen) == before) {
		*refused = true;
		close(sock);
		rb.next_retry_ms = rc_now_ms() + RCD_RETRY_MS;
		rc_info("regcached: the new daemon does not feed our ring");
		return -ENOSYS;
	}
	close(rb.sock);
	rb.sock = sock;
	rb.nknown = 0;
	pthread_mutex_lock(&rb.ring_lock);
	rb.resumed = true;
	rc_store_release(&rb.dead, false);
	atomic_store_explicit(&mon->gen, rb.ring.gen, memory_order_release);
	pthread_mutex_unlock(&rb.ring_lock);
	rc_warn("regcached: the daemon is back at %s; caching resumes", rb.path);
	return 0;
}

/*
 * After a failed resume (sock_lock held): is it time to give the daemon up
 * for good? Returns why (written into @why), or NULL to keep waiting. At
 * once if a daemon refused our ring; else after the grace period since
 * the daemon went away.
 */
static const char *give_up(bool refused, int err, char *why, size_t len)
{
	uint64_t gone = (uint64_t)rc_now_ms() - rc_load_relaxed(&rb.dead_since_ms);

	if (rb.gave_up)
		return NULL;
	if (rb.fallback_ms < 0) {
		if (!rb.told_no_fallback)
			rc_warn("regcached: REGCACHE_REGCACHED_FALLBACK_MS=0: no "
				"fallback to another monitor; registrations stay "
				"uncached until the daemon at %s is back",
				rb.path);
		rb.told_no_fallback = true;
		return NULL;
	}
	if (refused)
		snprintf(why, len, "the daemon at %s did not take our ring "
			 "back (%s)", rb.path, err == -EPIPE ?
			 "it closed the connection unanswered, twice in a row" :
			 strerror(-err));
	else if (gone >= (uint64_t)rb.fallback_ms)
		snprintf(why, len, "the daemon at %s is gone for %llu ms "
			 "(REGCACHE_REGCACHED_FALLBACK_MS=%ld)", rb.path,
			 (unsigned long long)gone, rb.fallback_ms);
	else
		return NULL;
	rb.gave_up = true;
	return why;
}

static bool known_covers(__u64 dev, __u64 ino, __u64 lo, __u64 hi)
{
	for (unsigned i = 0; i < rb.nknown; i++)
		if (rb.known[i].dev == dev && rb.known[i].ino == ino &&
		    rb.known[i].lo <= lo && rb.known[i].hi >= hi)
			return true;
	return false;
}

/* An fd of ours open on the file {dev, ino}: its map_files entry (allowed
 * with CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else an fd the
 * application still holds. -1 if none. */
static int find_fd(const struct rc_procmap_query *q)
{
	char path[96];
	struct stat st;
	DIR *d;
	struct dirent *e;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/map_files/%llx-%llx",
		 (unsigned long long)q->vma_start, (unsigned long long)q->vma_end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int cand = atoi(e->d_name), fl;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' ||
		    cand == dirfd(d) || fstat(cand, &st) ||
		    !S_ISREG(st.st_mode) || st.st_ino != q->inode ||
		    major(st.st_dev) != q->dev_major ||
		    minor(st.st_dev) != q->dev_minor)
			continue;
		fl = fcntl(cand, F_GETFL);
		if (fl < 0 || (fl & O_PATH))
			continue;
		fd = fcntl(cand, F_DUPFD_CLOEXEC, 0);
		break;
	}
	closedir(d);
	return fd;
}

/* Ask the daemon to watch the file behind a shared mapping (sock_lock
 * held). */
static int watch_file(const struct rc_procmap_query *q, uintptr_t start,
		      uintptr_t end)
{
	uintptr_t s = start > q->vma_start ? start : q->vma_start;
	uintptr_t e = end < q->vma_end ? end : q->vma_end;
	__u64 dev = ((__u64)q->dev_major << 20) | q->dev_minor;
	struct rcd_request req = {
		.op = RCD_WATCH,
		.start = s,
		.end = e,
		.pgoff_lo = q->vma_offset / RC_PAGE + (s - q->vma_start) / RC_PAGE,
		.pgoff_hi = q->vma_offset / RC_PAGE +
			    (e - q->vma_start + RC_PAGE - 1) / RC_PAGE,
	};
	struct rcd_reply r;
	int fd = -1, ret;

	if (known_covers(dev, q->inode, req.pgoff_lo, req.pgoff_hi))
		return 0;
	if (dev != rb.shmem_dev) {
		fd = find_fd(q);
		if (fd < 0) {
			rc_debug("regcached: no open fd of file %u:%u/%llu to "
				 "prove access: served uncached", q->dev_major,
				 q->dev_minor, (unsigned long long)q->inode);
			return -EOPNOTSUPP;
		}
	}
	ret = call(rb.sock, &req, fd, &r, NULL);
	if (fd >= 0)
		close(fd);
	if (!ret && rb.nknown < RCD_KNOWN_FILES) {
		rb.known[rb.nknown].dev = dev;
		rb.known[rb.nknown].ino = q->inode;
		rb.known[rb.nknown].lo = req.pgoff_lo;
		rb.known[rb.nknown].hi = req.pgoff_hi;
		rb.nknown++;
	}
	return ret;
}

/*
 * Can every change to [start, end) be seen? As for the in-process bpf
 * backend: private anonymous memory, yes; shared shmem or file mappings
 * once the daemon watches the file (on tmpfs, ext4 or xfs); private file
 * mappings and huge pages, no.
 */
static int rcd_watch(struct rc_monitor *mon, uintptr_t start, uintptr_t end)
{
	uintptr_t addr = start;
	const char *give_up_why = NULL;
	char why[sizeof(rb.path) + 128];
	int ret = 0;

	pthread_mutex_lock(&rb.sock_lock);
	if (rc_load_acquire(&rb.dead)) {
		bool refused = false;

		/* Given up: another backend takes over (or just did). */
		ret = rb.gave_up ? -ENOTCONN : resume(mon, &refused);
		if (ret) {
			give_up_why = give_up(refused, ret, why, sizeof(why));
			ret = -ENOTCONN;
			goto out;
		}
	}
	while (addr < end) {
		struct rc_procmap_query q;

		ret = rc_vma_query(&rb.vmas, addr, &q);
		if (ret == -ENOENT) {
			ret = 0;	/* no VMA above: pinning will fail */
			break;
		}
		if (ret)
			break;
		if (q.vma_start >= end)
			break;
		if (q.vma_page_size != RC_PAGE) {
			ret = -EOPNOTSUPP;
			break;
		}
		if (q.inode) {
			if (!(q.vma_flags & RC_PROCMAP_VMA_SHARED)) {
				ret = -EOPNOTSUPP;
				break;
			}
			ret = watch_file(&q, start, end);
			if (ret == -EPIPE) {
				pthread_mutex_lock(&rb.ring_lock);
				go_dead(mon, "the daemon's socket broke");
				pthread_mutex_unlock(&rb.ring_lock);
			}
			if (ret)
				break;
		}
		addr = q.vma_end;
	}
out:
	pthread_mutex_unlock(&rb.sock_lock);
	/* Outside our locks: the monitor lock is taken before them (pull). */
	if (give_up_why &&
	    !rc_monitor_fall_back(&rc_monitor_regcached_ops, give_up_why)) {
		/* Nothing to fall back to: keep trying the daemon, and the
		 * fallback again after another grace period. */
		pthread_mutex_lock(&rb.sock_lock);
		rb.gave_up = false;
		rc_store_relaxed(&rb.dead_since_ms, (uint64_t)rc_now_ms());
		pthread_mutex_unlock(&rb.sock_lock);
	}
	return ret;
}

static void rcd_forked(struct rc_monitor *mon)
{
	mon->gen = &mon->queue_head;
	/* The socket and the ring are the parent's: close our copies
	 * without a word to the daemon. */
	teardown(true);
}

static void rcd_stop(struct rc_monitor *mon)
{
	mon->gen = &mon->queue_head;
	teardown(false);
}

/* The daemon's programs submit every record without a wakeup, and a
 * client may not change that in the daemon's maps: a sleeper would never
 * wake. Callers poll instead (docs/regcached.md). */
static int rcd_wake(struct rc_monitor *mon, bool on, int *fd)
{
	(void)mon, (void)fd;
	return on ? -EOPNOTSUPP : 0;
}

const struct rc_monitor_ops rc_monitor_regcached_ops = {
	.name = "regcached",
	.start = rcd_start,
	.watch = rcd_watch,
	.pull = rcd_pull,
	.forked = rcd_forked,
	.stop = rcd_stop,
	.wake = rcd_wake,
};
