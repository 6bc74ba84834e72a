#!/bin/sh
# The MPI job of tests/vm/nodes-mpi.sh started by Slurm's srun, as
# docs/deploy.md tells operators to launch it, across two guests (on
# demand, not in CI):
#   tests/vm/nodes-slurm.sh [BUILD]
# BUILD (default build-test-plain): the build directory with mpi-rxe,
# regcached and regcache-run. On the host it installs what is missing of
# Slurm 22.05 and MUNGE (Debian 12: slurmctld, slurmd, slurm-client,
# slurm-wlm-basic-plugins, munge; the guests share the host's root
# read-only, so their programs must be there) and boots two guests
# (tests/vm/run.sh --nodes 2) that run this script again on node0, which:
#   - makes a MUNGE key for the run, gives it to both nodes and starts
#     munged on each (checked: a credential made on one node decodes on
#     the other);
#   - writes a minimal slurm.conf for the run on both nodes (no cgroup
#     confines a job: proctrack/linuxproc, task/none; SlurmUser root; a
#     cgroup.conf for the cgroup slurmd makes for its steps without
#     systemd; the state and spool
#     directories in the run's temporary directory, which is in each
#     guest's own /tmp) and starts slurmctld on node0 and slurmd on both;
#   - starts regcached on each node as deploy/systemd does (the unit's
#     ExecStart, memlock unlimited), as nodes-mpi.sh does;
#   - srun as uid 65534 (ssh nobody@node0: no capabilities, memlock
#     unlimited, as nodes-mpi.sh's ranks; Slurm's PropagateResourceLimits
#     carries the limit to the tasks): each task's node, uid, capabilities
#     and memlock;
#   - the MPI job, pml ucx, with `srun -N 2 --ntasks-per-node=1 --mpi=pmix
#     regcache-run mpi-rxe clean`: 0 corrupted, every rank's bridge line
#     says monitor "regcached", and each node's regcached registered a uid
#     65534 client;
#   - the same with 2 ranks per node (-m cyclic: the pairs 0-1 and 2-3
#     across the nodes);
#   - the negative control: the same job without regcache-run (UCX's own
#     hooks), `mpi-rxe stale`: the messages after raw syscalls and
#     io_uring corrupted.
# Every step is bounded (NODES_SLURM_TIMEOUT, 600 s, for each job; the
# guests: run.sh --timeout 2400). Prints PASS, or FAIL with the reason and
# exits nonzero; nothing is skipped.
set -u
cd "$(dirname "$0")/../.."
say() { echo "nodes-slurm: $*"; }
die() { say "$* (FAIL)"; exit 1; }

if [ ! -e /run/regcache-vm/guest.conf ]; then
	# On the host.
	build=$(realpath -m "${1:-build-test-plain}")
	for f in tests/mpi-rxe tools/regcached tools/regcache-run; do
		[ -x "$build/$f" ] || die "$build/$f is not built"
	done
	# No package may start a service on the host: policy-rc.d denies
	# every start, and stays as it is.
	policy='#!/bin/sh
exit 101'
	[ "$(cat /usr/sbin/policy-rc.d 2>/dev/null)" = "$policy" ] ||
		die "/usr/sbin/policy-rc.d is not '#!/bin/sh / exit 101': a package would start its service on this host"
	pkgs="slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge"
	missing=
	for p in $pkgs; do
		dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		say "installing$missing"
		[ "$(id -u)" = 0 ] || die "$missing missing, and only root installs them"
		DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y --no-install-recommends $missing ||
			die "apt-get install$missing failed"
		[ "$(cat /usr/sbin/policy-rc.d 2>/dev/null)" = "$policy" ] ||
			die "/usr/sbin/policy-rc.d changed while installing"
	fi
	for f in /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/srun /usr/sbin/munged \
		/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix_v4.so; do
		[ -e "$f" ] || die "$f is missing after the install"
	done
	start=$(date +%s)
	tests/vm/run.sh --nodes 2 --timeout "${NODES_SLURM_VM_TIMEOUT:-2400}" \
		--env "NODES_SLURM_TIMEOUT=${NODES_SLURM_TIMEOUT:-600}" \
		--env "NODES_SLURM_ONLY=${NODES_SLURM_ONLY:-}" \
		-- tests/vm/nodes-slurm.sh "$build"
	status=$?
	say "run.sh exited $status after $(($(date +%s) - start)) s"
	exit $status
