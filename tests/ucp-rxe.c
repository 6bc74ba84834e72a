/* SPDX-License-Identifier: MIT */
/*
 * Description: UCX's UCP tag messages over a real RDMA device (rc_verbs on
 * Soft-RoCE in tests/vm), with UCX's registration cache doing real
 * ibv_reg_mr, through buffers that are freed, unmapped, remapped and
 * madvised between messages, through libc, raw syscalls and io_uring
 * (bridge_churn.c). Two
 * workers of one context, so both ends share UCX's caches and go through
 * the device (self does not reach another worker), connected through
 * rdma_cm (a listener on the device's address, RXE_ADDR, default
 * 10.77.0.1), which needs no auxiliary transport: an endpoint made from a
 * worker address needs ud_verbs for its wireup, as Open MPI's are
 * (mpi-rxe), and UCX 1.13's ud_verbs drops every packet rxe delivers
 * unless UCX_UD_VERBS_ETH_DGID_CHECK=n (docs/bridges.md). Each message is large
 * enough for rendezvous (the receiver RDMA-READs the sender's registered
 * buffer into its own registered buffer), and the receiver checks every
 * byte.
 *
 *   ucp-rxe stale|clean|nocache [rounds] [bytes]
 *
 * stale: UCX's own hooks (the negative control): messages after each
 * raw syscall and after io_uring's madvise must be corrupted. clean: under regcache-run, none may be.
 * Both must cache: a message through the buffers that never change,
 * while the others change around them, must register nothing on the
 * device, and one through a remapped buffer something (the count's
 * control in each run, rxe_mr_count.h). nocache: UCX's cache off
 * (UCX_IB_REG_METHODS=direct), the count's negative control: at least
 * one registration for each unchanged-buffer message, none corrupted.
 * Skips (77) with "No RDMA device found" where /sys/class/infiniband is
 * empty.
 *
 *   ucp-rxe bench REGCACHE_RUN [rounds] [msgs] [bytes]
 *
 * The bridge's cost: messages per second through buffers that never
 * change (7 rounds of 2000 messages of 64 KiB by default), under
 * REGCACHE_RUN and under UCX's own hooks, each a child process of its
 * own, in turns; the median of the rounds' ratios must be >= 0.97.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#include "bridge_churn.h"
#include "rxe_mr_count.h"
#include "median.h"

static unsigned ucp_api_minor(void)
{
	unsigned major, minor, release;

	ucp_get_version(&major, &minor, &release);
	return major > 1 ? 1000 : minor;
}

static ucp_worker_h wa, wb;
static ucp_ep_h ep_b;
static ucs_status_t accept_status = UCS_INPROGRESS;

static void on_conn(ucp_conn_request_h req, void *arg)
{
	ucp_ep_params_t p = {
		.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST,
		.conn_request = req,
	};

	(void)arg;
	accept_status = ucp_ep_create(wb, &p, &ep_b);
}

static ucs_status_t wait_req(void *req)
{
	ucs_status_t st;

	if (req == NULL)
		return UCS_OK;
	if (UCS_PTR_IS_ERR(req))
		return UCS_PTR_STATUS(req);
	do {
		ucp_worker_progress(wa);
		ucp_worker_progress(wb);
		st = ucp_request_check_status(req);
	} while (st == UCS_INPROGRESS);
	ucp_request_free(req);
	return st;
}

#define CHECK_UCS(call)                                                        \
	do {                                                                   \
		ucs_status_t st_ = (call);                                     \
		if (st_ != UCS_OK) {                                           \
			fprintf(stderr, "%s: %s (FAIL)\n", #call,              \
				ucs_status_string(st_));                       \
			return 1;                                              \
		}                                                              \
	} while (0)

/* Workers wa and wb of one context, and an endpoint from wa to wb through
 * rdma_cm. Return: 0, or 1 (printed with FAIL). */
