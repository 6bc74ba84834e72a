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
#   - UCX's own hooks (no regcache-run): messages after each raw syscall
#     and after io_uring's madvise corrupted (the negative control);
#   - the caches off: every message through unchanged buffers registers.
# Before the jobs, what an operator checks on a node (docs/deploy.md):
#   - info: regcache-info as uid 65534 says "monitor: regcached" on each
#     node (and not with REGCACHE_SOCKET naming a socket nobody serves);
#   - container: on node1, a uid 65534 process in a mount namespace of its
#     own whose /run holds only the bind-mounted /run/regcache gets
#     regcached (regcache-info, regcache-example's DMA, the daemon's log);
#     without the bind mount it does not.
# On demand, by NODES_MPI_ONLY (a pattern of the runs' names):
#   - 4ranks: regcached-get-4ranks, 2 ranks per node (pairs 0-1 and 2-3
#     across the nodes);
#   - regcached-kill: node1's regcached killed (kill -9) mid-job and
#     started again: 0 corrupted;
#   - rank-kill: node1's rank killed (kill -9) mid-job: node1's regcached
#     unregisters it, and its fds, its BPF map entries, the node's BPF
#     maps, rxe0's MRs and the bytes they pin return to their values
#     before the job (each seen up while the rank ran);
#   - ofi: Open MPI pml cm + mtl ofi (libfabric verbs;ofi_rxm) under
#     regcached (uid 65534) and bpf (root), and libfabric's own monitor as
#     the control;
#   - mpich: MPICH (Hydra's ssh launcher; the Debian 13 root) the same way
#     on ch4:ucx;
#   - socket-activation: regcached started through a socket it is handed,
#     as deploy/systemd's socket unit starts it (systemd-socket-activate);
#   - gid1: UCX on the IPv4 RoCEv2 GID.
# Each run is bounded (NODES_MPI_TIMEOUT, 600 s). Prints PASS or FAIL with
# each failed run.
set -u
cd "$(dirname "$0")/../.."
build=$(realpath -m "${1:-build}")
only=${NODES_MPI_ONLY:-'^(info|container|regcached-(get|put|eager)|bpf-get|ucx-hooks|nocache)$'}
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

# What an operator checks on a node (docs/deploy.md): regcache-info as
# uid 65534 reports monitor regcached on each node; the control: pointed
# at a socket where nothing listens, it does not.
if echo info | grep -Eq "$only"; then
	say "=== info"
	for n in node0 node1; do
		o=$(timeout 120 ssh "nobody@$n" "$build/tools/regcache-info" 2>&1)
		echo "$o" | sed "s/^/  $n: /"
		c=$(timeout 120 ssh "nobody@$n" "REGCACHE_SOCKET=/run/regcache/absent.sock $build/tools/regcache-info" 2>&1 |
			grep '^monitor:')
		echo "  $n, REGCACHE_SOCKET=/run/regcache/absent.sock: $c"
		if echo "$o" | grep -Eq '^monitor: +regcached ' && [ -n "$c" ] &&
			! echo "$c" | grep -q regcached; then
			say "ok   info on $n"
		else
			say "FAIL info on $n: regcache-info as uid 65534 does not say 'monitor: regcached', or says it without the daemon"
			fails="$fails info@$n"
		fi
	done
