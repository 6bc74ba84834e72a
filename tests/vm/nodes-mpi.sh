#!/bin/sh
# An Open MPI job (pml ucx) across the guests of tests/vm/run.sh --nodes 2,
# run on node0 as its COMMAND (CI's two-node job):
#   tests/vm/run.sh --nodes 2 -- tests/vm/nodes-mpi.sh [BUILD]
#   tests/vm/debian13.sh run --nodes 2 -- tests/vm/nodes-mpi.sh build-debian13
# BUILD (default build): the build directory with mpi-rxe, regcached and
# regcache-run. Each node runs regcached as deploy/systemd starts it (the
# socket's directory, then the unit's ExecStart with its LimitMEMLOCK),
# then tests/mpi-rxe.sh runs mpi-rxe with rank 0 on node0 and rank 1 on
# node1 (rank 0 sends, rank 1 checks every byte; each counts the MRs of its
# own node's rxe0):
#   - regcached: ranks as uid 65534 (ssh session: no capabilities, memlock
#     unlimited) under regcache-run, REGCACHE_MONITOR=regcached, rendezvous
#     (64 KiB) by get_zcopy and by put_zcopy, and eager (4 KiB): 0
#     corrupted, unchanged buffers register 0 MRs from round 2;
#   - bpf: root ranks under regcache-run, get_zcopy: the same;
#   - UCX's own hooks (no regcache-run): messages after raw syscalls
#     corrupted (the negative control);
#   - the caches off: every message through unchanged buffers registers.
# On demand (NODES_MPI_ONLY='4ranks'): regcached-get-4ranks, 2 ranks per
# node (pairs 0-1 and 2-3 across the nodes).
# NODES_MPI_ONLY (a pattern of the runs' names) picks others. Each run is
# bounded (NODES_MPI_TIMEOUT, 600 s). Prints PASS or FAIL with each failed run.
set -u
cd "$(dirname "$0")/../.."
build=$(realpath -m "${1:-build}")
only=${NODES_MPI_ONLY:-'^(regcached-(get|put|eager)|bpf-get|ucx-hooks|nocache)$'}
limit=${NODES_MPI_TIMEOUT:-600}
fails=
say() { echo "nodes-mpi: $*"; }
. /run/regcache-vm/guest.conf 2>/dev/null || { say "not in a guest of tests/vm/run.sh --nodes 2 (FAIL)"; exit 1; }
[ "${nodes:-1}" -ge 2 ] && [ "$node" = 0 ] ||
	{ say "run it on node0 of tests/vm/run.sh --nodes 2, not node${node:-?} of ${nodes:-1} (FAIL)"; exit 1; }
for f in tests/mpi-rxe "tools/regcached" tools/regcache-run; do
	[ -x "$build/$f" ] || { say "$build/$f is not built (FAIL)"; exit 1; }
done
prog=$build/tests/mpi-rxe run=$build/tools/regcache-run
hosts=node0,node1

# regcached on every node, the way deploy/systemd starts it.
start_regcached() { # NODE
	n=$1
	ssh "$n" "mkdir -p -m 0755 /run/regcache && ulimit -l unlimited &&
		{ nohup $build/tools/regcached -v >>/tmp/regcached.log 2>&1 </dev/null & echo \$! >/run/regcache/pid; }
		i=0; while [ ! -S /run/regcache/regcached.sock ] && [ \$i -lt 300 ]; do sleep 0.2; i=\$((i + 1)); done
		[ -S /run/regcache/regcached.sock ]" ||
		{ say "regcached did not start on $n (FAIL)"; ssh "$n" cat /tmp/regcached.log; exit 1; }
}
for n in node0 node1; do start_regcached "$n"; done
say "regcached serves /run/regcache/regcached.sock on node0 and node1"

line='regcache-ucx: UCX unmap events come from regcache monitor'
# What an unprivileged rank is: uid 65534, no capabilities, memlock
# unlimited, on each node.
ranks=$(timeout 120 ssh nobody@node0 "cd /tmp && mpirun -H $hosts --map-by node -np 2 \
	sh -c 'echo \$(hostname) uid=\$(id -u) \$(grep CapEff /proc/self/status | tr -d \"\t\") memlock=\$(ulimit -l)'" 2>&1 | sort)
echo "$ranks" | sed 's/^/  /'
if [ "$ranks" != "$(printf '%s\n' "node0 uid=65534 CapEff:0000000000000000 memlock=unlimited" \
	"node1 uid=65534 CapEff:0000000000000000 memlock=unlimited")" ]; then
	say "FAIL the unprivileged ranks are not uid 65534 without capabilities and memlock unlimited"
	fails="$fails ranks"
fi

