/* SPDX-License-Identifier: MIT */
/*
 * Single-thread detection for the userfaultfd backend (uffd.h): hits
 * without a syscall while the process has one application thread.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../base/env.h"
#include "../base/log.h"
#include "uffd.h"

/*
 * The probe closes a window that needs two application threads: thread A
 * unmaps X and is between dropping the mmap lock and the monitor's read(),
 * while thread B maps X again and hits. The thread that made a change
 * itself cannot hit stale: its munmap/mremap/madvise returns only after our
 * read(), which batch_begin() preceded, so its next hit sees the generation
 * moved and syncs (see "The generation word" in the docs).
 *
 * So while the process has one application thread T, T's hits need no
 * probe. rc_uffd_solo_hit() proves that T is alone with no syscall:
 *
 *  1. At start, after the monitor thread exists, /proc/self/task lists T,
 *     the monitor thread and io_uring workers only (rc_uffd_solo_start()).
 *     Nobody else can create a thread meanwhile: T is here, the monitor
 *     thread never does, io_uring workers create only workers.
 *  2. A perf event on T alone (software "dummy", task records, nothing
 *     sampled; inherit off) makes the kernel append a FORK record to a ring
 *     mapped read-only into our memory *inside* every clone() that T makes,
 *     before clone() returns: threads, processes, vfork and
 *     clone(CLONE_VM) children alike. Read-only means overwrite mode: the
 *     kernel never refuses a record for lack of room and moves data_head
 *     for every one (it overwrites the oldest; more than a page of new
 *     records turns the shortcut off).
 *  3. Every thread other than T, the monitor thread and workers would have
 *     to be created after step 1 by T (the others create none), so its
 *     record is in the ring before T can run another instruction, and
 *     before anything T does afterwards (such as a hit). A hit of T that
 *     reads data_head unchanged since step 1 therefore runs in a process
 *     whose only threads that can unmap are T and io_uring workers.
 *  4. Workers only run T's io_uring requests; the only one that changes a
 *     mapping is IORING_OP_MADVISE, and T learns it is done from its
 *     completion, which comes after the madvise returned: after our read().
 *     A hit of T while its own madvise of that memory is still in flight
 *     uses memory it is discarding: the application's race, the same with
 *     the probe. So rc_uffd_solo_recheck() accepts a record of a new worker
 *     (PF_IO_WORKER in /proc/self/task/<tid>/stat; the kernel sets the
 *     flag, the application cannot) and turns the shortcut off for good on
 *     any other record: another thread, any child process, a worker that
 *     already exited (its tid could not be checked), a full ring.
 *  5. Other processes: a debugger's ptrace stops T; process_madvise() from
 *     another process cannot discard our pages (6.18 takes only advice
 *     that keeps the contents from a remote caller).
 *
 * Not covered: a process that shares our memory without being a thread
 * (clone(CLONE_VM) without CLONE_THREAD) and was created *before* the
 * monitor started: it is not in /proc/self/task, and its creation predates
 * the ring; and an io_uring SQPOLL ring of ours whose submission queue
 * another process also maps (a child forked before the monitor started,
 * or one that received the ring's fd): its SQPOLL thread is one of our
 * io_uring workers and runs that process's IORING_OP_MADVISE in our
 * memory. REGCACHE_UFFD_ALWAYS_PROBE=1 keeps the probe on every hit for
 * such a program. The event is owned by the monitor thread, not T, so
 * T's prctl(PR_TASK_PERF_EVENTS_DISABLE) cannot silence it. Any child
 * process, even one with its own memory (fork(), system()), turns the
 * shortcut off for good. The shortcut also needs perf_event_open() for our own
 * thread (kernel.perf_event_paranoid <= 2, or CAP_PERFMON); where it is
 * refused (Debian's default of 3 for an ordinary user, a seccomp filter),
 * every hit probes.
 */
enum task_kind { TASK_GONE, TASK_EXITING, TASK_IO_WORKER, TASK_OTHER };

/* What thread @tid of this process is, from /proc/self/task/<tid>/stat.
 * No allocation (validate's rules): a stack buffer and hand parsing. */
static enum task_kind task_kind(pid_t tid)
{
	char path[64], buf[512];
	unsigned long long flags = 0;
	const char *p;
	ssize_t n;
	int fd, field = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return TASK_GONE;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return TASK_GONE;
	buf[n] = 0;
	/* "tid (comm) state ppid pgrp session tty tpgid flags ...": comm
	 * may hold anything, so count from its last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return TASK_OTHER;
	if (p[2] == 'Z' || p[2] == 'X' || p[2] == 'x')
		return TASK_EXITING;
	for (p += 2; *p && field < 6; p++)
		if (*p == ' ')
			field++;
	if (field < 6 || *p < '0' || *p > '9')
		return TASK_OTHER;
	for (; *p >= '0' && *p <= '9'; p++)
		flags = flags * 10 + (unsigned)(*p - '0');
	return (flags & 0x10) ? TASK_IO_WORKER : TASK_OTHER;	/* PF_IO_WORKER */
}

