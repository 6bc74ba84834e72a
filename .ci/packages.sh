#!/bin/sh
# The Debian packages that build regcache and run its tests, for the
# release named by $1 (a codename) or, without it, the running one
# (/etc/os-release). Names that differ between releases are chosen here:
# mimalloc's library (libmimalloc2.0 in Debian 12, libmimalloc3 in 13) and
# clang's compiler runtime (libFuzzer, the shared ASan runtime), which
# clang keeps in a package it only recommends: libclang-rt-14-dev in
# Debian 12, libclang-rt-19-dev in 13.
codename=${1:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}
echo build-essential cmake pkg-config liburing-dev libbsd-dev libbpf-dev bpftool clang
echo libibverbs-dev libucx-dev libfabric-dev valgrind file man-db openmpi-bin libopenmpi-dev
echo libjemalloc2 libtcmalloc-minimal4 iproute2 ibverbs-providers ibverbs-utils
case "$codename" in
bookworm) echo libmimalloc2.0 libclang-rt-14-dev ;;
*) echo libmimalloc3 libclang-rt-19-dev ;;
esac
# The guests of tests/vm/ (busybox and kmod pack their initramfs; sshd is
# the launcher between the guests of run.sh --nodes, started only there).
echo qemu-system-x86 busybox-static cpio kmod openssh-server
