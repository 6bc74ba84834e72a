#!/bin/sh
# Checks the wire between the guests of tests/vm/run.sh --nodes N, run on
# node0 (as its COMMAND):
#   tests/vm/run.sh --nodes 2 -- tests/vm/nodes-check.sh
#   tests/vm/debian13.sh run --nodes 2 -- tests/vm/nodes-check.sh
# From node0 to every other node: ping; ssh as root and as uid 65534 (whose
# session has memlock unlimited); RDMA between the two rxe devices
# (ibv_rc_pingpong over the RoCEv2 IPv4 GID); then Open MPI's mpirun and,
# where MPICH is installed (the Debian 13 root), its mpiexec, each starting
# one process per node. Prints PASS, or FAIL with each failed check; every
# step is bounded in time. Not a guest of several nodes: FAIL.
set -u
fails=0
ok() { echo "nodes-check: ok   $*"; }
bad() { echo "nodes-check: FAIL $*"; fails=$((fails + 1)); }
if [ ! -r /run/regcache-vm/guest.conf ]; then
	echo "nodes-check: not in a guest of tests/vm/run.sh (FAIL)"
	exit 1
fi
. /run/regcache-vm/guest.conf
if [ "${nodes:-1}" -lt 2 ] || [ "$node" != 0 ]; then
	echo "nodes-check: run it on node0 of tests/vm/run.sh --nodes N (N >= 2), not node${node:-?} of ${nodes:-1} (FAIL)"
	exit 1
fi
if command -v ping >/dev/null; then ping=ping; else ping="busybox ping"; fi
hosts=node0
i=1
while [ "$i" -lt "$nodes" ]; do
	n=node$i
	hosts=$hosts,$n
	if timeout 30 $ping -c 2 -W 5 "$n" >/dev/null 2>&1; then ok "ping $n"; else bad "ping $n"; fi
	[ "$(timeout 60 ssh "$n" hostname 2>&1)" = "$n" ] && ok "ssh root@$n" || bad "ssh root@$n"
	out=$(timeout 60 su -s /bin/sh nobody -c "ssh $n 'id -u; ulimit -l'" 2>&1 | tr '\n' ' ')
	[ "$out" = "65534 unlimited " ] && ok "ssh as uid 65534 to $n (memlock unlimited)" ||
		bad "ssh as uid 65534 to $n: '$out', not '65534 unlimited'"
	# RDMA from node0's rxe0 to the node's: RC SENDs both ways, over
	# GID 1 (the IPv4 address; GID 0 is the link-local IPv6 one).
	timeout 120 ssh "$n" ibv_rc_pingpong -d rxe0 -g 1 -n 20 >/tmp/pp-server.$$ 2>&1 &
	spid=$!
	# The server listens once ssh has started it: try until it does.
	tries=0
	while :; do
		cout=$(timeout 100 ibv_rc_pingpong -d rxe0 -g 1 -n 20 "$n" 2>&1)
		crc=$?
		tries=$((tries + 1))
		echo "$cout" | grep -q "Couldn't connect" && [ $tries -lt 40 ] &&
			kill -0 $spid 2>/dev/null || break
		sleep 2
	done
	wait $spid
	src=$?
	if [ $crc = 0 ] && [ $src = 0 ] && echo "$cout" | grep -q '20 iters'; then
		ok "ibv_rc_pingpong node0 -> $n: $(echo "$cout" | grep iters)"
	else
		bad "ibv_rc_pingpong node0 -> $n (client $crc, server $src): $cout $(cat /tmp/pp-server.$$)"
	fi
	rm -f /tmp/pp-server.$$
	i=$((i + 1))
done

want=$(echo "$hosts" | tr ',' '\n' | sort)
# Open MPI (mpirun's ssh launcher), as root and as uid 65534.
if command -v mpirun.openmpi >/dev/null; then
	got=$(timeout 120 mpirun.openmpi --allow-run-as-root -H "$hosts" -np "$nodes" hostname 2>&1 | sort)
	[ "$got" = "$want" ] && ok "mpirun (Open MPI) as root on $hosts" ||
		bad "mpirun (Open MPI) as root on $hosts: $got"
	got=$(cd /tmp && timeout 120 su -s /bin/sh nobody -c "mpirun.openmpi -H $hosts -np $nodes hostname" 2>&1 | sort)
	[ "$got" = "$want" ] && ok "mpirun (Open MPI) as uid 65534 on $hosts" ||
		bad "mpirun (Open MPI) as uid 65534 on $hosts: $got"
else
	bad "no mpirun.openmpi: apt-get install openmpi-bin"
fi
# MPICH's hydra launcher, where MPICH is installed.
if command -v mpiexec.mpich >/dev/null; then
	got=$(timeout 120 mpiexec.mpich -hosts "$hosts" -n "$nodes" hostname 2>&1 | sort)
	[ "$got" = "$want" ] && ok "mpiexec (MPICH) on $hosts" ||
		bad "mpiexec (MPICH) on $hosts: $got"
else
	echo "nodes-check: MPICH is not installed in this root (the Debian 13 root has it): mpiexec not checked"
fi
if [ "$fails" = 0 ]; then
	echo "nodes-check: PASS"
else
	echo "nodes-check: $fails failed (FAIL)"
	exit 1
fi
