#!/bin/bash
# Description: regcache-demo with its default options, run the way a new
# user runs it: uid 65534, no capabilities, Debian's default 8 MiB
# RLIMIT_MEMLOCK. It must exit 0, say that it shrank the workload to fit
# the pinned-memory budget, show zero corrupted messages, and give every
# regcache row a hit rate at least the naive cache's (a corrupted message
# counts as no hit).
#
# Negative controls, on the run's own output: each check must fail on a
# copy of it with that one thing broken (status 1, the shrink line gone,
# the zero-corrupted line gone, a regcache row's hit rate below naive's),
# which shows that every check can see what it looks for.
#
# Usage: [REACH_EXEC=reach-exec] demo-nonroot.sh /path/to/regcache-demo
#        [extra demo options]
set -uo pipefail
demo=$1
shift

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root to drop to uid 65534 with an 8 MiB memlock limit"
	exit 77
fi
# REACH_EXEC (tests/lib/reach-exec.c): the demo's directories searchable
# by uid 65534 in a mount namespace of the run's own, so that a build in
# root's home (/root is 0700) runs too.
as_user=(${REACH_EXEC:+"$REACH_EXEC" "$demo" --} prlimit --memlock=8388608:8388608
	 setpriv --reuid=65534 --regid=65534 --clear-groups
	 --inh-caps=-all --bounding-set=-all)
if ! "${as_user[@]}" test -x "$demo"; then
	echo "SKIP: uid 65534 cannot execute $demo (a directory on its path is" \
	     "closed to other users); build in a readable directory"
	exit 77
fi

# check OUTPUT STATUS: prints what fails, returns the number of failures.
check() {
	local out=$1 status=$2 bad=0 naive rows

	if [ "$status" != 0 ]; then
		echo "  exit status $status, want 0"
		bad=$((bad + 1))
	fi
	if ! grep -q "so the workload drops its .* largest buffer" <<<"$out"; then
		echo "  no line saying the workload was shrunk to fit"
		bad=$((bad + 1))
	fi
	if ! grep -q "^regcache: zero corrupted messages" <<<"$out"; then
		echo "  regcache rows are not all free of corrupted messages"
		bad=$((bad + 1))
	fi
	# Table rows: label, msgs/s, regs, hit rate, corrupted.
	naive=$(awk '/^naive address-keyed cache +[0-9]+ +[0-9]+[kM]? +[0-9.]+% +[0-9]+[kM]?$/ {
			sub("%", "", $(NF-1)); print $(NF-1) }' <<<"$out")
	rows=$(awk '/^regcache, monitor [a-z]+ +[0-9]+ +[0-9]+[kM]? +[0-9.]+% +[0-9]+[kM]?$/ &&
			$3 != "none" { sub("%", "", $(NF-1)); print $3, $(NF-1) }' <<<"$out")
	if [ -z "$naive" ] || [ -z "$rows" ]; then
		echo "  no naive row or no caching regcache row in the table"
		return $((bad + 1))
	fi
	while read -r monitor hit; do
		if awk -v a="$hit" -v b="$naive" 'BEGIN { exit !(a < b) }'; then
			echo "  regcache/$monitor hit rate $hit% < naive $naive%"
			bad=$((bad + 1))
		else
			echo "  regcache/$monitor hit rate $hit% >= naive $naive%"
		fi
	done <<<"$rows"
	return "$bad"
}

out=$("${as_user[@]}" "$demo" "$@" 2>&1)
status=$?
echo "$out"
echo "--- checks, default workload as uid 65534:"
check "$out" "$status"
failures=$?

# must_fail NAME OUTPUT STATUS: the checks must reject this broken copy.
must_fail() {
	echo "--- negative control: $1"
	if check "$2" "$3"; then
		echo "FAIL: the checks passed output with $1"
		failures=$((failures + 1))
	fi
}
must_fail "exit status 1" "$out" 1
must_fail "no line saying it shrank" \
	"$(grep -v "so the workload drops its" <<<"$out")" "$status"
must_fail "no zero-corrupted line" \
	"$(grep -v "^regcache: zero corrupted messages" <<<"$out")" "$status"
must_fail "a regcache hit rate below naive's" \
	"$(sed -E 's/^(regcache, monitor [a-z]+ +[0-9]+ +[0-9]+[kM]? +)[0-9.]+%/\10.0%/' <<<"$out")" "$status"

if [ "$failures" != 0 ]; then
	echo "FAIL: $failures check(s) failed"
	exit 1
fi
echo "PASS"