# NAME USER RUN MODE EXPECT_LINE [VAR=VALUE...]: one job, 1 rank per node
# (NP=4 among the variables: 2 per node).
job() {
	name=$1 user=$2 r=$3 mode=$4 want=$5 np=2
	shift 5
	h=$hosts
	case " $* " in *" NP=4 "*) np=4 h=node0:2,node1:2 ;; esac
	echo "$name" | grep -Eq "$only" || return 0
	say "=== $name"
	# Through ssh also for root: the ranks of both nodes get the same
	# session (limits, environment) from sshd.
	out=$(timeout "$limit" ssh "$user@node0" "cd $PWD && env MPI_RXE_NP=$np UCX_TLS=rc_verbs,ud_verbs,self \
		UCX_IB_GID_INDEX=${NODES_MPI_GID_INDEX:-0} $* tests/mpi-rxe.sh $prog $r $mode ucx -H $h --map-by node \
		-x UCX_IB_GID_INDEX -x UCX_RNDV_SCHEME" 2>&1)
	status=$?
	echo "$out" | sed 's/^/  /'
	verdict=ok
	[ $status = 0 ] || verdict="exit status $status"
	echo "$out" | grep -q 'mpi-rxe: PASS' || verdict="no PASS line ($verdict)"
	echo "$out" | grep -q 'FAIL' && verdict="a FAIL line ($verdict)"
	if [ -n "$want" ] && [ "$(echo "$out" | grep -c "$want")" -lt "$np" ]; then
		verdict="the bridge's line '$want' not from both ranks ($verdict)"
	fi
	if [ "$verdict" = ok ]; then say "ok   $name"; else say "FAIL $name: $verdict"; fails="$fails $name"; fi
}
job regcached-get nobody "$run" clean "$line \"regcached\"" \
	REGCACHE_MONITOR=regcached REGCACHE_LOG=info UCX_RNDV_SCHEME=get_zcopy
job regcached-put nobody "$run" clean "$line \"regcached\"" \
	REGCACHE_MONITOR=regcached REGCACHE_LOG=info UCX_RNDV_SCHEME=put_zcopy
job regcached-eager nobody "$run" clean "$line \"regcached\"" \
	REGCACHE_MONITOR=regcached REGCACHE_LOG=info UCX_RNDV_SCHEME=get_zcopy MPI_RXE_ARGS="'21 4096 nocount'"
job regcached-get-4ranks nobody "$run" clean "$line \"regcached\"" \
	NP=4 REGCACHE_MONITOR=regcached REGCACHE_LOG=info UCX_RNDV_SCHEME=get_zcopy
# On demand (NODES_MPI_ONLY=kill): kill -9 node1's regcached in the middle
# of the job, then start it again as systemd's Restart=on-failure would
# (RestartSec=1); the job must still end with 0 corrupted.
if echo regcached-kill | grep -Eq "$only"; then
	(sleep "${NODES_MPI_KILL_AFTER:-20}"
	 ssh node1 'kill -9 $(cat /run/regcache/pid)' && say "killed regcached on node1 (kill -9)" &&
		touch /tmp/nodes-mpi-killed
	 sleep 1; (start_regcached node1) && say "regcached started again on node1") &
	killer=$!
	job regcached-kill nobody "$run" clean "$line \"regcached\"" \
		REGCACHE_MONITOR=regcached REGCACHE_LOG=info UCX_RNDV_SCHEME=get_zcopy \
		MPI_RXE_ARGS="'300 65536 nocount'"
	# The kill must have come while the job ran.
	[ -e /tmp/nodes-mpi-killed ] ||
		{ say "FAIL regcached-kill: the job ended before the kill (NODES_MPI_KILL_AFTER)"; fails="$fails kill-timing"; }
	wait $killer
fi
# On demand (NODES_MPI_ONLY=gid1): UCX on the IPv4 RoCEv2 GID (index 1)
# instead of the link-local one, to see whether its UD wireup crosses.
job gid1-get nobody "$run" clean "$line \"regcached\"" \
	REGCACHE_MONITOR=regcached REGCACHE_LOG=info UCX_RNDV_SCHEME=get_zcopy UCX_IB_GID_INDEX=1
job bpf-get root "$run" clean "$line \"bpf\"" \
	REGCACHE_MONITOR=bpf REGCACHE_LOG=info UCX_RNDV_SCHEME=get_zcopy
job ucx-hooks root - stale "" UCX_RNDV_SCHEME=get_zcopy
job nocache root - nocache "" UCX_RNDV_SCHEME=get_zcopy

for n in node0 node1; do
	ssh "$n" 'pgrep -x regcached >/dev/null' || { say "FAIL regcached is gone on $n"; fails="$fails regcached@$n"; }
done
if [ -z "$fails" ]; then
	say PASS
else
	say "failed:$fails (FAIL)"
	exit 1
fi