fi
# A "container" on node1: a process in a mount namespace of its own
# (unshare -m) whose /run is a tmpfs holding only the host's
# /run/regcache, bind-mounted, as a pod's hostPath volume gives it; as uid
# 65534 regcache-info says monitor regcached, regcache-example's DMA
# through io_uring lands right with REGCACHE_MONITOR=regcached, and
# regcached's log has that pid registered. The control: the same /run
# without the bind mount gives another monitor.
if echo container | grep -Eq "$only"; then
	say "=== container"
	ctr() { # BIND(0|1) COMMAND (as uid 65534 inside)
		ssh node1 "unshare -m sh -c 'd=\$(mktemp -d) && mount -t tmpfs ctr \$d &&
			if [ $1 = 1 ]; then mkdir \$d/regcache && mount --bind /run/regcache \$d/regcache; fi &&
			mount --rbind \$d /run && echo \"/run holds: \$(ls -A /run | tr \"\\n\" \" \")\" &&
			exec setpriv --reuid 65534 --regid 65534 --clear-groups sh -c \"echo pid \\\$\\\$; exec $2\"'" 2>&1
	}
	o=$(ctr 1 "$build/tools/regcache-info")
	e=$(ctr 1 "env REGCACHE_MONITOR=regcached REGCACHE_LOG=info $build/tools/regcache-example")
	c=$(ctr 0 "$build/tools/regcache-info")
	echo "$o" | sed 's/^/  bind-mounted: /'
	echo "$e" | sed 's/^/  bind-mounted: /'
	echo "$c" | grep -E '^(/run|pid|monitor:|  regcached)' | sed 's/^/  not mounted (control): /'
	ep=$(echo "$e" | sed -n 's/^pid //p')
	ssh node1 "grep -E 'pid $ep( |$)' /tmp/regcached.log" | sed 's/^/  node1 regcached.log: /'
	v=
	echo "$o" | grep -q '^/run holds: regcache $' || v="$v; /run is not the socket directory alone"
	echo "$o" | grep -Eq '^monitor: +regcached ' || v="$v; regcache-info does not say monitor regcached"
	echo "$e" | grep -q 'monitor "regcached"' && echo "$e" | grep -q '^all DMA landed' ||
		v="$v; regcache-example did not run on regcached"
	[ -n "$ep" ] && ssh node1 "grep -q 'pid $ep uid 65534 slot [0-9]* registered' /tmp/regcached.log" ||
		v="$v; regcached did not register pid $ep"
	echo "$c" | grep -q '^/run holds: $' && echo "$c" | grep -q '^monitor:' &&
		! echo "$c" | grep -Eq '^monitor: +regcached' || v="$v; the control (no bind mount) got regcached"
	if [ -z "$v" ]; then say "ok   container"; else say "FAIL container${v}"; fails="$fails container"; fi
fi

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
# STACK=ofi among them: Open MPI's pml cm + mtl ofi (libfabric
# verbs;ofi_rxm) instead of pml ucx; STACK=mpich: MPICH (mpi-rxe-mpich,
# mpiexec.mpich -launcher ssh -hosts node0,node1; ch4:ucx in Debian 13).
run_job() { # USER RUN MODE NP HOSTS [VAR=VALUE...]: sets out and status
	u=$1 r=$2 mode=$3 np=$4 h=$5
	shift 5
	p=$prog
	case " $* " in
	*" STACK=ofi "*) stack="ofi -H $h --map-by node" ;;
	# MPICH's Hydra starts its proxies by ssh, which pass it the
	# environment (UCX_IB_GID_INDEX and the rest).
	*" STACK=mpich "*) stack="mpich -hosts $h" p=$prog-mpich ;;
	*) stack="ucx -H $h --map-by node -x UCX_IB_GID_INDEX -x UCX_RNDV_SCHEME" ;;
	esac
	# Through ssh also for root: the ranks of both nodes get the same
	# session (limits, environment) from sshd.
	out=$(timeout "$limit" ssh "$u@node0" "cd $PWD && env MPI_RXE_NP=$np UCX_TLS=rc_verbs,ud_verbs,self \
		UCX_IB_GID_INDEX=${NODES_MPI_GID_INDEX:-0} MPI_RXE_LAUNCHER=ssh $* tests/mpi-rxe.sh $p $r $mode $stack" 2>&1)
	status=$?
}
job() {
	name=$1 user=$2 r=$3 mode=$4 want=$5 np=2
	shift 5
	h=$hosts
	case " $* " in *" NP=4 "*) np=4 h=node0:2,node1:2 ;; esac
	echo "$name" | grep -Eq "$only" || return 0
	say "=== $name"
	run_job "$user" "$r" "$mode" "$np" "$h" "$@"
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
	 t=$(ssh node1 'kill -9 $(cat /run/regcache/pid) && cut -d" " -f1 /proc/uptime') &&
		say "killed regcached on node1 (kill -9) at $t s (node1's monotonic clock, as in its log)" &&
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
	# What node1's daemons saw (the killed one's log, then the new one's).
	ssh node1 "grep -E 'serving|registered|exited' /tmp/regcached.log | tail -n 12" | sed 's/^/  node1 regcached.log: /'
