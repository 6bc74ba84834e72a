/* SPDX-License-Identifier: MIT */
/*
 * What the running kernel calls the events the eBPF programs attach to.
 * The programs are compiled once, against the build machine's BTF; a
 * tracepoint that another kernel names differently is pointed at that
 * name before the load. Shared by the in-process monitor (bpf.c) and the
 * node service (src/daemon/bpf_set.c).
 */
#ifndef RC_MONITOR_BPF_KERNEL_H
#define RC_MONITOR_BPF_KERNEL_H

#include <bpf/libbpf.h>
#include <stddef.h>

/**
 * rc_bpf_fit_uring() - point the io_uring submission program at this kernel
 * @submit: the tp_btf program written for io_uring_submit_req
 * @why:    filled with a sentence when the kernel has neither name
 * @len:    size of @why
 *
 * Linux 6.2 renamed io_uring_submit_sqe(req, force_nonblock) to
 * io_uring_submit_req(req); both take the request first, which is all the
 * program reads. Before 5.5 neither exists, and IORING_OP_MADVISE does not
 * either.
 *
 * Return: 0 when @submit attaches to the submission event of this kernel
 * (renamed if needed); -ENOENT when there is none (@why says so; the
 * caller leaves @submit out); -errno when the kernel's BTF cannot be read.
 */
int rc_bpf_fit_uring(struct bpf_program *submit, char *why, size_t len);

#endif
