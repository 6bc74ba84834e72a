/* SPDX-License-Identifier: MIT */
/* What the running kernel offers the programs (see bpf_kernel.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/bpf.h>

#include "../base/env.h"
#include "bpf_kernel.h"

const char *rc_bpf_attach_name(enum rc_bpf_attach mode)
{
	switch (mode) {
	case RC_BPF_ATTACH_FENTRY:
		return "fentry";
	case RC_BPF_ATTACH_SYSCALLS:
		return "syscalls";
	case RC_BPF_ATTACH_AUTO:
		break;
	}
	return "auto";
}

int rc_bpf_attach_wanted(enum rc_bpf_attach *want)
{
	/* The order of env.c's choices. */
	static const enum rc_bpf_attach modes[] = {
		RC_BPF_ATTACH_AUTO, RC_BPF_ATTACH_FENTRY, RC_BPF_ATTACH_SYSCALLS
	};
	int i = rc_env_choice_strict(RC_ENV_BPF_ATTACH);

	*want = RC_BPF_ATTACH_AUTO;
	if (i < 0)
		return -EINVAL;
	*want = modes[i];
	return 0;
}

/* A tp_btf program attaches to the typedef btf_trace_<event>. */
static bool has_tracepoint(const struct btf *vmlinux, const char *event)
{
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", event);
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
}

static int fit_uring(const struct btf *vmlinux, struct bpf_program *submit,
		     struct bpf_program *complete, struct rc_bpf_fit *fit)
{
	fit->uring = true;
	if (has_tracepoint(vmlinux, "io_uring_submit_req"))
		return 0;
	if (has_tracepoint(vmlinux, "io_uring_submit_sqe"))
		return bpf_program__set_attach_target(submit, 0,
						      "io_uring_submit_sqe");
	snprintf(fit->uring_why, sizeof(fit->uring_why),
		 "the kernel has no io_uring_submit_req or io_uring_submit_sqe "
		 "tracepoint");
	fit->uring = false;
	bpf_program__set_autoload(submit, false);
	bpf_program__set_autoload(complete, false);
	return 0;
}

/* "fentry/X" or "fexit/X": X; NULL for any other program. */
static const char *fentry_target(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);

	if (!strncmp(sec, "fentry/", 7))
		return sec + 7;
	if (!strncmp(sec, "fexit/", 6))
		return sec + 6;
	return NULL;
}

static bool is_syscall_tracepoint(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);

	return !strcmp(sec, "tp_btf/sys_enter") ||
	       !strcmp(sec, "tp_btf/sys_exit");
}

/*
 * Can a fentry program attach here? Load one that does nothing on
 * __x64_sys_munmap and attach it for a moment. Kernels refuse at either
 * step: Linux 6.18 built without fentry support here says EPERM at the
 * load, before the verifier runs (docs/kernel-facts.md); a kernel without
 * CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS or without a BPF trampoline for
 * its architecture refuses the attach. A handful of syscalls, against
 * loading 56 programs to find out.
 */
static int probe_fentry(int btf_id, char *why, size_t len)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = BPF_TRACE_FENTRY,
		    .attach_btf_id = (__u32)btf_id);
	int fd, link, err;

	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "rc_fe_probe", "GPL", insns,
			   sizeof(insns) / sizeof(insns[0]), &opts);
	if (fd < 0) {
		err = errno;
		snprintf(why, len, "the kernel refuses to load a fentry "
			 "program (%s)", strerror(err));
		return -err;
	}
	link = bpf_raw_tracepoint_open(NULL, fd);
	err = link < 0 ? errno : 0;
	close(fd);
	if (link < 0) {
		snprintf(why, len, "the kernel refuses to attach a fentry "
			 "program (%s%s)", strerror(err),
			 err == 524 || err == EOPNOTSUPP ?
			 ": no BPF trampoline (CONFIG_DYNAMIC_FTRACE_WITH_"
			 "DIRECT_CALLS)" : "");
		return -err;
	}
	close(link);
	return 0;
}

/* Leave out the programs of the way not taken. */
static unsigned choose(struct bpf_object *obj, bool fentry)
{
	struct bpf_program *prog;
	unsigned n = 0;

	bpf_object__for_each_program(prog, obj) {
		if (fentry_target(prog)) {
			if (!fentry)
				bpf_program__set_autoload(prog, false);
			else if (bpf_program__autoload(prog))
				n++;
		} else if (fentry && is_syscall_tracepoint(prog)) {
			bpf_program__set_autoload(prog, false);
		}
	}
	return n;
}

/* Does every fentry target exist? Leaves out the __ia32_ programs on a
 * kernel without an i386 entry (nothing can make those calls there).
 * Returns false with @why naming the first missing function. */
static bool targets_exist(const struct btf *vmlinux, struct bpf_object *obj,
			  char *why, size_t len)
{
	bool ia32 = btf__find_by_name_kind(vmlinux, "__ia32_sys_munmap",
					   BTF_KIND_FUNC) > 0;
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		const char *target = fentry_target(prog);

		if (!target)
			continue;
		if (!ia32 && !strncmp(target, "__ia32_", 7)) {
			bpf_program__set_autoload(prog, false);
			continue;
		}
		if (btf__find_by_name_kind(vmlinux, target, BTF_KIND_FUNC) <= 0) {
			/* A call this kernel names otherwise: a hook on
			 * the old name alone would miss it. */
			snprintf(why, len, "the kernel's BTF has no function "
				 "%s", target);
			return false;
		}
	}
	return true;
}

int rc_bpf_fit(struct bpf_object *obj, struct bpf_program *submit,
	       struct bpf_program *uring_complete, enum rc_bpf_attach want,
	       struct rc_bpf_fit *fit)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	char refused[160] = "";
	int ret, id;

	memset(fit, 0, sizeof(*fit));
	if (!vmlinux)
		return errno ? -errno : -ENOENT;
	ret = fit_uring(vmlinux, submit, uring_complete, fit);
	if (ret)
		goto out;
	if (want != RC_BPF_ATTACH_SYSCALLS &&
	    targets_exist(vmlinux, obj, refused, sizeof(refused))) {
		id = btf__find_by_name_kind(vmlinux, "__x64_sys_munmap",
					    BTF_KIND_FUNC);
		if (!probe_fentry(id, refused, sizeof(refused))) {
			fit->mode = RC_BPF_ATTACH_FENTRY;
			fit->nfentry = choose(obj, true);
			snprintf(fit->why, sizeof(fit->why),
				 "fentry/fexit on the %u entry points of the "
				 "decoded calls%s", fit->nfentry / 2,
				 want == RC_BPF_ATTACH_FENTRY ?
				 " (REGCACHE_BPF_ATTACH=fentry)" : "");
			goto out;
		}
	}
	if (want == RC_BPF_ATTACH_FENTRY) {
		snprintf(fit->why, sizeof(fit->why),
			 "REGCACHE_BPF_ATTACH=fentry, but %s", refused);
		ret = -EOPNOTSUPP;
		goto out;
	}
	fit->mode = RC_BPF_ATTACH_SYSCALLS;
	choose(obj, false);
	if (want == RC_BPF_ATTACH_SYSCALLS)
		snprintf(fit->why, sizeof(fit->why), "sys_enter/sys_exit "
			 "(REGCACHE_BPF_ATTACH=syscalls): every syscall of the "
			 "machine runs a program");
	else
		snprintf(fit->why, sizeof(fit->why), "sys_enter/sys_exit: "
			 "every syscall of the machine runs a program, "
			 "because %s", refused);
out:
	btf__free(vmlinux);
	return ret;
}
