#!/bin/bash
# Runs a command as root inside a QEMU guest on a stock distribution kernel
# (Debian 12's 6.1 by default), with the host's root file system shared
# read-only over 9p, the checkout shared read-write at the same path, `lo`
# up and a Soft-RoCE device (rxe0 on dummy0) ready. Prints the command's
# output and exits with its status. No image is built or downloaded: the
# kernel is a Debian package, fetched with apt-get and unpacked, the
# initramfs is busybox-static and the kernel's own modules.
#
# Usage: tests/vm/run.sh [options] -- COMMAND [ARG...]
#   --nodes N        N guests (default 1) joined by one private Ethernet wire
#                    (QEMU -netdev dgram over Unix sockets in a temporary
#                    directory; no host interface): node<i> is 10.77.0.<i+1>
#                    on eth0 with rxe0 over it, every guest resolves
#                    node0..node<N-1> and runs sshd with keys made for the
#                    run, so mpirun and mpiexec reach the others over ssh
#                    (tests/vm/node.sh); COMMAND runs on node0 once every
#                    node answers ssh
#   --kernel DEB|DIR|PACKAGE  a linux-image .deb, a directory it was unpacked
#                    into (boot/vmlinuz-*, lib/modules/*; or, as Debian 13
#                    packages it, usr/lib/modules/*/vmlinuz), or a package name
#                    for apt-get download (default: linux-image-amd64, that
#                    is Debian 12's current 6.1; e.g.
#                    linux-image-amd64/bookworm-backports for a newer one)
#   --accel auto|kvm|tcg  auto (default) uses KVM where a KVM guest boots
#                    on this host and TCG (software emulation) otherwise
#   --cpus N (2)  --mem SIZE (2G)  --timeout SECONDS (1800)
#   --env NAME=VALUE  set in the guest (REGCACHE_* is passed on already)
#   --console        copy the kernel's console to stderr as it boots
#   --private-checkout  the guest sees the checkout read-only, under its own
#                    writable overlay (several guests at once on one tree)
#   --root DIR       the guest's root file system (default /, the host's):
#                    a Debian root made with mmdebstrap, e.g. Debian 13's
#                    (tests/vm/debian13.sh); the checkout is still shared
#                    at its own path, so a build made in that root runs
#   --print-kernel   print the kernel's major.minor (fetching and preparing
#                    it if needed) and exit
#
# Exit status: the command's; 125 when the guest could not be started or
# did not report a status (the reason and the kernel's last lines go to
# stderr). REGCACHE_VM_CACHE (default ~/.cache/regcache-vm) holds the
# downloaded kernels and the KVM probe's verdict.
set -euo pipefail

die() { echo "tests/vm/run.sh: $*" >&2; exit 125; }

kernel=linux-image-amd64 accel=auto cpus=2 mem=2G timeout=1800 console=0 print_kernel=0
private_checkout=0 guest_root=/ nodes=1
guest_env=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--env) guest_env+=("$2"); shift 2 ;;
	--console) console=1; shift ;;
	--private-checkout) private_checkout=1; shift ;;
	--nodes) nodes=$2; shift 2 ;;
	--root) guest_root=$(realpath "$2"); shift 2 ;;
	--print-kernel) print_kernel=1; shift ;;
	--) shift; break ;;
	*) die "unknown option $1 (usage: run.sh [options] -- COMMAND...)" ;;
	esac
done
[ $# -gt 0 ] || [ "$print_kernel" = 1 ] || die "no command (usage: run.sh [options] -- COMMAND...)"
case "$accel" in auto|kvm|tcg) ;; *) die "--accel auto|kvm|tcg, not $accel" ;; esac
case "$nodes" in ''|*[!0-9]*) die "--nodes takes a number, not '$nodes'" ;; esac
[ "$nodes" -ge 1 ] && [ "$nodes" -le 200 ] || die "--nodes 1..200, not $nodes"

for tool in qemu-system-x86_64 busybox cpio depmod modprobe; do
	command -v "$tool" >/dev/null ||
		die "$tool is missing: apt-get install qemu-system-x86 busybox-static cpio kmod"
