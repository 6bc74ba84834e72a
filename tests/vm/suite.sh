#!/bin/bash
# The test suite on a stock distribution kernel: builds the tests on the
# host (RelWithDebInfo, -Werror, in build-vm/) and runs a named subset of
# them with CTest inside the guest of tests/vm/run.sh, as root, with a
# Soft-RoCE device. Fails when a test fails, and when a test skips that is
# not listed, with its reason, in tests/vm/skips-<kernel major.minor>:
# in the guest every monitor, the daemon and the RDMA device are there, so
# a skip is a regression unless that kernel truly lacks what it needs.
#
# Usage: tests/vm/suite.sh [ci|full] [--shards N] [run.sh options...]
#   ci   (default) the monitors, the DMA-checked scenarios, regcached, the
#        bridges, verbs on rxe0, chaos; what CI runs
#   full every test of the build, the slow fuzz, allocator and valgrind
#        ones included
#   --shards N  split the tests over N guests run side by side (default:
#        one more than the host's CPUs, at most 4, and no more than its
#        free memory holds at 2.5 GiB a guest). A guest's vCPUs are host
#        threads under TCG, and a guest waits part of the time (its tests
#        sleep, it boots), so on two cores three guests take 4.5 min
#        where two take 5.6 and one 11.
#        The tests are dealt out longest first by what they cost in the
#        guest last time (tests/vm/costs-<kernel>; each run writes the
#        figures it measured to <build>/vm-costs-<kernel>), else by the
#        host's CTest costs.
#   --only REGEX  of those, only the tests whose names match
#   --except REGEX  of those, not the tests whose names match
# REGCACHE_VM_BUILD names another build directory (already configured);
# with REGCACHE_VM_BUILT=1 it is used as it is, not rebuilt on the host.
set -euo pipefail
cd "$(dirname "$0")/../.."

subset=ci
case "${1:-}" in ci|full) subset=$1; shift ;; esac
shards=$(($(nproc) + 1)); [ "$shards" -le 4 ] || shards=4
mem_guests=$(awk '/^MemAvailable:/ { print int($2 / (2.5 * 1024 * 1024)) }' /proc/meminfo)
[ "${mem_guests:-1}" -ge 1 ] || mem_guests=1
[ "$shards" -le "$mem_guests" ] || shards=$mem_guests
only= except=
while [ $# -gt 0 ]; do
	case "$1" in
	--shards)
		shards=$2; shift 2
		[ "$shards" -ge 1 ] 2>/dev/null || { echo "suite.sh: --shards N, N >= 1" >&2; exit 2; } ;;
	--only) only=$2; shift 2 ;;
	--except) except=$2; shift 2 ;;
	*) break ;;
	esac
done

build=${REGCACHE_VM_BUILD:-build-vm}
build=$(realpath -m "$build")	# the guest's working directory may differ
if [ -z "${REGCACHE_VM_BUILD:-}" ]; then
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREGCACHE_WERROR=ON >/dev/null
fi
# REGCACHE_VM_BUILT=1: the build was made elsewhere (inside another root,
# tests/vm/debian13.sh), and a host build would relink it against the
# host's libraries.
[ "${REGCACHE_VM_BUILT:-0}" = 1 ] || cmake --build "$build" -j "$(nproc)" >/dev/null

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
# Also fetches and prepares the kernel, before guests start side by side.
kernel_guess=$(tests/vm/run.sh --print-kernel "$@" 2>/dev/null || true)
known=tests/vm/known-failures-${kernel_guess}
known_re=
if [ -f "$known" ]; then
	known_re=$(awk '!/^#/ && NF { printf "%s^%s$", sep, $1; sep = "|" }' "$known")
fi
select_args=()
if [ "$subset" = ci ]; then
	select_args=(-L "$ci_labels" -E "$ci_exclude${known_re:+|$known_re}")
	if [ -n "$known_re" ]; then
		echo "=== known failures on $kernel_guess, not run (see $known):"
		awk '!/^#/ && NF { print "    " $0 }' "$known"
	fi