fi

# In the guest, on node0.
build=$(realpath -m "${1:-build-test-plain}")
limit=${NODES_SLURM_TIMEOUT:-600}
only=${NODES_SLURM_ONLY:-}
[ -n "$only" ] || only='^(srun-ranks|regcached-2|regcached-4|ucx-hooks)$'
fails=
. /run/regcache-vm/guest.conf
[ "${nodes:-1}" -ge 2 ] && [ "$node" = 0 ] ||
	die "run it on the host, or on node0 of tests/vm/run.sh --nodes 2, not node${node:-?} of ${nodes:-1}"
prog=$build/tests/mpi-rxe run=$build/tools/regcache-run
ns="node0 node1"
on() { timeout 120 ssh "$@"; }	# NODE COMMAND: bounded

# The run's directory: the same path on both nodes, each in its guest's
# own /tmp (a tmpfs); readable by munge, which drops root.
tmp=$(mktemp -d /tmp/nodes-slurm.XXXXXX) && chmod 0755 "$tmp" || die "no temporary directory"
on node1 "mkdir -m 0755 $tmp" || die "cannot make $tmp on node1"
say "the run's directory: $tmp on node0 and node1"

# MUNGE: one key for the run on both nodes (from node0 over ssh), munged
# as the munge user with its key, seed, log and pid in the run's directory
# and its socket where libmunge looks (/run/munge).
head -c 1024 /dev/urandom >"$tmp/munge.key" || die "cannot make the MUNGE key"
for n in $ns; do
	on "$n" "install -d -o munge -g munge -m 0700 $tmp/munge &&
		cat >$tmp/munge/munge.key && chown munge:munge $tmp/munge/munge.key &&
		chmod 0400 $tmp/munge/munge.key && install -d -o munge -g munge -m 0755 /run/munge &&
		runuser -u munge -- /usr/sbin/munged --key-file=$tmp/munge/munge.key \
			--pid-file=$tmp/munge/munged.pid --log-file=$tmp/munge/munged.log \
			--seed-file=$tmp/munge/munged.seed" <"$tmp/munge.key" ||
		{ on "$n" "cat $tmp/munge/munged.log"; die "munged did not start on $n"; }
done
rm -f "$tmp/munge.key"
# A credential made on each node decodes on the other.
for a in node0:node1 node1:node0; do
	o=$(on "${a%:*}" munge -n | on "${a#*:}" unmunge 2>&1)
	echo "$o" | grep -q '^STATUS: *Success' ||
		{ echo "$o" | sed 's/^/  /'; die "a MUNGE credential from ${a%:*} does not decode on ${a#*:}"; }
done
say "munged on node0 and node1: a credential from each decodes on the other"

# Slurm: one controller (node0), a slurmd on each node. Root is SlurmUser
# (the guests' root is the only account with a home besides nobody); no
# cgroup (linuxproc and task/none); limits of the submitting shell
# propagated to the tasks (memlock among them).
cat >"$tmp/slurm.conf" <<EOF
ClusterName=regcachevm
SlurmctldHost=node0
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
PropagateResourceLimits=ALL
ReturnToService=2
MailProg=/bin/true
StateSaveLocation=$tmp/slurmctld
SlurmdSpoolDir=$tmp/slurmd
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=node0 NodeAddr=10.77.0.1 CPUs=$(nproc) State=UNKNOWN
NodeName=node1 NodeAddr=10.77.0.2 CPUs=$(nproc) State=UNKNOWN
PartitionName=vm Nodes=node0,node1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
# slurmd 22.05 loads a cgroup plugin whatever the other plugins are, and
# cgroup/v2 asks systemd (over D-Bus) for slurmstepd's scope: the guests
# run no systemd, so slurmd makes that cgroup itself (IgnoreSystemd), in
# /sys/fs/cgroup/system.slice, which must exist. No
# job is confined by it (proctrack/linuxproc, task/none).
cat >"$tmp/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v2
CgroupMountpoint=/sys/fs/cgroup
IgnoreSystemd=yes
EOF
for n in $ns; do
	on "$n" "mkdir -p /etc/slurm $tmp/slurmctld $tmp/slurmd && cat >/etc/slurm/slurm.conf" <"$tmp/slurm.conf" &&
		on "$n" "cat >/etc/slurm/cgroup.conf" <"$tmp/cgroup.conf" ||
		die "cannot write /etc/slurm/slurm.conf and cgroup.conf on $n"