static int connect_workers(ucp_ep_h *ep)
{
	ucp_params_t params = {
		.field_mask = UCP_PARAM_FIELD_FEATURES,
		.features = UCP_FEATURE_TAG,
	};
	ucp_worker_params_t wparams = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SINGLE,
	};
	ucp_config_t *config;
	ucp_context_h ctx;
	const char *ip = getenv("RXE_ADDR") ? getenv("RXE_ADDR") : "10.77.0.1";
	struct sockaddr_in sin = { .sin_family = AF_INET };
	ucp_listener_h listener;
	ucp_listener_attr_t lattr = {
		.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR,
	};

	CHECK_UCS(ucp_config_read(NULL, NULL, &config));
	CHECK_UCS(ucp_init(&params, config, &ctx));
	ucp_config_release(config);
	CHECK_UCS(ucp_worker_create(ctx, &wparams, &wa));
	CHECK_UCS(ucp_worker_create(ctx, &wparams, &wb));
	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1) {
		fprintf(stderr, "RXE_ADDR=%s is not an IPv4 address (FAIL)\n", ip);
		return 1;
	}
	ucp_listener_params_t lparams = {
		.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
			      UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
		.sockaddr = { (struct sockaddr *)&sin, sizeof(sin) },
		.conn_handler = { on_conn, NULL },
	};
	CHECK_UCS(ucp_listener_create(wb, &lparams, &listener));
	CHECK_UCS(ucp_listener_query(listener, &lattr));
	ucp_ep_params_t eparams = {
		.field_mask = UCP_EP_PARAM_FIELD_FLAGS |
			      UCP_EP_PARAM_FIELD_SOCK_ADDR,
		.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
		.sockaddr = { (struct sockaddr *)&lattr.sockaddr,
			      sizeof(struct sockaddr_in) },
	};
	CHECK_UCS(ucp_ep_create(wa, &eparams, ep));
	while (accept_status == UCS_INPROGRESS) {
		ucp_worker_progress(wa);
		ucp_worker_progress(wb);
	}
	CHECK_UCS(accept_status);
	return 0;
}

