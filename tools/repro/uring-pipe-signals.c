/* SPDX-License-Identifier: MIT */
/*
 * Standalone (no regcache): can a READ_FIXED from a pipe that already holds
 * the bytes complete with -ECANCELED while signals keep arriving? Counts,
 * over N reads: results by kind, and whether the read was served by an
 * io-wq worker (an "iou-wrk-" thread exists after it). A storm thread sends
 * SIGUSR1 (SA_RESTART handler) to the reading thread as fast as it can.
 * With "fresh", every read is submitted by a new thread, so the kernel must
 * start that thread's first io-wq worker while the signals arrive.
 *
 *   cc -O2 -o uring-pipe-signals uring-pipe-signals.c -luring -lpthread
 *   ./uring-pipe-signals [reads] [storm|quiet] [fresh]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#define LEN 8192

static atomic_bool stop;
static _Atomic pid_t reader_tid;
static struct io_uring ring;
static char src[LEN], *buf;
static unsigned long ok, canceled, other, worker_seen;

static void on_usr1(int sig)
{
	(void)sig;
}

static void *storm(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		if (atomic_load(&reader_tid))
			syscall(SYS_tgkill, getpid(), atomic_load(&reader_tid),
				SIGUSR1);
	return NULL;
}

static int iowq_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f))
			n += strncmp(comm, "iou-wrk-", 8) == 0;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static void *read_once(void *arg)
{
	struct io_uring_cqe *cqe;
	int fds[2], ret;

	(void)arg;
	atomic_store(&reader_tid, (pid_t)syscall(SYS_gettid));

	if (pipe(fds) || write(fds[1], src, LEN) != LEN)
		exit(1);
	io_uring_prep_read_fixed(io_uring_get_sqe(&ring), fds[0], buf,
				 LEN, 0, 0);
	io_uring_submit(&ring);
	do
		ret = io_uring_wait_cqe(&ring, &cqe);
	while (ret == -EINTR);
	ret = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	ok += ret == LEN;
	canceled += ret == -ECANCELED;
	other += ret != LEN && ret != -ECANCELED;
	worker_seen += iowq_threads() > 0;
	close(fds[0]);
	close(fds[1]);
	atomic_store(&reader_tid, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	int reads = argc > 1 ? atoi(argv[1]) : 2000;
	int storming = !(argc > 2 && strcmp(argv[2], "quiet") == 0);
	int fresh = argc > 3 && strcmp(argv[3], "fresh") == 0;
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	struct iovec iov;
	struct utsname u;
	pthread_t t;

	uname(&u);
	sigaction(SIGUSR1, &sa, NULL);
	int ret = io_uring_queue_init(8, &ring, 0);

	/* Anonymous memory: 6.1 refuses to register file-backed pages, and
	 * the end of .data shares a page with .bss. */
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	iov = (struct iovec){ buf, LEN };

	if (!ret)
		ret = io_uring_register_buffers(&ring, &iov, 1);
	if (ret) {
		fprintf(stderr, "io_uring: %s\n", strerror(-ret));
		return 1;
	}
	memset(src, 0x5a, LEN);
	if (storming)
		pthread_create(&t, NULL, storm, NULL);
	for (int i = 0; i < reads; i++) {
		pthread_t r;

		if (!fresh) {
			read_once(NULL);
			continue;
		}
		pthread_create(&r, NULL, read_once, NULL);
		pthread_join(r, NULL);
	}
	atomic_store(&stop, true);
	if (storming)
		pthread_join(t, NULL);
	printf("%s %s: %d pipe READ_FIXED%s, signals %s: %lu complete, "
	       "%lu -ECANCELED, %lu other; an io-wq worker existed after "
	       "%lu of them\n", u.sysname, u.release, reads,
	       fresh ? " (each from a new thread)" : "",
	       storming ? "storming" : "quiet", ok, canceled, other,
	       worker_seen);
	return 0;
}