/* Only ever false -> true in start(), then true -> false. Release: the
 * solo thread's last look at the ring comes before the rc_uffd_solo_stop() of a
 * watch() that saw the flag off (acquire). */
static void solo_off(void)
{
	rc_store_release(&rc_uffd.solo, false);
}

/*
 * T only: the ring moved. Accept records of new io_uring workers of this
 * process (step 4 above), turn the shortcut off on anything else. Only T
 * makes records, and T is here: nothing writes the ring meanwhile.
 */
rc_noinline bool rc_uffd_solo_recheck(uint64_t head)
{
	const char *data = (const char *)rc_uffd.solo_ring + rc_uffd.page;
	pid_t self = getpid();

	if (head - rc_uffd.solo_head > rc_uffd.page) {
		solo_off();		/* records were overwritten */
		return false;
	}
	while (rc_uffd.solo_head < head) {
		struct perf_event_header h;
		struct { uint32_t pid, ppid, tid, ptid; } f;
		uint64_t o = rc_uffd.solo_head % rc_uffd.page;

		/* One data page; a record may wrap around its end. */
		for (size_t i = 0; i < sizeof(h); i++)
			((char *)&h)[i] = data[(o + i) % rc_uffd.page];
		for (size_t i = 0; i < sizeof(f); i++)
			((char *)&f)[i] =
				data[(o + sizeof(h) + i) % rc_uffd.page];
		if (h.type != PERF_RECORD_FORK || h.size < sizeof(h) + sizeof(f) ||
		    (pid_t)f.pid != self ||
		    task_kind((pid_t)f.tid) != TASK_IO_WORKER) {
			rc_debug("userfaultfd monitor: a thread or process was "
				 "created (record %u, pid %u, tid %u): every hit "
				 "probes from now on", h.type, f.pid, f.tid);
			solo_off();
			return false;
		}
		rc_uffd.solo_head += h.size;
	}
	return true;
}

/* Whether /proc/self/task holds only us, the monitor thread and io_uring
 * workers. Bounded by the threads listed; no lock. */
static bool only_us_in_task_list(void)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool alone = d != NULL;

	while (alone && (e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		/* A thread that is exiting, or gone by now, does nothing
		 * more; one it created before is listed too. */
		if (tid > 0 && tid != self && tid != rc_uffd.thread_tid &&
		    task_kind(tid) == TASK_OTHER)
			alone = false;
	}
	if (d)
		closedir(d);
	return alone;
}

/*
 * In the monitor thread, before start() goes on: a perf event on the
 * starting thread @tid, or -1. The monitor thread opens it so that it, not
 * the application's thread, owns the event: prctl(PR_TASK_PERF_EVENTS_DISABLE)
 * disables the events the calling thread owns, and a disabled event would
 * record no clone() while the ring head stays still (step 2).
 */
int rc_uffd_solo_open_event(pid_t tid)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.task = 1,
		.exclude_kernel = 1,	/* perf_event_paranoid 2 allows this */
		.exclude_hv = 1,
	};

	if (rc_env_flag(RC_ENV_UFFD_ALWAYS_PROBE))
		return -1;
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

/* After the monitor thread started (its own FORK record is not ours to
 * see) and opened the event: the ring first, then the task list (steps 1
 * and 2). The fd is closed once the ring is mapped (the mapping keeps the
 * event), so no fork or close_range() of the application can touch it. */
void rc_uffd_solo_start(void)
{
	int fd = rc_uffd.solo_fd;
	void *ring;

	rc_uffd.solo_fd = -1;
	rc_uffd.solo_ring = NULL;
	if (fd < 0) {
		if (!rc_env_flag(RC_ENV_UFFD_ALWAYS_PROBE))
			rc_debug("userfaultfd monitor: perf_event_open refused: "
				 "every hit probes");
		return;
	}
	/* Read-only: overwrite mode, data_head moves for every record. */
	ring = mmap(NULL, 2 * rc_uffd.page, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (ring == MAP_FAILED) {
		rc_debug("userfaultfd monitor: mmap of the perf ring: %s: every "
			 "hit probes", strerror(errno));
		return;
	}
	rc_uffd.solo_ring = ring;
	rc_uffd.solo_thread = pthread_self();
	rc_uffd.solo_head = __atomic_load_n(&rc_uffd.solo_ring->data_head,
					 __ATOMIC_ACQUIRE);
	if (!only_us_in_task_list()) {
		rc_debug("userfaultfd monitor: other threads exist: every hit "
			 "probes");
		rc_uffd_solo_stop(false);
		return;
	}
	rc_debug("userfaultfd monitor: one application thread: its hits "
		 "skip the probe until it creates a thread or process");
	rc_store_release(&rc_uffd.solo, true);
}

/* @child: in a forked child, where the ring is not mapped (perf maps it
 * VM_DONTCOPY) and the fd is our copy. Also once the shortcut is off for
 * good (uffd_watch()): the event would only cost the solo thread's
 * context switches. */
void rc_uffd_solo_stop(bool child)
{
	solo_off();
	if (rc_uffd.solo_ring && !child)
		munmap((void *)rc_uffd.solo_ring, 2 * rc_uffd.page);
	rc_uffd.solo_ring = NULL;
}
