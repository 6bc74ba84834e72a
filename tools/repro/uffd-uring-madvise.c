/* SPDX-License-Identifier: MIT */
/*
 * Standalone (no regcache): does an io_uring IORING_OP_MADVISE(MADV_DONTNEED)
 * of a userfaultfd-registered range (MODE_WP, UFFD_FEATURE_EVENT_REMOVE)
 * deliver a UFFD_EVENT_REMOVE? A reader thread counts the events; each
 * iteration dirties the buffer, discards it (raw madvise or io_uring), and
 * checks that the event count moved and the pages were zapped.
 *
 *   cc -O2 -o uffd-uring-madvise uffd-uring-madvise.c -luring -lpthread
 *   ./uffd-uring-madvise [iterations] [mode...]
 *   mode: raw | uring | async (IOSQE_ASYNC) | thread (a second thread was
 *         created first) | fresh (munmap + MAP_FIXED_NOREPLACE + re-register
 *         before every discard)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static int ufd;
static atomic_ulong n_remove, n_unmap, n_other;
/* Moved before every read(): the read wakes the discarding thread before
 * the reader can count what it returned. */
static atomic_ulong reads;

static void *reader(void *arg)
{
	struct pollfd p = { .fd = ufd, .events = POLLIN };

	(void)arg;
	for (;;) {
		struct uffd_msg m[16];
		ssize_t n;

		poll(&p, 1, -1);
		reads++;
		n = read(ufd, m, sizeof(m));
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			perror("read(uffd)");
			return NULL;
		}
		for (size_t i = 0; i < (size_t)n / sizeof(m[0]); i++) {
			if (m[i].event == UFFD_EVENT_REMOVE)
				n_remove++;
			else if (m[i].event == UFFD_EVENT_UNMAP)
				n_unmap++;
			else
				n_other++;
		}
	}
}

static void *idle(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static void reg(char *buf, size_t len)
{
	struct uffdio_register r = {
		.range = { (unsigned long)buf, len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	if (ioctl(ufd, UFFDIO_REGISTER, &r)) {
		perror("UFFDIO_REGISTER");
		exit(2);
	}
}

/* "uw" in this VMA's VmFlags (smaps): registered in WP mode. */
static int registered(char *buf)
{
	char line[512], want[64];
	FILE *f = fopen("/proc/self/smaps", "r");
	int in = 0, ret = -1;

	snprintf(want, sizeof(want), "%lx-", (unsigned long)buf);
	while (f && fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') &&
		    strchr(line, '-') < strchr(line, ' ') &&
		    line[0] != 'V')
			in = !strncmp(line, want, strlen(want));
		if (in && !strncmp(line, "VmFlags:", 8)) {
			ret = strstr(line, " uw") != NULL;
			break;
		}
	}
	if (f)
		fclose(f);
	return ret;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 200;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 8 * page;
	struct uffdio_api api = { .api = UFFD_API,
		.features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |
			    UFFD_FEATURE_EVENT_REMAP };
	struct utsname u;
	struct io_uring ring;
	pthread_t t;
	char *buf;
	int status = 0;

	uname(&u);
	ufd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (ufd < 0)
		ufd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (ufd < 0 || ioctl(ufd, UFFDIO_API, &api)) {
		perror("userfaultfd");
		return 2;
	}
	if (io_uring_queue_init(8, &ring, 0)) {
		fprintf(stderr, "io_uring_queue_init failed\n");
		return 2;
	}
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg(buf, len);
	pthread_create(&t, NULL, reader, NULL);

	for (int a = 2; a < argc || a == 2; a++) {
		const char *mode = a < argc ? argv[a] : "uring";
		int async = !strcmp(mode, "async"), raw = !strcmp(mode, "raw");
		int fresh = !strcmp(mode, "fresh");
		int missed = 0, not_zero = 0, bad_res = 0, unreg = 0;
		int late = 0;

		if (!strcmp(mode, "thread")) {
			pthread_t i;

			pthread_create(&i, NULL, idle, NULL);
		}
		for (int k = 0; k < iters; k++) {
			unsigned long before, reads_before, reads_after;
			struct timespec ts = { 0, 1000000 };
			int res = 0;

			if (fresh) {
				syscall(SYS_munmap, buf, len);
				if (mmap(buf, len, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS |
						 MAP_FIXED_NOREPLACE,
					 -1, 0) != buf) {
					perror("mmap");
					return 2;
				}
				reg(buf, len);
			}
			memset(buf, 1, len);
			if (registered(buf) != 1)
				unreg++;
			before = n_remove;
			reads_before = reads;
			if (raw) {
				res = madvise(buf, len, MADV_DONTNEED) ? -errno : 0;
			} else {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
				struct io_uring_cqe *cqe;

				io_uring_prep_madvise(sqe, buf, (off_t)len,
						      MADV_DONTNEED);
				if (async)
					sqe->flags |= IOSQE_ASYNC;
				io_uring_submit(&ring);
				io_uring_wait_cqe(&ring, &cqe);
				res = cqe->res;
				io_uring_cqe_seen(&ring, cqe);
			}
			reads_after = reads;
			if (res)
				bad_res++;
			/* The discard sleeps until the reader read the
			 * event: it must have moved already. Wait 1 s more
			 * to tell "late" from "never". */
			for (int w = 0; w < 1000 && n_remove == before; w++)
				nanosleep(&ts, NULL);
			if (n_remove == before)
				missed++;
			else if (reads_after == reads_before)
				late++;
			for (size_t i = 0; i < len; i += page)
				if (buf[i]) {
					not_zero++;
					break;
				}
		}
		printf("%s %s: %d x %s MADV_DONTNEED: events missed %d, "
		       "returned before any read() %d, pages not zapped %d, "
		       "res != 0 %d, VMA not registered %d\n",
		       u.sysname, u.release, iters, mode, missed, late,
		       not_zero, bad_res, unreg);
		if (missed || late)
			status = 1;
	}
	printf("events: REMOVE %lu UNMAP %lu other %lu\n",
	       (unsigned long)n_remove, (unsigned long)n_unmap,
	       (unsigned long)n_other);
	return status;
}
