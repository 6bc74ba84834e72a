/* SPDX-License-Identifier: MIT */
/*
 * Description: under the userfaultfd monitor, a get of an address in page
 * 0 (regcache_get(c, (void *)1, 1, ...)) returns -EFAULT and logs no
 * internal error: the watch of [0, 4096) that precedes the failed pin is
 * balanced by its unwatch (the watch table once lost ranges that start
 * at address 0, and the unwatch then logged "... not watched (bug)").
 * The log (stderr, at debug level) is captured around the call; control:
 * the capture holds the library's own lines about the failed pin.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"

/* Run @fn with stderr redirected to a memfd; returns what it printed. */
static char *capture_stderr(void (*fn)(struct regcache *), struct regcache *c)
{
	static char out[8192];
	int fd = memfd_create("stderr", 0), saved = dup(2);
	ssize_t n;

	T_REQUIRE(fd >= 0 && saved >= 0);
	fflush(stderr);
	T_REQUIRE(dup2(fd, 2) == 2);
	fn(c);
	fflush(stderr);
	T_REQUIRE(dup2(saved, 2) == 2);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = 0;
	return out;
}

static int get_ret;

static void get_page_zero(struct regcache *c)
{
	struct regcache_region *r = NULL;

	get_ret = regcache_get(c, (void *)1, 1, 0, &r);
}

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	const char *log;

	/* Warnings and errors are logged by default; ask for debug lines
	 * too, so that the control below sees the failed pin. */
	setenv("REGCACHE_LOG", "debug", 1);
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	for (int i = 0; i < 3; i++) {
		log = capture_stderr(get_page_zero, c);
		T_EXPECT_EQ(-EFAULT, get_ret);
		if (strstr(log, "(bug)") || strstr(log, "not watched")) {
			fprintf(stderr, "get of page 0 logged an internal "
				"error:\n%s", log);
			t_failures++;
		}
		/* Control: the capture works (the library said something
		 * about this get at debug level). */
		if (i == 0 && !log[0]) {
			fprintf(stderr, "control: nothing was captured\n");
			t_failures++;
		}
	}
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