done
# Each run's ssh keys are made on the host, in the run's private directory.
[ "$nodes" = 1 ] || command -v ssh-keygen >/dev/null ||
	die "ssh-keygen is missing (--nodes): apt-get install openssh-client"
busybox_bin=$(command -v busybox)
file -L "$busybox_bin" 2>/dev/null | grep -q 'statically linked' ||
	die "$busybox_bin is not static: apt-get install busybox-static"

checkout=$(cd "$(dirname "$0")/../.." && pwd -P)
cache=${REGCACHE_VM_CACHE:-${HOME:-/root}/.cache/regcache-vm}
mkdir -p "$cache"

# --- the kernel: an unpacked linux-image package --------------------------
unpack_deb() { # DEB -> prints the directory it was unpacked into
	local deb=$1 dir
	dir="$cache/kernels/$(basename "$deb" .deb)"
	if [ ! -e "$dir/.unpacked" ]; then
		rm -rf "$dir" && mkdir -p "$dir"
		dpkg-deb -x "$deb" "$dir" || die "dpkg-deb -x $deb failed"
		touch "$dir/.unpacked"
	fi
	echo "$dir"
}
if [ -f "$kernel" ]; then
	kdir=$(unpack_deb "$(realpath "$kernel")")
elif [ -d "$kernel" ]; then
	kdir=$(realpath "$kernel")