fi

# The bulk runs with the eBPF monitor attached by sys_enter/sys_exit:
# under emulation, attaching its 56 fentry programs takes 1-8 s at each
# monitor start, which the daemon's restarts and the forks multiply.
# Then again by fentry, the default on 6.1, a test of each thing the
# monitor serves: the catalogue of changes in process and through
# regcached (its -restart and -dead variants only in the bulk), chaos,
# the catalogue and the demo on rxe0, UCX,
# libfabric and an MPI job (pml ucx) over rxe, and the attach, tax,
# int $0x80, CLONE_VM, overflow and file tests. `full` runs the bulk the
# default way (auto).
fentry_tests='^(changes-(uring|rxe)@(bpf|regcached)|monitor-(in-use|fork)@bpf|chaos@bpf|bpf-(attach-mode|syscall-tax|int80|clone-vm|overflow|file-punch|private-file-truncate)|demo-verbs|(ucp|fabric)-rxe-run@bpf|mpi-rxe-ucx-run@bpf)$'
list_tests() { # ctest selection args -> one test name a line
	ctest --test-dir "$build" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p'
}
# The shards: longest first, each to the shard with the least so far.
# A test's cost: its seconds in the guest (tests/vm/costs-<kernel>: "PASS
# NAME SECONDS" lines), else 4 times what CTest recorded for it in this
# build on the host, else 4 s.
# Prints "SHARD PASS NAME", PASS being bulk or fentry.
costs=$build/Testing/Temporary/CTestCostData.txt
guest_costs=tests/vm/costs-${kernel_guess}
plan=$({
	list_tests "${select_args[@]}" | sed 's/^/bulk /'
	[ "$subset" != ci ] || list_tests -R "$fentry_tests" | sed 's/^/fentry /'
} | awk -v only="$only" -v except="$except" \
	'(only == "" || $2 ~ only) && (except == "" || $2 !~ except)' | awk -v shards="$shards" -v costs="$costs" -v guest_costs="$guest_costs" '
	BEGIN {
		while ((getline line < costs) > 0) {
			if (line == "---") break
			split(line, f, " "); cost["bulk " f[1]] = cost["fentry " f[1]] = 4 * f[3]
		}
		while ((getline line < guest_costs) > 0) {
			if (line ~ /^#/) continue
			split(line, f, " "); cost[f[1] " " f[2]] = f[3] + 0
		}
	}
	{ pass[NR] = $1; name[NR] = $2; c[NR] = ($0 in cost) ? cost[$0] : 4; n = NR }
	END {
		for (i = 1; i <= n; i++) order[i] = i
		for (i = 2; i <= n; i++)	# insertion sort, longest first
			for (j = i; j > 1 && c[order[j]] > c[order[j - 1]]; j--) {
				t = order[j]; order[j] = order[j - 1]; order[j - 1] = t
			}
		for (i = 1; i <= n; i++) {
			best = 1
			for (k = 2; k <= shards; k++) if (load[k] < load[best]) best = k
			load[best] += c[order[i]]
			print best, pass[order[i]], name[order[i]]
		}
	}')
[ -n "$plan" ] || { echo "=== no tests selected in $build" >&2; exit 1; }

shard_re() { # SHARD PASS -> an anchored regular expression of its tests
	awk -v k="$1" -v p="$2" '$1 == k && $2 == p { print $3 }' <<<"$plan" |
		sed 's/[][\\.+*?(){}|^$]/\\&/g' | paste -sd'|' | sed 's/.*/^(&)$/;s/^^()\$$//'
}
guest_cmd_for() { # SHARD -> the shell command its guest runs
	local bulk fentry cmd
	bulk=$(shard_re "$1" bulk) fentry=$(shard_re "$1" fentry)
	cmd="a=0; b=0;"
	if [ -n "$bulk" ]; then
		[ "$subset" != ci ] || cmd+=" REGCACHE_BPF_ATTACH=syscalls"
		cmd+=" $(printf '%q ' ctest "${ctest_args[@]}" -R "$bulk"); a=\$?;"
	fi
	if [ -n "$fentry" ]; then
		cmd+=" echo '=== again, the eBPF monitor attached by fentry';"
		cmd+=" REGCACHE_BPF_ATTACH=fentry $(printf '%q ' ctest "${ctest_args[@]}" -R "$fentry"); b=\$?;"
	fi
	echo "$cmd"' [ $a = 0 ] && exit $b; exit $a'
}

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run_opts=()
[ "$shards" = 1 ] || run_opts=(--private-checkout)
echo "=== $(wc -l <<<"$plan") tests over $shards guest(s)"
guests=() tails=()
for k in $(seq "$shards"); do
	[ -n "$(awk -v k="$k" '$1 == k' <<<"$plan")" ] || continue
	: >"$logs/$k"
	(
		set +e
		tests/vm/run.sh "${run_opts[@]}" "$@" -- sh -c "$(guest_cmd_for "$k")" \
			>"$logs/$k" 2>&1
		echo $? >"$logs/$k.status"
	) &
	guests+=("$k:$!")
	# Each line as it comes, marked with its guest.
	tail -n +1 -F "$logs/$k" 2>/dev/null | sed -u "s/^/[$k] /" &
	tails+=("$!")
done
status=0
for g in "${guests[@]}"; do
	k=${g%%:*}
	wait "${g#*:}" || true
	s=$(cat "$logs/$k.status" 2>/dev/null || echo 125)
	if [ "$s" = 125 ]; then
		echo "=== guest $k did not run its tests (its lines above)" >&2
		status=1
	elif [ "$s" != 0 ]; then
		status=$s
	fi
done
sleep 0.5
kill "${tails[@]}" 2>/dev/null || true
pkill -P $$ -x tail 2>/dev/null || true
log="$logs/all"
cat "$logs"/[0-9]* | tr -d '\r' >"$log"
# Every failure again, together, after the interleaved lines.
if [ "$status" != 0 ]; then
	echo "=== failed in the guest:"
	sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (\(Failed\|Timeout\|Not Run\|SEGFAULT\|Subprocess aborted\|Exception\))$/    \1 (\2)/p' "$log"
fi

kver=$(sed -n 's/^tests\/vm: kernel \([0-9]*\.[0-9]*\).*/\1/p' "$log" | head -n1)
[ -n "$kver" ] || { echo "=== no guest reported its kernel" >&2; status=1; }
# What each test cost in the guest, for the next run's shards.
if [ -n "$kver" ]; then
	measured=$build/vm-costs-$kver
	{
		echo "# PASS TEST SECONDS in the guest of tests/vm/suite.sh on $kver ($shards guests)"
		for k in $(seq "$shards"); do
			[ -f "$logs/$k" ] || continue
			tr -d '\r' <"$logs/$k" | awk -v pass=bulk '
				/again, the eBPF monitor attached by fentry/ { pass = "fentry" }
				/ Test +#[0-9]+: / && $NF == "sec" {
					for (i = 1; i < NF; i++)
						if ($i ~ /^#[0-9]+:$/) { print pass, $(i + 1), $(NF - 1); break }
				}'
		done | sort -k1,1 -k2,2
	} >"$measured"
	echo "=== the guest's test costs: $measured (cp to tests/vm/costs-$kver to deal by them)"
fi
# A guest that ran fewer tests than it was given must not pass.
ran=$(sed -n 's/.* tests failed out of \([0-9]*\)$/\1/p' "$log" | awk '{ n += $1 } END { print n + 0 }')
if [ "$ran" != "$(wc -l <<<"$plan")" ]; then
	echo "=== the guests ran $ran tests of the $(wc -l <<<"$plan") planned" >&2
	status=1
fi
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