fi
# On demand (NODES_MPI_ONLY=rank-kill): kill -9 the rank on node1 (uid
# 65534, under regcached) in the middle of the job, and check that node1
# gets back everything the rank held. node1's state, one NAME=VALUE a line:
# regcached's open files (fds), the entries of its BPF maps (procs: the
# {tgid, slot} -> ring entries, procs_state: one per client process, mms,
# files) and the BPF maps of the node (bpf_maps: each client's ring is
# one), rxe0's MRs and the bytes they pin (rdma resource show mr), and the
# uid 65534 mpi-rxe processes with the memory they pin (VmPin) and lock
# (VmLck).
node1_state() {
	ssh node1 'pid=$(cat /run/regcache/pid)
	echo fds=$(ls /proc/$pid/fd | wc -l)
	for m in procs procs_state mms files; do
		echo map_$m=$(bpftool -j map dump name $m 2>/dev/null | python3 -c "import json, sys
d = json.load(sys.stdin)
print(sum(len(e[\"elements\"]) if isinstance(e, dict) and \"elements\" in e else 1 for e in d))")
	done
	echo bpf_maps=$(bpftool map show | grep -c "^[0-9]*:")
	echo mrs=$(rdma resource show mr | grep -c "^dev rxe0 ")
	echo mr_bytes=$(rdma resource show mr | sed -n "s/.* mrlen \([0-9]*\).*/\1/p" | awk "{ s += \$1 } END { print s + 0 }")
	ranks=$(pgrep -u 65534 -x mpi-rxe)
	echo ranks=$(echo $ranks | wc -w)
	echo rank_pids=$(echo $ranks | tr " " ,)
	echo pin_kb=$(for p in $ranks; do grep VmPin /proc/$p/status; done | awk "{ s += \$2 } END { print s + 0 }")
	echo lck_kb=$(for p in $ranks; do grep VmLck /proc/$p/status; done | awk "{ s += \$2 } END { print s + 0 }")'
}
get() { echo "$1" | sed -n "s/^$2=//p"; } # STATE NAME
if echo rank-kill | grep -Eq "$only"; then
	say "=== rank-kill"
	before=$(node1_state)
	echo "$before" | sed 's/^/  node1 before the job: /'
	rm -f /tmp/nodes-mpi-rank-killed
	# The killer: once node1's rank is a client of regcached (its pid
	# registered in the log) with MRs on rxe0, let it run 10 s of rounds,
	# take node1's state, kill -9 it, then look every 2 s until node1 is
	# back (at most 60 looks) and keep the last look.
	(i=0
	 while [ $i -lt 300 ]; do
		# Cheap enough to ask every 2 s on a loaded machine.
		p=$(ssh node1 "p=\$(pgrep -u 65534 -x mpi-rxe) && [ \$(echo \$p | wc -w) = 1 ] &&
			grep -q \"pid \$p uid 65534 slot [0-9]* registered\" /tmp/regcached.log &&
			[ \$(rdma resource show mr | grep -c '^dev rxe0 ') -gt $(get "$before" mrs) ] && echo \$p") &&
			[ -n "$p" ] && break
		sleep 2; i=$((i + 1))
	 done
	 [ $i -lt 300 ] || { say "rank-kill: node1's rank never became a client with MRs"; exit 1; }
	 sleep 10
	 node1_state >/tmp/nodes-mpi-during
	 ssh node1 "kill -9 $p" && say "killed node1's rank, pid $p (kill -9)" &&
		echo "$p" >/tmp/nodes-mpi-rank-killed
	 i=0
	 while [ $i -lt 60 ]; do
		sleep 2; i=$((i + 1))
		st=$(node1_state)
		[ "$(get "$st" ranks)" = 0 ] && [ "$(get "$st" fds)" = "$(get "$before" fds)" ] &&
			[ "$(get "$st" map_procs_state)" = "$(get "$before" map_procs_state)" ] &&
			[ "$(get "$st" bpf_maps)" = "$(get "$before" bpf_maps)" ] &&
			[ "$(get "$st" mrs)" = "$(get "$before" mrs)" ] &&
			[ "$(get "$st" mr_bytes)" = "$(get "$before" mr_bytes)" ] && break
	 done
	 echo "$st" >/tmp/nodes-mpi-after
	 say "node1 after the kill: $i x 2 s") &
	killer=$!
	run_job nobody "$run" clean 2 "$hosts" REGCACHE_MONITOR=regcached REGCACHE_LOG=info \
		UCX_RNDV_SCHEME=get_zcopy MPI_RXE_ARGS="'3000 65536 nocount'"
	echo "$out" | sed 's/^/  /'
	wait $killer
	during=$(cat /tmp/nodes-mpi-during 2>/dev/null) after=$(cat /tmp/nodes-mpi-after 2>/dev/null)
	echo "$during" | sed 's/^/  node1 during the job: /'
	echo "$after" | sed 's/^/  node1 after the kill: /'
	p=$(cat /tmp/nodes-mpi-rank-killed 2>/dev/null)
	ssh node1 "grep -E 'pid $p( |$)' /tmp/regcached.log" | sed 's/^/  node1 regcached.log: /'
	v=
	[ -n "$p" ] || v="$v; the rank was not killed"
	# The kill came while the job ran: mpirun reports the rank killed
	# (and the job cannot pass).
	echo "$out" | grep -q "noticed that process rank 1 with PID $p " && ! echo "$out" | grep -q 'mpi-rxe: PASS' ||
		v="$v; mpirun did not report rank 1 (pid $p) killed (status $status): not killed mid-job"
	# regcached dropped the client: its log says so.
	ssh node1 "grep -q 'pid $p slot [0-9]* unregistered' /tmp/regcached.log" ||
		v="$v; regcached's log has no 'pid $p slot N unregistered'"
	# Each count: up while the rank lived (the control: the measure sees
	# the rank), back to its value before the job after the kill.
	for k in fds map_procs map_procs_state map_mms bpf_maps mrs mr_bytes; do
		b=$(get "$before" $k) d=$(get "$during" $k) a=$(get "$after" $k)
		[ -n "$d" ] && [ "$d" -gt "${b:-0}" ] || v="$v; $k not up while the rank ran ($b -> $d)"
		[ -n "$a" ] && [ "$a" = "$b" ] || v="$v; $k not back after the kill ($b -> $d -> $a)"
	done
	for k in map_files; do
		[ "$(get "$after" $k)" = "$(get "$before" $k)" ] ||
			v="$v; $k not back after the kill ($(get "$before" $k) -> $(get "$during" $k) -> $(get "$after" $k))"
	done
	[ "$(get "$during" pin_kb)" -gt 0 ] || v="$v; the rank pinned nothing (VmPin) while it ran"
	[ "$(get "$after" ranks)" = 0 ] || v="$v; a uid 65534 mpi-rxe is left on node1"
	if [ -z "$v" ]; then say "ok   rank-kill"; else say "FAIL rank-kill${v}"; fails="$fails rank-kill"; fi
fi
# On demand (NODES_MPI_ONLY=gid1): UCX on the IPv4 RoCEv2 GID (index 1)
# instead of the link-local one, to see whether its UD wireup crosses.
job gid1-get nobody "$run" clean "$line \"regcached\"" \
	REGCACHE_MONITOR=regcached REGCACHE_LOG=info UCX_RNDV_SCHEME=get_zcopy UCX_IB_GID_INDEX=1
job bpf-get root "$run" clean "$line \"bpf\"" \
	REGCACHE_MONITOR=bpf REGCACHE_LOG=info UCX_RNDV_SCHEME=get_zcopy
# On demand (NODES_MPI_ONLY=ofi): Open MPI's pml cm + mtl ofi, libfabric's
# verbs;ofi_rxm, across the nodes: under regcache-run (regcached with uid
# 65534 ranks, bpf with root ranks) none corrupted; with libfabric's own
# monitor (no regcache-run) the messages after raw syscalls and io_uring
# corrupted.
fline="regcache-fabric: libfabric's MR cache uses regcache monitor"
job ofi-regcached nobody "$run" clean "$fline \"regcached\"" STACK=ofi \
	REGCACHE_MONITOR=regcached REGCACHE_LOG=info
job ofi-bpf root "$run" clean "$fline \"bpf\"" STACK=ofi REGCACHE_MONITOR=bpf REGCACHE_LOG=info
job ofi-hooks root - stale "" STACK=ofi
# On demand (NODES_MPI_ONLY=mpich; the Debian 12 root here has no MPICH,
# the Debian 13 root has 4.2.1): MPICH across the nodes, the same three
# runs on ch4:ucx. Their end is not reliable on UCX 1.18.1 between the
# guests, with or without regcache-run: after rank 1's PASS, node1's rank
# sometimes aborts on an IB async event handled twice ("ib_device.c:210
# Assertion wait_ctx->cb_id == UCS_CALLBACKQ_ID_NULL failed") or the job
# hangs until its timeout (docs/vm.md); such a run fails.
ma="STACK=mpich UCX_RNDV_SCHEME=get_zcopy"
job mpich-regcached nobody "$run" clean "$line \"regcached\"" $ma \
	REGCACHE_MONITOR=regcached REGCACHE_LOG=info
job mpich-bpf root "$run" clean "$line \"bpf\"" $ma REGCACHE_MONITOR=bpf REGCACHE_LOG=info
job mpich-hooks root - stale "" $ma
job ucx-hooks root - stale "" UCX_RNDV_SCHEME=get_zcopy
job nocache root - nocache "" UCX_RNDV_SCHEME=get_zcopy

# On demand (NODES_MPI_ONLY=socket-activation): regcached started the way
# deploy/systemd/regcached.socket starts it, through the listening socket
# it is handed (LISTEN_FDS=1, fd 3), by systemd-socket-activate (the
# guests run no systemd): a second daemon on node1, on its own socket
# /run/regcache-sa/regcached.sock, started by the first connection. As uid
# 65534 regcache-info gets monitor regcached there and the new daemon's
# log has that pid; the control: before the activator listens, the same
# command does not get regcached.
if echo socket-activation | grep -Eq "$only"; then
	say "=== socket-activation"
	sa=/run/regcache-sa/regcached.sock
	info_sa="timeout 300 ssh nobody@node1 'echo pid \$\$; REGCACHE_SOCKET=$sa REGCACHE_REGCACHED_TIMEOUT_MS=120000 exec $build/tools/regcache-info'"
	c=$(eval "$info_sa" 2>&1 | grep '^monitor:')
	echo "  before the activator listens: $c"
	ssh node1 "mkdir -p -m 0755 /run/regcache-sa && ulimit -l unlimited && umask 0 &&
		{ nohup systemd-socket-activate --seqpacket -l $sa $build/tools/regcached -v \
			>/tmp/regcached-sa.log 2>&1 </dev/null & echo \$! >/run/regcache-sa/pid; }
		i=0; while [ ! -S $sa ] && [ \$i -lt 100 ]; do sleep 0.2; i=\$((i + 1)); done
		chmod 0666 $sa	# the socket unit's SocketMode (the activator makes it 0644)
		echo \"  node1: \$(ls -l $sa)\"; echo \"  node1: started: \$(pgrep -a regcached | tr '\n' ';')\""
	o=$(eval "$info_sa" 2>&1)
	echo "$o" | grep -E '^(pid|monitor:|  regcached)' | sed 's/^/  activated: /'
	ip=$(echo "$o" | sed -n 's/^pid //p')
	ssh node1 "cat /tmp/regcached-sa.log; echo node1 now runs: \$(pgrep -a regcached | tr '\n' ';')" | sed 's/^/  node1 regcached-sa.log: /'
	v=
	[ -n "$c" ] && ! echo "$c" | grep -q regcached || v="$v; the control got regcached before the activator listened"
	echo "$o" | grep -Eq '^monitor: +regcached ' || v="$v; regcache-info did not get regcached through the activated socket"
	ssh node1 "grep -q 'pid $ip uid 65534 slot [0-9]* registered' /tmp/regcached-sa.log" ||
		v="$v; the activated daemon did not register pid $ip"
	ssh node1 'kill $(cat /run/regcache-sa/pid)'
	if [ -z "$v" ]; then say "ok   socket-activation"; else say "FAIL socket-activation${v}"; fails="$fails socket-activation"; fi
fi

for n in node0 node1; do
	ssh "$n" 'pgrep -x regcached >/dev/null' || { say "FAIL regcached is gone on $n"; fails="$fails regcached@$n"; }
done
if [ -z "$fails" ]; then
	say PASS
else
	say "failed:$fails (FAIL)"
	exit 1
fi
