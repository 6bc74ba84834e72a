#!/bin/bash
# Runs the whole regcache test suite in three builds: plain (RelWithDebInfo),
# AddressSanitizer+UndefinedBehaviorSanitizer, and ThreadSanitizer; then
# (vm) its kernel-dependent part on Debian 12's stock kernel in a QEMU
# guest with a Soft-RoCE device (tests/vm/suite.sh ci, docs/vm.md).
# Needs the packages listed in README.md. Run as root so the userfaultfd and
# eBPF monitor tests run for real (as unprivileged user they skip, loudly).
#
# Usage: tests/run.sh [plain|asan|tsan|vm ...]   (default: all four)
# REGCACHE_TEST_STRESS=N makes the timed stress tests (chaos, kill-cycle,
# signal-storm, fuzzing) N times longer than in CI: a soak run.
set -euo pipefail
cd "$(dirname "$0")/.."

# The eBPF monitor's per-syscall tracepoints need tracefs.
if [ "$(id -u)" = 0 ] && [ ! -e /sys/kernel/tracing/events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(plain asan tsan vm)
jobs=$(nproc)
failed=()
for cfg in "${configs[@]}"; do
	if [ "$cfg" = vm ]; then
		echo "=== vm: the CI subset on a stock kernel (tests/vm/suite.sh) ==="
		# The plain build's programs, when this run made them.
		vm_build=()
		[ -d build-test-plain ] && [[ " ${configs[*]} " == *" plain "* ]] &&
			vm_build=(env REGCACHE_VM_BUILD=build-test-plain)
		"${vm_build[@]}" tests/vm/suite.sh ci || failed+=("$cfg")
		continue
	fi
	case "$cfg" in
	plain) flags=() ;;
	asan) flags=(-DREGCACHE_SANITIZE=address,undefined) ;;
	tsan) flags=(-DREGCACHE_SANITIZE=thread) ;;
	*) echo "unknown configuration $cfg (plain, asan, tsan, vm)" >&2; exit 2 ;;
	esac
	dir=build-test-$cfg
	echo "=== $cfg build ($dir) ==="
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREGCACHE_WERROR=ON \
		-DREGCACHE_TEST_STRESS="${REGCACHE_TEST_STRESS:-1}" "${flags[@]}" >/dev/null
	cmake --build "$dir" -j "$jobs" >/dev/null
	# Serial: monitor tests count attached BPF programs and VMAs, and
	# the race tests need both cores.
	# A failing build does not stop the others: CI reports all three.
	(cd "$dir" && ctest --output-on-failure --timeout 600) || failed+=("$cfg")
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "=== tests FAILED in: ${failed[*]} ===" >&2
	exit 1
fi
echo "=== all test builds passed: ${configs[*]} ==="
