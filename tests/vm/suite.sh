#!/bin/bash
# The test suite on a stock distribution kernel: builds the tests on the
# host (RelWithDebInfo, -Werror, in build-vm/) and runs a named subset of
# them with CTest inside the guest of tests/vm/run.sh, as root, with a
# Soft-RoCE device. Fails when a test fails, and when a test skips that is
# not listed, with its reason, in tests/vm/skips-<kernel major.minor>:
# in the guest every monitor, the daemon and the RDMA device are there, so
# a skip is a regression unless that kernel truly lacks what it needs.
#
# Usage: tests/vm/suite.sh [ci|full] [run.sh options...]
#   ci   (default) the monitors, the DMA-checked scenarios, regcached, the
#        bridges, verbs on rxe0, chaos; what CI runs
#   full every test of the build, the slow fuzz, allocator and valgrind
#        ones included
# REGCACHE_VM_BUILD names another build directory (already configured).
set -euo pipefail
cd "$(dirname "$0")/../.."

subset=ci
case "${1:-}" in ci|full) subset=$1; shift ;; esac

build=${REGCACHE_VM_BUILD:-build-vm}
if [ -z "${REGCACHE_VM_BUILD:-}" ]; then
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREGCACHE_WERROR=ON >/dev/null
fi
cmake --build "$build" -j "$(nproc)" >/dev/null

# What CI runs: everything a stock kernel changes (monitors, daemon, RDMA,
# MPI and the bridges, chaos), not the pure data-structure and fuzz tests,
# whose result does not depend on the kernel and which the host runs in
# three builds. Left to `full`: the allocator variants, and the tests
# whose point is an interleaving that emulation makes too slow to reach
# or reaches differently (monitor-race's 100000 reuses outran 300 s under
# TCG; bridge-fabric-gap-nocheck's negative control needs the host's
# timing to go stale).
ci_labels='monitor|bpf|uffd|regcached|verbs|rdma|mpi|bridge|chaos|fork|limits|info'
ci_exclude='fuzz|valgrind|@.*\+(jemalloc|mimalloc|tcmalloc)|^monitor-race@|^bridge-fabric-gap-nocheck$'
ctest_args=(--test-dir "$build" --timeout 900 --output-on-failure)
kernel_guess=$(tests/vm/run.sh --print-kernel "$@" 2>/dev/null || true)
known=tests/vm/known-failures-${kernel_guess}
known_re=
if [ -f "$known" ]; then
	known_re=$(awk '!/^#/ && NF { printf "%s^%s$", sep, $1; sep = "|" }' "$known")
fi
if [ "$subset" = ci ]; then
	ctest_args+=(-L "$ci_labels" -E "$ci_exclude${known_re:+|$known_re}")
	if [ -n "$known_re" ]; then
		echo "=== known failures on $kernel_guess, not run (see $known):"
		awk '!/^#/ && NF { print "    " $0 }' "$known"
	fi
fi

# The bulk runs with the eBPF monitor attached by sys_enter/sys_exit:
# under emulation, attaching its 56 fentry programs takes 1-8 s at each
# monitor start, which the daemon's restarts and the forks multiply.
# Then the scenarios and chaos again by fentry, the default on 6.1.
fentry_tests='^(monitor-(munmap|mremap|madvise|map-fixed|sbrk|free-malloc|in-use|uring-madvise|fork)@bpf|chaos@bpf|bpf-attach-mode|bpf-syscall-tax|bpf-int80)$'
guest_cmd=$(printf '%q ' ctest "${ctest_args[@]}")
if [ "$subset" = ci ]; then
	guest_cmd="REGCACHE_BPF_ATTACH=syscalls $guest_cmd; a=\$?;"
	guest_cmd+=" echo '=== again, the eBPF monitor attached by fentry';"
	guest_cmd+=" REGCACHE_BPF_ATTACH=fentry ctest --test-dir $(printf %q "$build")"
	guest_cmd+=" --timeout 900 --output-on-failure -R '$fentry_tests'; b=\$?;"
	guest_cmd+=' [ $a = 0 ] && exit $b; exit $a'
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
tests/vm/run.sh "$@" -- sh -c "$guest_cmd" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
[ "$status" != 125 ] || { echo "=== the guest did not run the suite (above)" >&2; exit 1; }

kver=$(sed -n 's/^tests\/vm: kernel \([0-9]*\.[0-9]*\).*/\1/p' "$log" | head -n1)
allowed=tests/vm/skips-$kver
unexpected=()
while read -r name; do
	if [ ! -f "$allowed" ] ||
		! awk -v n="$name" '$1 == n { found = 1 } END { exit !found }' "$allowed"; then
		unexpected+=("$name")
	fi
done < <(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$log")
if [ ${#unexpected[@]} -gt 0 ]; then
	echo "=== skipped in the guest on $kver, not in $allowed: ${unexpected[*]}" >&2
	status=1
fi
if [ "$status" = 0 ]; then
	echo "=== guest suite ($subset) passed on Linux $kver"
else
	echo "=== guest suite ($subset) FAILED on Linux $kver" >&2
fi
exit "$status"