else
	# A package name. linux-image-amd64 is a metapackage: follow it to the
	# versioned image it depends on.
	pkg=$kernel
	if ! printf '%s' "${pkg%%/*}" | grep -q '^linux-image-[0-9]'; then
		dep=$(apt-cache depends "$pkg" 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
		[ -n "$dep" ] || die "apt-cache knows no linux-image package behind '$pkg' (apt-get update?)"
		release=${pkg#*/}; [ "$release" = "$pkg" ] || dep="$dep/$release"
		pkg=$dep
	fi
	mkdir -p "$cache/debs"
	deb=$(ls "$cache/debs/${pkg%%/*}"_*.deb 2>/dev/null | head -n1 || true)
	if [ -z "$deb" ]; then
		(cd "$cache/debs" && apt-get download -q "$pkg" >&2 2>/dev/null) ||
			(cd "$cache/debs" && apt-get download "$pkg" >&2) ||
			die "apt-get download $pkg failed"
		deb=$(ls "$cache/debs/${pkg%%/*}"_*.deb | head -n1)
	fi
	kdir=$(unpack_deb "$deb")
fi
# Debian 13 and later keep the modules in usr/lib/modules/VERSION (6.12's
# linux-image, with the image in boot/; newer linux-binary-* packages, with
# the image beside the modules as vmlinuz): seen through a directory of
# links in the old layout, which depmod and modprobe -d expect.
if [ ! -d "$kdir/lib/modules" ] && ls -d "$kdir"/usr/lib/modules/*/ >/dev/null 2>&1; then
	usr_vmlinuz=$(ls "$kdir"/boot/vmlinuz-* "$kdir"/usr/lib/modules/*/vmlinuz 2>/dev/null | head -n1 || true)
	[ -n "$usr_vmlinuz" ] || die "no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz in $kdir"
	usr_kver=$(basename "$(ls -d "$kdir"/usr/lib/modules/*/ | head -n1)")
	shadow="$cache/kernels/usr-$(printf '%s' "$kdir" | md5sum | cut -c1-8)"
	# Made once, then renamed into place: guests start side by side.
	if [ ! -e "$shadow/boot/vmlinuz-$usr_kver" ]; then
		tmp="$shadow.tmp.$$"
		rm -rf "$tmp" && mkdir -p "$tmp/boot"
		ln -s "$kdir/usr/lib" "$tmp/lib"
		ln -s "$usr_vmlinuz" "$tmp/boot/vmlinuz-$usr_kver"
		mv -T "$tmp" "$shadow" 2>/dev/null || rm -rf "$tmp"
	fi
	kdir=$shadow
fi
vmlinuz=$(ls "$kdir"/boot/vmlinuz-* 2>/dev/null | head -n1 || true)
[ -n "$vmlinuz" ] || die "no boot/vmlinuz-* (or usr/lib/modules/*/vmlinuz) in $kdir"
kver=${vmlinuz##*/vmlinuz-}
moddir=$(realpath -m "$kdir/lib/modules/$kver")
[ -d "$moddir" ] || die "no lib/modules/$kver in $kdir"
# Before --print-kernel returns, so that guests started after it in
# parallel (tests/vm/suite.sh) find the kernel ready and never race here.
if [ ! -e "$moddir/modules.dep" ] || [ "$moddir/modules.dep" -ot "$moddir/modules.order" ]; then
	depmod -b "$kdir" "$kver" || die "depmod -b $kdir $kver failed"
fi
if [ "$print_kernel" = 1 ]; then
	echo "$kver" | sed 's/^\([0-9]*\.[0-9]*\).*/\1/'	# major.minor
	exit 0
fi

# --- the initramfs: busybox, the modules to reach the host root, /init ----
# Modules in load order, dependencies first; built-in ones print nothing.
modules_for() {
	local m
	for m in "$@"; do
		modprobe -d "$kdir" -S "$kver" --show-depends "$m" 2>/dev/null || true
	done | awk '$1 == "insmod" { print $2 }' | awk '!seen[$0]++'
}
# 9p over virtio to reach the host; rxe and its crc32 (without
# crc32_generic, rdma_rxe fails with only "failed to add"); rdma_ucm for
# librdmacm (UCX's and libfabric's connection setup); dummy for rxe's netdev
# in a lone guest, virtio_net for the wire between guests (--nodes).
# overlay gives the guest a writable root above the host's read-only one.
wanted=(virtio_pci 9pnet_virtio 9p overlay crc32_generic rdma_rxe ib_uverbs rdma_ucm dummy virtio_net)
# Named by what it holds (the kernel, the modules, init.sh), so that
# checkouts of different versions sharing the cache never use each other's.
initrd="$cache/initrd-$kver-$({ printf '%s\n' "$kdir" "${wanted[*]}"; cat "$checkout/tests/vm/init.sh"; } | md5sum | cut -c1-8).cpio.gz"
initrd_src="$checkout/tests/vm/init.sh"
if [ ! -s "$initrd" ] || [ "$initrd" -ot "$initrd_src" ] || [ "$initrd" -ot "$0" ]; then
	root=$(mktemp -d)
	mkdir -p "$root"/{bin,dev,proc,sys,host,modules}
	cp "$busybox_bin" "$root/bin/busybox"
	for applet in sh mount umount mkdir insmod ip cat echo sleep poweroff sync chroot hostname stty; do
		ln -s busybox "$root/bin/$applet"
	done
	# busybox's insmod takes plain .ko files: newer kernels compress
	# theirs (Debian 13: .ko.xz).
	for z in xz:xz-utils zstd:zstd; do
		if modules_for "${wanted[@]}" | grep -q "\.ko\.${z%%:*}$" &&
			! command -v "${z%%:*}" >/dev/null; then
			rm -rf "$root"
			die "the kernel's modules are .ko.${z%%:*}: apt-get install ${z#*:}"
		fi
	done
	modules_for "${wanted[@]}" | while read -r ko; do
		name=$(basename "$ko")
		case "$ko" in
		*.ko.xz) name=${name%.xz}; xz -dc "$ko" >"$root/modules/$name" ;;
		*.ko.zst) name=${name%.zst}; zstd -qdc "$ko" >"$root/modules/$name" ;;
		*.ko.gz) name=${name%.gz}; gzip -dc "$ko" >"$root/modules/$name" ;;
		*) cp "$ko" "$root/modules/" ;;
		esac
		echo "$name" >>"$root/modules/order"
	done
	[ -s "$root/modules/order" ] || die "no modules found for ${wanted[*]} in $moddir"
	cp "$initrd_src" "$root/init" && chmod +x "$root/init"
	# Written under a name of its own: guests may start side by side.
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd.tmp.$$"
	mv "$initrd.tmp.$$" "$initrd"
	rm -rf "$root"
fi

