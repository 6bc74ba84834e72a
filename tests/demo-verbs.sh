#!/bin/bash
# Description: regcache-demo --verbs on a real RDMA device (rxe0 in the
# guest of tests/vm/run.sh): every message an RDMA WRITE through an
# ibv_reg_mr rkey, checked where the application looks. It must exit 0;
# the naive cache must lose messages (the oracle sees a stale MR: negative
# control); every regcache row (each monitor, and a client of a private
# regcached as uid 65534) must show 0 corrupted, and each caching row
# (bpf, userfaultfd, regcached) must register fewer times than there are
# messages, so "0 corrupted" is not bought by registering every message.
# A monitor the kernel is too old for (bpf before 5.11, regcached before
# 5.13) is reported as not run; every other missing row fails.
#
# The checks are run again on copies of the run's own output with one
# thing broken each (status 1, naive at 0 corrupted, the no-cache row
# corrupted, a regcache row corrupted, a caching row that registers every
# message, a missing row on 6.1, no caching row at all); each copy must
# fail them, which shows that every check can see what it looks for.
#
# Usage: demo-verbs.sh /path/to/regcache-demo [extra demo options]
# Skips (77) without an RDMA device, saying so.
set -uo pipefail
demo=$1
shift
n=1200

command -v ibv_devices >/dev/null ||
	{ echo "ibv_devices missing: apt-get install ibverbs-utils (FAIL)"; exit 1; }
if ! grep -qE '^[[:space:]]+[a-z_0-9]+[[:space:]]+[0-9a-f]{16}' <<<"$(ibv_devices 2>&1)"; then
	echo "SKIP: No RDMA device found (tests/vm/run.sh gives one: Soft-RoCE)"
	exit 77
fi

# The first kernel each monitor can run on (docs/kernel-facts.md, "The
# oldest kernel of each monitor"): below it, its missing row is the
# kernel's doing; at or above it, a failure.
declare -A oldest=([bpf]=5.11 [regcached]=5.13 [userfaultfd]=5.7 [none]=0)
kernel=$(uname -r | sed 's/^\([0-9]*\.[0-9]*\).*/\1/')
older() { # A B: is kernel A older than B?
	[ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]
}

# check OUTPUT STATUS KERNEL: prints what fails, returns the number of
# failures. Table rows: label, msgs/s, regs, hit rate, corrupted.
check() {
	local out=$1 status=$2 kernel=$3 bad=0 naive nocache rows caching=0

	if [ "$status" != 0 ]; then
		echo "  exit status $status, want 0"
		bad=$((bad + 1))
	fi
	naive=$(awk '/^naive address-keyed cache +[0-9]+ +[0-9]+[kM]? +[0-9.]+% +[0-9]+[kM]?$/ { print $NF }' <<<"$out")
	if [ -z "$naive" ] || [ "$naive" = 0 ]; then
		echo "  naive cache: '${naive:-no row}' corrupted, want > 0 (the oracle cannot see a stale MR)"
		bad=$((bad + 1))
	fi
	nocache=$(awk '/^no cache \(reg\+dereg per message\) +[0-9]+ +[0-9]+[kM]? +[0-9.]+% +[0-9]+[kM]?$/ { print $NF }' <<<"$out")
	if [ "$nocache" != 0 ]; then
		echo "  no cache: '${nocache:-no row}' corrupted, want 0 (the oracle sees corruption where there is none)"
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
	# A monitor the kernel is too old for is not run: said, not failed.
	# Any other missing row fails.
	for want in bpf userfaultfd none regcached; do
		grep -q "^$want " <<<"$rows" && continue
		if older "$kernel" "${oldest[$want]}"; then
			echo "  SKIP (part): regcache/$want needs Linux ${oldest[$want]}, this is $kernel"
		else
			echo "  no row for regcache, monitor $want on Linux $kernel"
			bad=$((bad + 1))
		fi
	done
	while read -r monitor regs corrupted; do
		[ -n "$monitor" ] || continue
		if [ "$corrupted" != 0 ]; then
			echo "  regcache/$monitor: $corrupted corrupted"
			bad=$((bad + 1))
		fi
		[ "$monitor" != none ] || continue
		caching=$((caching + 1))
		if ! [ "$regs" -lt "$n" ] 2>/dev/null; then
			echo "  regcache/$monitor: $regs registrations for $n messages (not caching)"
			bad=$((bad + 1))
		fi
	done <<<"$rows"
	if [ "$caching" = 0 ]; then
		echo "  no regcache row that caches"
		bad=$((bad + 1))
	fi
	return "$bad"
}

out=$("$demo" --verbs -n "$n" -r 1 --long-share 40 --lifetime 4 \
	-m nocache,naive,regcache "$@" 2>&1)
status=$?
echo "$out"
echo "--- checks:"
check "$out" "$status" "$kernel"
failures=$?

# must_fail NAME OUTPUT STATUS [KERNEL]: the checks must reject this
# broken copy.
must_fail() {
	echo "--- negative control: $1"
	if check "$2" "$3" "${4:-$kernel}"; then
		echo "FAIL: the checks passed output with $1"
		failures=$((failures + 1))
	fi
}
must_fail "exit status 1" "$out" 1
must_fail "the naive cache at 0 corrupted" \
	"$(sed -E 's/^(naive address-keyed cache .* )[0-9]+[kM]?$/\10/' <<<"$out")" "$status"
must_fail "a corrupted message without a cache" \
	"$(sed -E 's/^(no cache \(reg\+dereg per message\) .* )0$/\12/' <<<"$out")" "$status"
must_fail "a regcache row with a corrupted message" \
	"$(sed -E 's/^(regcache, monitor none .* )0$/\13/' <<<"$out")" "$status"
must_fail "a caching row that registers every message" \
	"$(sed -E "s/^(regcache, monitor userfaultfd +[0-9]+ +)[0-9]+[kM]?/\1$n/" <<<"$out")" "$status"
must_fail "no regcached row on 6.1" \
	"$(grep -v "^regcache via regcached" <<<"$out")" "$status" 6.1
must_fail "no bpf row on 6.1 (the monitor not available)" \
	"$(sed -E 's/^regcache, monitor bpf .*/regcache, monitor bpf              not available on this machine/' <<<"$out")" "$status" 6.1
must_fail "no caching row" \
	"$(grep -vE "^regcache(, monitor (bpf|userfaultfd)| via regcached)" <<<"$out")" "$status" 5.4

if [ "$failures" != 0 ]; then
	echo "FAIL: $failures check(s) failed"
	exit 1
fi
echo "PASS"