done
slurmd_log() { for n in $ns; do on "$n" "tail -n 20 $tmp/slurmd.log" | sed "s/^/  $n slurmd.log: /"; done; }
on node0 "ulimit -l unlimited && /usr/sbin/slurmctld" ||
	{ cat "$tmp/slurmctld.log"; die "slurmctld did not start on node0"; }
for n in $ns; do
	on "$n" "mkdir -p /sys/fs/cgroup/system.slice && ulimit -l unlimited && /usr/sbin/slurmd -N $n" ||
		{ slurmd_log; die "slurmd did not start on $n"; }
done
# Both nodes idle (registered with the controller), within 120 s.
i=0
while :; do
	st=$(timeout 30 sinfo -h -N -o '%N %t' 2>&1 | sort | tr '\n' ' ')
	[ "$st" = "node0 idle node1 idle " ] && break
	i=$((i + 1))
	[ $i -lt 60 ] || { tail -n 20 "$tmp/slurmctld.log"; slurmd_log; die "the nodes are not idle: $st"; }
	sleep 2
done
say "slurmctld on node0, slurmd on node0 and node1: sinfo says $st"

# regcached on every node, the way deploy/systemd starts it (the unit's
# ExecStart with its LimitMEMLOCK), as nodes-mpi.sh starts it.
for n in $ns; do
	on "$n" "mkdir -p -m 0755 /run/regcache && ulimit -l unlimited &&
		{ nohup $build/tools/regcached -v >>/tmp/regcached.log 2>&1 </dev/null & echo \$! >/run/regcache/pid; }
		i=0; while [ ! -S /run/regcache/regcached.sock ] && [ \$i -lt 300 ]; do sleep 0.2; i=\$((i + 1)); done
		[ -S /run/regcache/regcached.sock ]" ||
		{ on "$n" cat /tmp/regcached.log; die "regcached did not start on $n"; }
done
say "regcached serves /run/regcache/regcached.sock on node0 and node1"

# srun as uid 65534 from an ssh session (no capabilities, memlock
# unlimited): USER SRUN-OPTIONS-AND-COMMAND, sets out and status.
srun_as() {
	u=$1
	shift
	out=$(timeout "$limit" ssh "$u@node0" "cd $PWD && echo \"srun's shell: uid \$(id -u), memlock \$(ulimit -l)\" && $*" 2>&1)
	status=$?
}

# What a task of srun is: uid 65534, no capabilities, memlock unlimited,
# one on each node.
if echo srun-ranks | grep -Eq "$only"; then
	say "=== srun-ranks"
	srun_as nobody "srun -N 2 --ntasks-per-node=1 sh -c 'echo \$(hostname) uid=\$(id -u) \$(grep CapEff /proc/self/status | tr -d \"\t\") memlock=\$(ulimit -l)'"
	echo "$out" | sed 's/^/  /'
	r=$(echo "$out" | grep '^node' | sort)
	if [ $status = 0 ] && [ "$r" = "$(printf '%s\n' "node0 uid=65534 CapEff:0000000000000000 memlock=unlimited" \
		"node1 uid=65534 CapEff:0000000000000000 memlock=unlimited")" ]; then
		say "ok   srun-ranks"
	else
		say "FAIL srun-ranks: srun's tasks are not uid 65534 on node0 and node1 without capabilities and memlock unlimited (status $status)"
		fails="$fails srun-ranks"
	fi
fi