# --- what the guest runs -------------------------------------------------
# One directory per guest (its vmio share) under a private one (mktemp:
# mode 0700), which also holds the wire's sockets and the run's ssh keys.
top=$(mktemp -d)
io=$top/node0
mkdir "$io"
qemu_pid=
worker_pids=()
console_pid=
tail_pid=
cleanup() {
	local p
	# The tails too: stopped by a signal, they would outlive the run.
	for p in $qemu_pid "${worker_pids[@]+"${worker_pids[@]}"}" $console_pid $tail_pid; do
		kill "$p" 2>/dev/null || true
	done
	rm -rf "$top"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cwd=$(pwd -P)
{
	echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	echo "export HOME=/root TERM=dumb LANG=C.UTF-8"
	while IFS='=' read -r name value; do
		printf 'export %s=%q\n' "$name" "$value"
	done < <(env | grep -E '^REGCACHE_[A-Z0-9_]*=' | grep -v '^REGCACHE_VM_' || true)
	for kv in "${guest_env[@]+"${guest_env[@]}"}"; do
		printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"
	done
	# Stress tests shrink their counts under emulation (tests/helpers.h).
	[ -n "${REGCACHE_TEST_SLOWDOWN:-}" ] ||
		echo 'grep -q "regcache_vm_accel=tcg" /proc/cmdline && export REGCACHE_TEST_SLOWDOWN=4'
	# More than one guest: every node is set up (addresses, names, sshd)
	# and node0 waits for the others to answer ssh before COMMAND.
	[ "$nodes" = 1 ] || printf 'sh %q || exit 125\n' "$checkout/tests/vm/node.sh"
	printf 'cd %q 2>/dev/null || { echo "tests/vm: %q is not in the guest (the guest has its own /tmp, /run, /dev/shm); running in /" >&2; cd /; }\n' "$cwd" "$cwd"
	printf 'exec'; printf ' %q' "$@"; echo
} >"$io/command.sh"
# What init needs from the host: where the checkout and the kernel's
# modules are, in the host's paths.
printf 'checkout=%q\nmoddir=%q\nkver=%q\nprivate_checkout=%s\nnode=0\nnodes=%s\n' \
	"$checkout" "$moddir" "$kver" "$private_checkout" "$nodes" >"$io/guest.conf"
if [ "$nodes" -gt 1 ]; then
	# The run's keys: one host key for every node, one user key that root
	# and uid 65534 use on every node (tests/vm/node.sh installs them).
	mkdir "$top/ssh" "$top/wire"
	ssh-keygen -q -t ed25519 -N '' -C regcache-vm-host -f "$top/ssh/host_key" ||
		die "ssh-keygen failed"
	ssh-keygen -q -t ed25519 -N '' -C regcache-vm-user -f "$top/ssh/id" ||
		die "ssh-keygen failed"
	cp -r "$top/ssh" "$io/ssh"
	for ((i = 1; i < nodes; i++)); do
		mkdir "$top/node$i"
		cp -r "$top/ssh" "$top/node$i/ssh"
		sed "s/^node=0\$/node=$i/" "$io/guest.conf" >"$top/node$i/guest.conf"
		{
			echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
			printf 'sh %q || exit 125\n' "$checkout/tests/vm/node.sh"
			echo 'exec sleep 100000'
		} >"$top/node$i/command.sh"
	done
fi
# The wire: with 2 guests, two datagram sockets addressed to each other;
# with more, each guest's socket talks to its own port of a hub (one more
# QEMU with no machine, whose ports are joined by its hub 0).
netdev_args() { # NODE -> QEMU arguments of the guest's NIC, if any
	local i=$1 peer
	[ "$nodes" -gt 1 ] || return 0
	if [ "$nodes" = 2 ]; then peer=$top/wire/g$((1 - i)); else peer=$top/wire/h$i; fi
	printf '%s\n' -netdev "dgram,id=wire,local.type=unix,local.path=$top/wire/g$i,remote.type=unix,remote.path=$peer" \
		-device "virtio-net-pci,netdev=wire,mac=52:54:00:77:00:$(printf %02x $((i + 1)))"
}

co_ro=
[ "$private_checkout" = 0 ] || co_ro=,readonly=on
boot() { # ACCEL [NODE] -> starts qemu in the background, sets qemu_pid
	# One host thread runs every vCPU: with a thread per vCPU
	# (thread=multi), a vCPU running syscall_trace_enter while the other
	# patched its static branch (a tracepoint attached or detached) spun
	# there until the soft-lockup watchdog fired (6.1 guest, RIP on the
	# patched jump, text_poke_bp's IPI in the trace).
	# no_timer_check: under TCG on a loaded host the boot's check of the
	# IO-APIC timer can see too few ticks and panic ("IO-APIC + timer
	# doesn't work!", seen with nine guests on two cores); the timer is
	# QEMU's and works.
	local args=(-accel tcg,thread=single -cpu max) node=${2:-0} io=$io net
	[ "$1" = kvm ] && args=(-accel kvm -cpu host)
	[ "$node" = 0 ] || io=$top/node$node
	mapfile -t net < <(netdev_args "$node")
	args+=("${net[@]+"${net[@]}"}")
	: >"$io/console.log"; : >"$io/output"; rm -f "$io/status" "$io/booted"
	rm -f "$top/wire/g$node"
	qemu-system-x86_64 "${args[@]}" -smp "$cpus" -m "$mem" \
		-nodefaults -no-user-config -display none -no-reboot \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 $loglevel mitigations=off no_timer_check regcache_vm_accel=$1" \
		-serial "file:$io/console.log" -serial "file:$io/output" \
		-virtfs "local,path=$guest_root,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$moddir,mount_tag=kmods,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$checkout,mount_tag=checkout,security_model=none,multidevs=remap$co_ro" \
		-virtfs "local,path=$io,mount_tag=vmio,security_model=none" \
		-device virtio-rng-pci \
		</dev/null >"$io/qemu.log" 2>&1 &
	if [ "$node" = 0 ]; then
		qemu_pid=$!
	else
		worker_pids+=($!)
	fi
	disown $! # its end is found by polling; bash need not report it
}
# Waits until the guest wrote FILE, QEMU ended, or SECONDS passed.
wait_for() { # FILE SECONDS
	local deadline=$((SECONDS + $2))
	while [ ! -e "$io/$1" ] && kill -0 "$qemu_pid" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.2
	done
	[ -e "$io/$1" ]
}
stop_guest() {
	kill "$qemu_pid" 2>/dev/null || true
	wait "$qemu_pid" 2>/dev/null || true
	qemu_pid=
}

# KVM: /dev/kvm can open and still give a guest that never leaves the
# firmware (seen on nested hosts), so auto tries it once per host and
# remembers the verdict.
kvm_verdict="$cache/kvm-$(uname -r)-$(qemu-system-x86_64 --version | head -n1 | tr -cd '0-9.')"
use=tcg why="--accel tcg"
if [ "$accel" != tcg ]; then
	if [ ! -w /dev/kvm ]; then
		why="no usable /dev/kvm"
		[ "$accel" = kvm ] && die "--accel kvm: $why"
	elif [ "$accel" = auto ] && [ -e "$kvm_verdict" ]; then
		why="KVM failed here before: $(cat "$kvm_verdict"); rm $kvm_verdict to try again"
	else
		use=kvm
	fi
fi

# The console keeps what the kernel says down to info (stack traces
# included); a soft lockup panics, which ends the guest with its trace in
# the console rather than leaving a wedged guest to the timeout.
loglevel="loglevel=6 softlockup_panic=1"
start=$SECONDS
console_pid=
if [ "$console" = 1 ]; then
	tail -n +1 -F "$io/console.log" >&2 2>/dev/null &
	console_pid=$!
fi
boot "$use"
if [ "$use" = kvm ] && ! wait_for booted 30; then
	if kill -0 "$qemu_pid" 2>/dev/null; then
		why="a KVM guest did not reach its init in 30 s"
	else
		why="QEMU under KVM stopped: $(grep -v '^$' "$io/qemu.log" | tail -n1)"
	fi
	stop_guest
	[ "$accel" = kvm ] && die "--accel kvm: $why"
	echo "$why" >"$kvm_verdict"
	use=tcg
	boot tcg
fi
[ "$use" = kvm ] && why="KVM boots guests here"
hub_pid=
if [ "$nodes" -gt 1 ]; then
	for ((i = 1; i < nodes; i++)); do boot "$use" "$i"; done
	if [ "$nodes" -gt 2 ]; then
		hub=()
		for ((i = 0; i < nodes; i++)); do
			hub+=(-netdev "dgram,id=p$i,local.type=unix,local.path=$top/wire/h$i,remote.type=unix,remote.path=$top/wire/g$i"
				-netdev "hubport,id=hp$i,hubid=0,netdev=p$i")
		done
		qemu-system-x86_64 -machine none -nodefaults -no-user-config -display none \
			"${hub[@]}" </dev/null >"$top/hub.log" 2>&1 &
		hub_pid=$!
		worker_pids+=("$hub_pid")
		disown "$hub_pid"
	fi
fi
echo "tests/vm: kernel $kver, $use ($why), $cpus CPUs, $mem$([ "$nodes" = 1 ] || echo ", $nodes guests on a private wire")" >&2

# Stream the command's output while it runs.
tail -n +1 -F "$io/output" 2>/dev/null &
tail_pid=$!
if ! wait_for booted 300; then
	reason="the guest did not reach its init in 300 s"
elif ! wait_for status "$timeout"; then
	reason="no status from the guest (timeout ${timeout}s, or it stopped)"
else
	reason=
fi
booted_at=$(cat "$io/booted" 2>/dev/null || true)
[ -z "$reason" ] || stop_guest
# Let the guest power off by itself, then give tail a moment to drain.
for _ in $(seq 50); do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.1; done
stop_guest
# The other nodes only serve node0: they end with it. One that stopped
# early (it never booted, or its setup failed) shows its console.
workers_gone=
for ((i = 1; i < nodes; i++)); do
	p=${worker_pids[$((i - 1))]}
	kill -0 "$p" 2>/dev/null || workers_gone+=" node$i"
	kill "$p" 2>/dev/null || true
done
[ -z "$hub_pid" ] || kill -0 "$hub_pid" 2>/dev/null || workers_gone+=" the hub"
[ -z "$hub_pid" ] || kill "$hub_pid" 2>/dev/null || true
worker_pids=()
sleep 0.3
kill "$tail_pid" ${console_pid:+"$console_pid"} 2>/dev/null || true
wait "$tail_pid" 2>/dev/null || true
if [ -n "$workers_gone" ]; then
	echo "tests/vm/run.sh: stopped before node0 was done:$workers_gone" >&2
	for ((i = 1; i < nodes; i++)); do
		case "$workers_gone " in *" node$i "*) ;; *) continue ;; esac
		echo "--- node$i's console (last lines):" >&2
		tail -n 30 "$top/node$i/console.log" >&2
		[ ! -s "$top/node$i/output" ] || { echo "--- node$i's output:" >&2; cat "$top/node$i/output" >&2; }
		[ ! -s "$top/node$i/qemu.log" ] || { echo "--- node$i's qemu:" >&2; cat "$top/node$i/qemu.log" >&2; }
	done
	[ -z "$hub_pid" ] || [ ! -s "$top/hub.log" ] || { echo "--- the hub:" >&2; cat "$top/hub.log" >&2; }
fi
if [ -n "$reason" ]; then
	echo "tests/vm/run.sh: $reason; the kernel's last lines:" >&2
	tail -n 80 "$io/console.log" >&2
	[ ! -s "$io/qemu.log" ] || { echo "--- qemu:" >&2; cat "$io/qemu.log" >&2; }
	exit 125
fi
status=$(cat "$io/status")
up="guest up in ${booted_at:-?} s"
if [ "$nodes" -gt 1 ]; then
	up="guests up in ${booted_at:-?}"
	for ((i = 1; i < nodes; i++)); do up+=", $(cat "$top/node$i/booted" 2>/dev/null || echo '?')"; done
	up+=" s (at their init)"
fi
echo "tests/vm: $up, done in $((SECONDS - start)) s, exit status $status" >&2
exit "$status"
