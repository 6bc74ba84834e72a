#!/bin/bash
# Description: the unprivileged runs work from a build tree under a
# directory closed to other users, as a checkout in root's home is (/root
# is 0700 on Debian, and README's quick start runs as root). In a mount
# namespace of its own, the test covers the build tree's parent with a
# tmpfs of mode 0700 that holds only the build tree, at the same paths
# (so the programs' RUNPATH leads through the closed directory too), then:
#  - control: uid 65534 cannot execute the demo there, so the closure is
#    real and the checks below can fail;
#  - regcached-launch runs a test program of the tree as uid 65534 (the
#    @regcached tests): changes-uring's munmap case, exit 0;
#  - regcache-demo -m regcached: its uid-65534 row runs, 0 corrupted;
#  - reach-exec + setpriv (demo-nonroot's way): the demo as uid 65534.
# Usage: reach-closed.sh BUILD_DIR
set -uo pipefail
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (a mount namespace, and uid 65534 to drop to)"
	exit 77
fi
build=$(realpath "$1")
if [ "${REACH_CLOSED_INSIDE:-}" != 1 ]; then
	REACH_CLOSED_INSIDE=1 exec unshare --mount --propagation private "$0" "$build"
fi

parent=$(dirname "$build")
keep=$(mktemp -d /run/reach-closed.XXXXXX 2>/dev/null || mktemp -d /dev/shm/reach-closed.XXXXXX)
# The namespace's mounts end with it; the directory holding the tree does not.
trap 'umount "$keep" 2>/dev/null; rmdir "$keep"' EXIT
case "$keep/" in "$parent"/*) echo "FAIL: no place outside $parent to hold the tree"; exit 1 ;; esac
mount --bind "$build" "$keep" &&
	mount -t tmpfs -o mode=0700,size=64k tmpfs "$parent" &&
	mkdir "$build" &&
	mount --bind "$keep" "$build" || { echo "FAIL: could not close $parent"; exit 1; }
echo "--- $parent is now $(stat -c %A "$parent") and holds only $(ls "$parent")"

fails=0
check() { # WHAT STATUS
	if [ "$2" = 0 ]; then echo "ok: $1"; else echo "FAIL: $1 (status $2)"; fails=$((fails + 1)); fi
}
demo=$build/tools/regcache-demo
as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all)

"${as_user[@]}" test -x "$demo"
s=$?
[ "$s" != 0 ]
check "control: uid 65534 cannot execute $demo without help" $?

out=$("$build/tests/regcached-launch" -- "$build/tests/changes-uring" munmap 2>&1)
s=$?
printf '%s\n' "$out" | tail -n 3
check "regcached-launch: changes-uring munmap as uid 65534" $s

out=$("$demo" -m regcached -n 3000 -r 1 2>&1)
s=$?
printf '%s\n' "$out" | grep -E '^regcache via regcached|corrupted messages\.|FAILED'
[ "$s" = 0 ] && printf '%s\n' "$out" | grep -Eq '^regcache via regcached, uid 65534 +[0-9]+ +[0-9]+ +[0-9.]+% +0$'
check "regcache-demo -m regcached: the uid-65534 row ran, 0 corrupted" $?

out=$("$build/tests/reach-exec" "$demo" -- "${as_user[@]}" "$demo" -m userfaultfd -n 3000 -r 1 2>&1)
s=$?
printf '%s\n' "$out" | grep -E '^regcache, monitor|FAILED'
check "reach-exec + setpriv: the demo as uid 65534" $s

[ "$fails" = 0 ] && echo "PASS" || echo "FAIL: $fails check(s)"
[ "$fails" = 0 ]