# The environment each rank needs, as tests/mpi-rxe.sh gives it to
# mpirun's ranks (srun passes the submitting shell's): Open MPI's pml ucx
# on rc_verbs, and what UCX needs on rxe (UD wireup without the
# destination-GID check, zero-copy rendezvous from 8 KiB).
dev=$(ls /sys/class/infiniband | head -n 1)
[ -n "$dev" ] || die "no RDMA device in the guest"
mpienv="OMPI_MCA_pml=ucx OMPI_MCA_btl=self OMPI_MCA_osc=^ucx \
UCX_TLS=rc_verbs,ud_verbs,self UCX_UD_VERBS_ETH_DGID_CHECK=n UCX_NET_DEVICES=$dev:1 \
UCX_RNDV_THRESH=8192 UCX_RNDV_SCHEME=get_zcopy UCX_IB_GID_INDEX=0 MPI_RXE_NEEDS=ucx"
line='regcache-ucx: UCX unmap events come from regcache monitor'
# NAME PER-NODE RUN MODE WANT [VAR=VALUE...]: one srun job of mpi-rxe as
# uid 65534, PER-NODE ranks on each node (cyclic: rank i on node i % 2, so
# every pair crosses the wire); WANT: the bridge line every rank prints.
job() {
	name=$1 per=$2 r=$3 mode=$4 want=$5
	shift 5
	echo "$name" | grep -Eq "$only" || return 0
	say "=== $name"
	[ "$r" != - ] || r=
	np=$((2 * per))
	# Each node's regcached log: how many lines it had before the job.
	b0=$(on node0 'wc -l </tmp/regcached.log') b1=$(on node1 'wc -l </tmp/regcached.log')
	t0=$(date +%s)
	srun_as nobody "env $mpienv $* srun -N 2 --ntasks-per-node=$per -m cyclic --mpi=pmix $r $prog $mode"
	echo "$out" | sed 's/^/  /'
	say "$name: srun exited $status after $(($(date +%s) - t0)) s"
	v=
	[ $status = 0 ] || v="$v; exit status $status"
	echo "$out" | grep -q 'mpi-rxe: PASS' || v="$v; no PASS line"
	echo "$out" | grep -q 'FAIL' && v="$v; a FAIL line"
	echo "$out" | grep -q "^mpi-rxe: $np ranks, rank 0 on node0, rank 1 on node1" ||
		v="$v; not $np ranks with rank 0 on node0 and rank 1 on node1"
	# The control: no bridge, and messages after raw syscalls and io_uring
	# corrupted (mpi-rxe stale checks each such kind too).
	if [ "$mode" = stale ]; then
		echo "$out" | grep -q 'regcache-ucx:' && v="$v; a rank ran regcache's bridge"
		echo "$out" | grep -Eq 'corrupted: [0-9]+ of [0-9]+ messages \([1-9][0-9]* after raw syscalls and io_uring\)' ||
			v="$v; no message after raw syscalls and io_uring corrupted"
	fi
	if [ -n "$want" ]; then
		[ "$(echo "$out" | grep -c "$want")" -ge "$np" ] ||
			v="$v; the bridge's line '$want' not from all $np ranks"
		# Each node's regcached registered this job's uid 65534 ranks.
		for n in $ns; do
			b=$b0
			[ "$n" = node0 ] || b=$b1
			c=$(on "$n" "tail -n +$((b + 1)) /tmp/regcached.log" 2>/dev/null |
				grep -c 'uid 65534 slot [0-9]* registered')
			say "$name: $n's regcached registered $c uid 65534 client(s) during the job"
			[ "$c" -ge "$per" ] || v="$v; $n's regcached registered $c uid 65534 clients, not $per"
		done
	fi
	if [ -z "$v" ]; then say "ok   $name"; else say "FAIL $name$v"; fails="$fails $name"; fi
}
job regcached-2 1 "$run" clean "$line \"regcached\"" REGCACHE_MONITOR=regcached REGCACHE_LOG=info
job regcached-4 2 "$run" clean "$line \"regcached\"" REGCACHE_MONITOR=regcached REGCACHE_LOG=info
job ucx-hooks 1 - stale ""

for n in $ns; do
	on "$n" 'pgrep -x regcached >/dev/null' || { say "FAIL regcached is gone on $n"; fails="$fails regcached@$n"; }
done
if [ -z "$fails" ]; then
	say PASS
else
	tail -n 30 "$tmp/slurmctld.log" | sed 's/^/  node0 slurmctld.log: /'
	slurmd_log
	say "failed:$fails (FAIL)"
	exit 1
fi
