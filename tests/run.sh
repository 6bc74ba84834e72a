#!/bin/bash
# Runs the regcache test suite. Needs the packages of .ci/packages.sh; run
# as root, so that the eBPF, userfaultfd and regcached tests run for real
# (as an ordinary user they skip, loudly).
#
# Usage: tests/run.sh [quick|rest|full]     (default: quick)
#        tests/run.sh PART...               (plain asan tsan vm, each in full)
#
#   quick  README's second command, about 15 minutes on 2 cores:
#          - plain: the RelWithDebInfo build, every test;
#          - asan, tsan: AddressSanitizer+UndefinedBehaviorSanitizer and
#            ThreadSanitizer builds of the tests of concurrency and memory
#            (labels stress, chaos, fork, core, cache, unit, regcached), only
#            their programs built;
#          - vm: the RDMA tests, which need a device this host may lack, on
#            the release's stock kernel (Debian 12: 6.1, Debian 13: 6.12)
#            in a QEMU guest with Soft-RoCE over this machine's root (the
#            catalogue of changes on rxe0 and its negative control, UCP,
#            libfabric and Open MPI under regcache-run and their controls).
#   rest   what quick leaves out: the other tests of both sanitizer builds
#          and the rest of the guest's CI subset (tests/vm/suite.sh ci).
#   full   quick, then rest: every test in every build; what CI runs.
#
# A failing part does not stop the others: the summary names every part
# that failed. REGCACHE_TEST_STRESS=N makes the timed stress tests (chaos,
# kill-cycle, signal-storm, fuzzing) N times longer: a soak run.
# docs/testing.md says what each part covers and how to run one test.
set -euo pipefail
cd "$(dirname "$0")/.."

# The sanitizer builds' share of quick, and the guest's.
san_labels='stress|chaos|fork|core|cache|unit|regcached'
vm_quick='^(changes-rxe@(bpf|userfaultfd|regcached)|changes-rxe-naive|ucp-rxe(-put)?(-run@bpf|-run@regcached)?|fabric-rxe(-run@bpf)?|mpi-rxe-ucx(-run@bpf)?|mpi-rxe-ofi-run@bpf)$'

# The eBPF monitor's per-syscall tracepoints need tracefs.
if [ "$(id -u)" = 0 ] && [ ! -e /sys/kernel/tracing/events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

case "${1:-quick}" in
quick) parts=(plain asan:quick tsan:quick vm:quick) ;;
rest) parts=(asan:rest tsan:rest vm:rest) ;;
full) parts=(plain asan:quick tsan:quick vm:quick asan:rest tsan:rest vm:rest) ;;
*) parts=("$@") ;;
esac
jobs=$(nproc)
failed=()

# Configure build-test-CFG for a configuration.
configure() {
	local flags=()
	case "$1" in
	plain) ;;
	asan) flags=(-DREGCACHE_SANITIZE=address,undefined) ;;
	tsan) flags=(-DREGCACHE_SANITIZE=thread) ;;
	esac
	cmake -S . -B "build-test-$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DREGCACHE_WERROR=ON -DREGCACHE_TEST_STRESS="${REGCACHE_TEST_STRESS:-1}" \
		"${flags[@]}" >/dev/null
}

# The programs that the tests selected by ctest ARGS run: every file of
# the build's tests/ and tools/ named in their add_test() lines (before the
# build, when CTest cannot resolve them yet).
programs_of() {
	local dir=$1; shift
	ctest --test-dir "$dir" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p' |
		awk 'NR == FNR { want[$1] = 1; next }
		     /^add_test\(/ { n = $0; sub(/^add_test\(/, "", n); sub(/ .*/, "", n)
				     if (n in want) print }' - "$dir/tests/CTestTestfile.cmake" |
		grep -o "$(realpath "$dir")/\(tests\|tools\)/[^\"/ ]*" |
		xargs -r -n1 basename | sort -u
}

run_part() { # CFG[:quick|:rest]
	local cfg=${1%%:*} sel=${1#*:} dir select=() targets
	[ "$sel" != "$1" ] || sel=all
	if [ "$cfg" = vm ]; then
		case "$sel" in
		quick) select=(--only "$vm_quick") ;;
		rest) select=(--except "$vm_quick") ;;
		esac
		# The plain build's programs (suite.sh brings them up to date).
		configure plain || return
		REGCACHE_VM_BUILD=build-test-plain tests/vm/suite.sh ci "${select[@]}"
		return
	fi
	case "$cfg" in
	plain|asan|tsan) ;;
	*) echo "unknown part $1 (plain, asan, tsan, vm; quick, rest, full)" >&2; exit 2 ;;
	esac
	dir=build-test-$cfg
	configure "$cfg" || return
	case "$sel" in
	quick) select=(-L "$san_labels" -LE rdma) ;;
	rest) select=(-LE "$san_labels") ;;
	esac
	if [ "$sel" != quick ]; then
		# Most tests, and what they load that no add_test() names (the
		# bridges' preload libraries, the man pages): everything.
		cmake --build "$dir" -j "$jobs" >/dev/null || return
	else
		# Only what the selected tests run (and what those depend on).
		targets=$(programs_of "$dir" "${select[@]}" |
			grep -Fxf <(cmake --build "$dir" --target help | sed -n 's/^\.\.\. //p') || true)
		# shellcheck disable=SC2086 # one target a word
		cmake --build "$dir" -j "$jobs" --target regcache $targets >/dev/null ||
			return
	fi
	# Serial: monitor tests count attached BPF programs and VMAs, and the
	# race tests need both cores.
	(cd "$dir" && ctest --output-on-failure --timeout 600 "${select[@]}")
}

for part in "${parts[@]}"; do
	echo "=== $part ($(date +%T))"
	start=$SECONDS
	run_part "$part" || failed+=("$part")
	echo "=== $part: $((SECONDS - start)) s"
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "=== tests FAILED in: ${failed[*]} ===" >&2
	exit 1
fi
echo "=== all passed: ${parts[*]} ($((SECONDS / 60)) min $((SECONDS % 60)) s)"
