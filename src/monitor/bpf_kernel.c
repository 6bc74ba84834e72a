/* SPDX-License-Identifier: MIT */
/* Tracepoint names of the running kernel (see bpf_kernel.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <bpf/btf.h>

#include "bpf_kernel.h"

/* A tp_btf program attaches to the typedef btf_trace_<event>. */
static bool has_tracepoint(const struct btf *vmlinux, const char *event)
{
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", event);
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
}

int rc_bpf_fit_uring(struct bpf_program *submit, char *why, size_t len)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int ret = 0;

	if (!vmlinux)
		return errno ? -errno : -ENOENT;
	if (has_tracepoint(vmlinux, "io_uring_submit_req"))
		ret = 0;
	else if (has_tracepoint(vmlinux, "io_uring_submit_sqe"))
		ret = bpf_program__set_attach_target(submit, 0,
						     "io_uring_submit_sqe");
	else {
		snprintf(why, len, "the kernel has no io_uring_submit_req or "
			 "io_uring_submit_sqe tracepoint");
		ret = -ENOENT;
	}
	btf__free(vmlinux);
	return ret;
}