/* One tag message of @len from @sbuf to @rbuf, completed at both ends. */
static int send_one(ucp_ep_h ep, void *sbuf, void *rbuf, size_t len,
		    ucp_tag_t tag)
{
	ucp_request_param_t p = { .op_attr_mask = 0 };
	void *rreq = ucp_tag_recv_nbx(wb, rbuf, len, tag, ~0ull, &p);
	void *sreq = ucp_tag_send_nbx(ep, sbuf, len, tag, &p);

	CHECK_UCS(wait_req(sreq));
	CHECK_UCS(wait_req(rreq));
	return 0;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/*
 * The cost measure, one side: @msgs messages of @len through one pair of
 * buffers that never changes (every lookup a hit, at both ends), after
 * 100 to warm up; prints the rate on one line for the parent. @bridge:
 * whether regcache's UCX bridge must be forwarding (regcache-run) or
 * absent (UCX's own hooks); a run in the other state fails.
 */
static int bench_child(bool bridge, unsigned msgs, size_t len)
{
	long (*forwarded)(void) = (long (*)(void))dlsym(
		RTLD_DEFAULT, "regcache_ucx_bridge_forwarded");
	char *sbuf = malloc(len), *rbuf = malloc(len);
	double t0, t1;
	ucp_ep_h ep;

	if (!sbuf || !rbuf || !msgs)
		return 1;
	memset(sbuf, 0x5a, len);
	memset(rbuf, 0, len);
	if (connect_workers(&ep))
		return 1;
	for (unsigned i = 0; i < 100; i++)
		if (send_one(ep, sbuf, rbuf, len, i))
			return 1;
	if (bridge != (forwarded && forwarded() >= 0)) {
		printf("ucp-rxe bench: the bridge is %s (FAIL)\n",
		       bridge ? "not forwarding" : "present");
		return 1;
	}
	t0 = now_s();
	for (unsigned i = 0; i < msgs; i++)
		if (send_one(ep, sbuf, rbuf, len, i))
			return 1;
	t1 = now_s();
	if (memcmp(sbuf, rbuf, len)) {
		printf("ucp-rxe bench: the message arrived changed (FAIL)\n");
		return 1;
	}
	printf("rate %.1f\n", msgs / (t1 - t0));
	return 0;
}

/* Run @cmd, a bench child; its rate, or -1 (printed with FAIL). */
static double bench_run(char *const *cmd, bool bridge)
{
	int fd[2], status;
	char buf[8192];
	size_t n = 0;
	ssize_t r;
	double rate = -1;
	const char *line;
	pid_t pid;

	fflush(stdout);
	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		close(fd[0]);
		close(fd[1]);
		/* UCX's default hooks; regcache-run sets its own mode. */
		unsetenv("UCX_MEM_MMAP_HOOK_MODE");
		execv(cmd[0], cmd);
		_exit(127);
	}
	close(fd[1]);
	while (n < sizeof(buf) - 1 &&
	       (r = read(fd[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(fd[0]);
	waitpid(pid, &status, 0);
	line = strstr(buf, "rate ");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && line)
		rate = atof(line + 5);
	else
		printf("ucp-rxe bench: a run (%s) failed (FAIL):\n%s",
		       bridge ? "regcache-run" : "UCX's hooks", buf);
	return rate;
}

/*
 * ucp-rxe bench REGCACHE_RUN [rounds] [msgs] [bytes]: messages per second
 * through unchanged buffers under regcache-run and under UCX's own hooks,
 * each in a process of its own (UCX reads the hook mode at exec), the two
 * taking turns at going first. Prints the medians and the median of the
 * rounds' ratios, which must be at least 0.97.
 */
static int bench_parent(int argc, char **argv)
{
	static char def_msgs[] = "2000", def_bytes[] = "65536";
	static char hooks_mode[] = "bench-hooks";
	static char bridge_mode[] = "bench-bridge";
	unsigned rounds = argc > 3 ? (unsigned)atoi(argv[3]) : 7;
	char *msgs = argc > 4 ? argv[4] : def_msgs;
	char *bytes = argc > 5 ? argv[5] : def_bytes;
	char *hooks[] = { argv[0], hooks_mode, msgs, bytes, NULL };
	char *bridge[] = { argv[2], argv[0], bridge_mode, msgs, bytes, NULL };
	double rh[64], rb[64], ratio[64], mr;

	if (rounds < 1 || rounds > 64) {
		fprintf(stderr, "ucp-rxe bench: 1 to 64 rounds\n");
		return 2;
	}
	for (unsigned i = 0; i < rounds; i++) {
		bool bridge_first = i % 2;

		if (bridge_first)
			rb[i] = bench_run(bridge, true);
		rh[i] = bench_run(hooks, false);
		if (!bridge_first)
			rb[i] = bench_run(bridge, true);
		if (rh[i] <= 0 || rb[i] <= 0)
			return 1;
		ratio[i] = rb[i] / rh[i];
		printf("ucp-rxe bench: round %u: UCX's hooks %.0f msgs/s, "
		       "regcache-run %.0f msgs/s, ratio %.3f\n", i + 1, rh[i],
		       rb[i], ratio[i]);
		fflush(stdout);
	}
	mr = median_of(ratio, rounds);
	printf("ucp-rxe bench: UCX %s, %s messages of %s bytes through "
	       "unchanged buffers, %u rounds: UCX's hooks %.0f msgs/s, "
	       "regcache-run %.0f msgs/s (medians), ratio %.3f (median of "
	       "the rounds')\n", ucp_get_version_string(), msgs, bytes, rounds,
	       median_of(rh, rounds), median_of(rb, rounds), mr);
	if (mr < 0.97) {
		printf("ucp-rxe bench: ratio below 0.97 (FAIL)\n");
		return 1;
	}
	printf("ucp-rxe bench: PASS\n");
	return 0;
}

int main(int argc, char **argv)
{
	enum mr_count_mode mode;
	unsigned rounds;
	size_t len;
	struct mr_count count;
	ucp_ep_h ep;
	struct churn tx, rx;

	if (argc > 1 && !strncmp(argv[1], "bench", 5)) {
		if (!have_rdma_device()) {
			printf("No RDMA device found (/sys/class/infiniband is "
			       "empty): skipped\n");
			return 77;
		}
		if (!strcmp(argv[1], "bench") && argc > 2)
			return bench_parent(argc, argv);
		if (!strcmp(argv[1], "bench-hooks") && argc > 3)
			return bench_child(false, (unsigned)atoi(argv[2]),
					   (size_t)atol(argv[3]));
		if (!strcmp(argv[1], "bench-bridge") && argc > 3)
			return bench_child(true, (unsigned)atoi(argv[2]),
					   (size_t)atol(argv[3]));
	}
	if (mr_count_args(argc, argv, &mode, &rounds, &len)) {
		fprintf(stderr, "usage: ucp-rxe stale|clean|nocache [rounds] "
			"[bytes]\n       ucp-rxe bench REGCACHE_RUN [rounds] "
			"[msgs] [bytes]\n");
		return 2;
	}
	/* Before UCX reads its configuration. */
	if (mode == MR_COUNT_NOCACHE) {
		/* UCT's cache, and (UCX >= 1.14) UCP's own in front of it. */
		setenv("UCX_IB_REG_METHODS", "direct", 1);
		if (ucp_api_minor() >= 14)
			setenv("UCX_RCACHE_ENABLE", "n", 1);
	}
	if (!rdma_device_or_skip())
		return 77;
	if (churn_init(&tx, CHURN_SENDER, len) ||
	    churn_init(&rx, CHURN_RECEIVER, len)) {
		fprintf(stderr, "churn_init failed (FAIL)\n");
		return 1;
	}

	if (connect_workers(&ep))
		return 1;

	if (mr_count_begin(&count))
		return 1;
	for (unsigned r = 0; r < rounds; r++) {
		for (int k = 0; k < CHURN_NKINDS; k++) {
			ucp_request_param_t p = { .op_attr_mask = 0 };
			ucp_tag_t tag = (ucp_tag_t)r << 8 | (ucp_tag_t)k;
			char *sbuf = churn_next(&tx, r, k);
			char *rbuf = churn_next(&rx, r, k);
			void *rreq, *sreq;

			if (!sbuf || !rbuf)
				return 1;
			bool counted = mr_count_counts(r, k);

			if (counted)
				mr_count_msg_begin(&count);
			rreq = ucp_tag_recv_nbx(wb, rbuf, len, tag, ~0ull, &p);
			sreq = ucp_tag_send_nbx(ep, sbuf, len, tag, &p);
			CHECK_UCS(wait_req(sreq));
			CHECK_UCS(wait_req(rreq));
			if (counted)
				mr_count_msg_end(&count, k);
			churn_check(&rx, r, k, rbuf);
		}
		if (r == 0) {
			printf("ucp-rxe: UCX %s, rendezvous scheme %s\n",
			       ucp_get_version_string(),
			       getenv("UCX_RNDV_SCHEME") ? getenv("UCX_RNDV_SCHEME") : "auto");
			ucp_ep_print_info(ep, stdout);
		}
	}

	/* Exit without tearing down: the pending wireup of a closed endpoint
	 * is not what this checks. */
	return mr_count_mode_verdict(&count, &rx, rounds, mode,
				     "ucp-rxe",
				     "UCX's own memory hooks",
				     "UCX with its registration cache off",
				     "corruption after raw syscalls and "
				     "io_uring (UCX's hooks cannot see "
				     "them)");
}
