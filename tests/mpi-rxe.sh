#!/bin/sh
# Runs mpi-rxe as a 2-rank MPI job on this node (tests/mpi.cmake):
#   mpi-rxe.sh PROGRAM RUN|- stale|clean|nocache ucx|ofi|mpich [options...]
# MPI_RXE_NP: another even number of ranks, and launcher options such as
# -H node0,node1 spread them over nodes (tests/vm/nodes-mpi.sh); the
# arguments after the program's mode (MPI_RXE_ARGS: rounds, bytes) go to it.
# RUN is regcache-run (each rank started through it) or - (none). ucx:
# Open MPI, pml ucx on rc_verbs; ofi: Open MPI, pml cm + mtl ofi on
# libfabric's verbs;ofi_rxm; mpich: MPICH's Hydra ($MPIEXEC_MPICH, else
# mpiexec.mpich) and PROGRAM built against MPICH, whose netmod (Debian's:
# ch4:ucx) runs on rc_verbs as for ucx, started by Hydra's fork launcher
# (MPI_RXE_LAUNCHER: another, e.g. ssh across nodes). The options go to
# the launcher.
# Skips (77) without an RDMA device. Everything the MPI needs from the
# environment is set here: root in the guest (--allow-run-as-root), more
# ranks than cores (--oversubscribe), a writable session directory, and
# what Soft-RoCE needs from UCX and libfabric (docs/bridges.md, MPI).
set -eu
prog=$1 run=$2 expect=$3 stack=$4
shift 4
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	echo "No RDMA device found (/sys/class/infiniband is empty): skipped;" \
	     "tests/vm/run.sh gives a Soft-RoCE device"
	exit 77
fi
dev=$(ls /sys/class/infiniband | head -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR="$tmp" OMPI_MCA_orte_tmpdir_base="$tmp"
# UCX on rxe, for pml ucx and MPICH's ch4:ucx alike. Ranks connect by
# worker address, whose wireup goes over ud_verbs; UCX 1.13 drops every
# UD packet that rxe delivers unless its destination-GID check is off
# (measured: "UD endpoint ... unhandled timeout error" with it on).
# Zero-copy rendezvous, as UCX picks on a NIC: UCX >= 1.14 copies on rxe
# by default, which registers the user's buffers and then does not read
# them (no corruption for the control to show).
ucx_env="UCX_TLS=${UCX_TLS:-rc_verbs,ud_verbs,self}
UCX_UD_VERBS_ETH_DGID_CHECK=n
UCX_NET_DEVICES=${UCX_NET_DEVICES:-$dev:1}
UCX_RNDV_THRESH=8192
UCX_RNDV_SCHEME=${UCX_RNDV_SCHEME:-get_zcopy}"
passed="REGCACHE_MONITOR REGCACHE_LOG UCX_MEM_MMAP_HOOK_MODE MPI_RXE_NEEDS"
# What the ranks must have loaded (mpi-rxe.c checks it).
MPI_RXE_NEEDS=ucx
[ "$stack" != ofi ] || MPI_RXE_NEEDS=libfabric
export MPI_RXE_NEEDS
[ "$run" != - ] || run=
case "$stack" in
ucx|ofi)
	command -v mpirun >/dev/null ||
		{ echo "mpirun missing: apt-get install openmpi-bin (FAIL)"
		  exit 1; }
	if [ "$stack" = ucx ]; then
		set -- --mca pml ucx --mca btl self --mca osc ^ucx "$@"
		for e in $ucx_env; do set -- -x "$e" "$@"; done
	else
		# ofi_rxm sizes its verbs CQ (rx + tx queue) x
		# FI_UNIVERSE_SIZE: (128 + 128) x 256 = 65536 by default,
		# above rxe's max_cqe (32767), so ibv_create_cq fails
		# ("vrb_cq_open(): Unable to create verbs CQ"); 2 ranks need
		# 16. Messages above the eager size go by rendezvous (the
		# user's buffers registered through the MR cache), not by
		# segmentation through rxm's own bounce buffers.
		set -- --mca pml cm --mca mtl ofi --mca btl self \
			--mca mtl_ofi_provider_include "verbs;ofi_rxm" \
			-x FI_PROVIDER="verbs;ofi_rxm" \
			-x FI_VERBS_DEVICE_NAME="$dev" \
			-x FI_UNIVERSE_SIZE=16 -x FI_OFI_RXM_SAR_LIMIT=8192 "$@"
	fi
	for v in $passed; do
		eval "[ -n \"\${$v+x}\" ]" && set -- "$@" -x "$v"
	done
	exec mpirun --allow-run-as-root --oversubscribe \
		-np "${MPI_RXE_NP:-2}" --bind-to none \
		"$@" $run "$prog" "$expect" ${MPI_RXE_ARGS:-} ;;
mpich)
	mpiexec=${MPIEXEC_MPICH:-mpiexec.mpich}
	command -v "$mpiexec" >/dev/null ||
		{ echo "$mpiexec missing: apt-get install mpich (FAIL)"
		  exit 1; }
	# Both ranks on this node would talk through shared memory, which
	# registers nothing: NOLOCAL sends them through the netmod.
	set -- -genv MPIR_CVAR_NOLOCAL 1 "$@"
	for e in $ucx_env; do set -- -genv "${e%%=*}" "${e#*=}" "$@"; done
	for v in $passed; do
		eval "[ -n \"\${$v+x}\" ]" &&
			eval "set -- \"\$@\" -genv $v \"\$$v\""
	done
	exec "$mpiexec" -launcher "${MPI_RXE_LAUNCHER:-fork}" -n "${MPI_RXE_NP:-2}" "$@" \
		$run "$prog" "$expect" ${MPI_RXE_ARGS:-} ;;
*) echo "mpi-rxe.sh: stack ucx, ofi or mpich, not $stack"; exit 2 ;;
esac
