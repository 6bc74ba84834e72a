#!/bin/bash
# Description: regcache-demo --verbs on a real RDMA device (rxe0 in the
# guest of tests/vm/run.sh): every message an RDMA WRITE through an
# ibv_reg_mr rkey, checked where the application looks. It must exit 0;
# the naive cache must lose messages (the oracle sees a stale MR: negative
# control); every regcache row (each monitor, and a client of a private
# regcached as uid 65534) must show 0 corrupted, and each caching row
# (bpf, userfaultfd, regcached) must register fewer times than there are
# messages, so "0 corrupted" is not bought by registering every message.
# A monitor the kernel refuses (the bpf ones before 5.11) is reported as
# not run, with the demo's reason; every other missing row fails.
#
# The checks are run again on copies of the run's own output with one
# thing broken each (status 1, naive at 0 corrupted, a regcache row
# corrupted, a caching row that registers every message); each copy must
# fail them, which shows that every check can see what it looks for.
#
# Usage: demo-verbs.sh /path/to/regcache-demo [extra demo options]
# Skips (77) without an RDMA device, saying so.
set -uo pipefail
demo=$1
shift
n=1200

if ! out=$(ibv_devices 2>&1) || ! grep -qE '^[[:space:]]+[a-z_0-9]+[[:space:]]+[0-9a-f]{16}' <<<"$out"; then
	echo "SKIP: No RDMA device found (tests/vm/run.sh gives one: Soft-RoCE)"
	exit 77
fi

# check OUTPUT STATUS: prints what fails, returns the number of failures.
# Table rows: label, msgs/s, regs, hit rate, corrupted.
check() {
	local out=$1 status=$2 bad=0 naive rows

	if [ "$status" != 0 ]; then
		echo "  exit status $status, want 0"
		bad=$((bad + 1))
	fi
	naive=$(awk '/^naive address-keyed cache +[0-9]+ +[0-9]+[kM]? +[0-9.]+% +[0-9]+[kM]?$/ { print $NF }' <<<"$out")
	if [ -z "$naive" ] || [ "$naive" = 0 ]; then
		echo "  naive cache: '${naive:-no row}' corrupted, want > 0 (the oracle cannot see a stale MR)"
		bad=$((bad + 1))
	fi
	if ! grep -q "^regcache: zero corrupted messages" <<<"$out"; then
		echo "  no 'regcache: zero corrupted messages' line"
		bad=$((bad + 1))
	fi
	rows=$(awk '/^regcache, monitor [a-z]+ +[0-9]+ +[0-9]+[kM]? +[0-9.]+% +[0-9]+[kM]?$/ {
			print $3, $(NF-2), $NF }
		/^regcache via regcached, uid [0-9]+ +[0-9]+ +[0-9]+[kM]? +[0-9.]+% +[0-9]+[kM]?$/ {
			print "regcached", $(NF-2), $NF }' <<<"$out")
	# A monitor this kernel refuses (the demo says why) is not run:
	# said, not failed. Any other missing row fails.
	for want in bpf userfaultfd none regcached; do
		grep -q "^$want " <<<"$rows" && continue
		if grep -qE "^regcache(, monitor $want| via $want).*(not available on this machine|did not start here)" <<<"$out"; then
			echo "  SKIP (part): regcache/$want is not available on this kernel (above)"
		else
			echo "  no row for regcache, monitor $want"
			bad=$((bad + 1))
		fi
	done
	while read -r monitor regs corrupted; do
		[ -n "$monitor" ] || continue
		if [ "$corrupted" != 0 ]; then
			echo "  regcache/$monitor: $corrupted corrupted"
			bad=$((bad + 1))
		fi
		if [ "$monitor" != none ] && ! [ "$regs" -lt "$n" ] 2>/dev/null; then
			echo "  regcache/$monitor: $regs registrations for $n messages (not caching)"
			bad=$((bad + 1))
		fi
	done <<<"$rows"
	return "$bad"
}

out=$("$demo" --verbs -n "$n" -r 1 --long-share 40 --lifetime 4 \
	-m nocache,naive,regcache "$@" 2>&1)
status=$?
echo "$out"
echo "--- checks:"
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
must_fail "the naive cache at 0 corrupted" \
	"$(sed -E 's/^(naive address-keyed cache .* )[0-9]+[kM]?$/\10/' <<<"$out")" "$status"
must_fail "a regcache row with a corrupted message" \
	"$(sed -E 's/^(regcache, monitor none .* )0$/\13/' <<<"$out")" "$status"
must_fail "a caching row that registers every message" \
	"$(sed -E "s/^(regcache, monitor userfaultfd +[0-9]+ +)[0-9]+[kM]?/\1$n/" <<<"$out")" "$status"
must_fail "no regcached row" \
	"$(grep -v "^regcache via regcached" <<<"$out")" "$status"

if [ "$failures" != 0 ]; then
	echo "FAIL: $failures check(s) failed"
	exit 1
fi
echo "PASS"
