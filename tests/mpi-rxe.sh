#!/bin/sh
# Runs mpi-rxe as a 2-rank Open MPI job on this node (tests/bridges.cmake):
#   mpi-rxe.sh PROGRAM RUN|- stale|clean|nocache ucx|ofi [mpirun options...]
# MPI_RXE_NP: another even number of ranks, and mpirun options such as
# -H node0,node1 spread them over nodes (tests/vm/nodes-mpi.sh); the
# arguments after the program's mode (MPI_RXE_ARGS: rounds, bytes) go to it.
# RUN is regcache-run (each rank started through it) or - (none). ucx:
# pml ucx on rc_verbs; ofi: pml cm + mtl ofi on libfabric's verbs;ofi_rxm.
# Skips (77) without an RDMA device. Everything Open MPI needs from the
# environment is set here: root in the guest (--allow-run-as-root), more
# ranks than cores (--oversubscribe), a writable session directory, and
# what Soft-RoCE needs from UCX and libfabric (docs/bridges.md, Open MPI).
set -eu
prog=$1 run=$2 expect=$3 stack=$4
shift 4
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	echo "No RDMA device found (/sys/class/infiniband is empty): skipped;" \
	     "tests/vm/run.sh gives a Soft-RoCE device"
	exit 77
fi
command -v mpirun >/dev/null || { echo "mpirun missing: apt-get install openmpi-bin (FAIL)"; exit 1; }
dev=$(ls /sys/class/infiniband | head -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp" OMPI_MCA_orte_tmpdir_base="$tmp"
case "$stack" in
ucx)
	# pml ucx connects ranks by worker address, whose wireup goes over
	# ud_verbs; UCX 1.13 drops every UD packet that rxe delivers unless
	# its destination-GID check is off (measured: "UD endpoint ...
	# unhandled timeout error" with it on).
	set -- --mca pml ucx --mca btl self --mca osc ^ucx \
		-x UCX_TLS="${UCX_TLS:-rc_verbs,ud_verbs,self}" \
		-x UCX_UD_VERBS_ETH_DGID_CHECK=n \
		-x UCX_NET_DEVICES="${UCX_NET_DEVICES:-$dev:1}" \
		-x UCX_RNDV_THRESH=8192 "$@" ;;
ofi)
	# ofi_rxm sizes its verbs CQ (rx + tx queue) x FI_UNIVERSE_SIZE:
	# (128 + 128) x 256 = 65536 by default, above rxe's max_cqe (32767),
	# so ibv_create_cq fails ("vrb_cq_open(): Unable to create verbs
	# CQ"); 2 ranks need 16. Messages above the eager size go by
	# rendezvous (the user's buffers registered through the MR cache),
	# not by segmentation through rxm's own bounce buffers.
	set -- --mca pml cm --mca mtl ofi --mca btl self \
		--mca mtl_ofi_provider_include "verbs;ofi_rxm" \
		-x FI_PROVIDER="verbs;ofi_rxm" -x FI_VERBS_DEVICE_NAME="$dev" \
		-x FI_UNIVERSE_SIZE=16 -x FI_OFI_RXM_SAR_LIMIT=8192 "$@" ;;
*) echo "mpi-rxe.sh: stack ucx or ofi, not $stack"; exit 2 ;;
esac
for v in REGCACHE_MONITOR REGCACHE_LOG UCX_MEM_MMAP_HOOK_MODE; do
	eval "[ -n \"\${$v+x}\" ]" && set -- "$@" -x "$v"
done
if [ "$run" = - ]; then
	run=
fi
exec mpirun --allow-run-as-root --oversubscribe -np "${MPI_RXE_NP:-2}" --bind-to none "$@" \
	$run "$prog" "$expect" ${MPI_RXE_ARGS:-}
