#!/bin/bash
# Debian 13 (trixie) in the test guest: its userland (UCX 1.18, libfabric
# 2.1, Open MPI 5, MPICH 4.2, rdma-core 56, gcc 14) on its stock kernel
# (6.12), made from Debian's packages and kept in the guest cache.
#
# Usage: tests/vm/debian13.sh root           make the root and fetch the
#                                            kernel if missing; print the root
#        tests/vm/debian13.sh build [DIR]    build the checkout inside the
#                                            root (default build-debian13)
#        tests/vm/debian13.sh run [run.sh options] -- COMMAND...
#                                            tests/vm/run.sh on that kernel
#                                            and root
#        tests/vm/debian13.sh ctest [ctest args...]
#                                            build, then the build's tests
#                                            in the root on this machine's
#                                            kernel (no guest)
#        tests/vm/debian13.sh suite [suite.sh args...]
#                                            build, then tests/vm/suite.sh
#                                            on that kernel and root
#
# The root is made with mmdebstrap from the archive that this machine's
# own APT sources name (no archive is written into the project), with the
# packages of .ci/packages.sh for trixie plus MPICH. It lives in
# REGCACHE_VM_CACHE (default ~/.cache/regcache-vm)/debian13-root; delete
# that directory to make it anew. Root only (mmdebstrap, chroot, mounts).
# Exits 125 with the reason when the root cannot be made.
set -euo pipefail
cd "$(dirname "$0")/../.."
checkout=$(pwd -P)
die() { echo "tests/vm/debian13.sh: $*" >&2; exit 125; }

cache=${REGCACHE_VM_CACHE:-${HOME:-/root}/.cache/regcache-vm}
root=$cache/debian13-root
debs=$cache/debs-debian13	# apart from run.sh's: its kernels are Debian 12's

. tests/vm/apt-archives.sh
archive() { # the Debian archive this machine's APT sources use
	local u
	u=$(apt_archive)
	[ -n "$u" ] || die "no Debian archive in /etc/apt/sources.list{,.d/*.sources}"
	echo "$u"
}

root_pkgs() { # the root's packages, comma-separated
	echo "$(.ci/packages.sh trixie | tr -s ' \n' ',' | sed 's/,$//'),mpich,libmpich-dev,git,python3"
}

make_root() {
	[ "$(id -u)" = 0 ] || die "making the root needs root"
	# The packages the root was made with: a root made before a package
	# was added gets it with apt-get inside it (root_pkgs, below).
	if [ -e "$root/.complete" ] && [ "$(cat "$root/.complete")" != "$(root_pkgs)" ]; then
		echo "=== adding packages to the Debian 13 root" >&2
		# policy-rc.d (the root's own, removed after) keeps the packages'
		# scripts from starting services (sshd) in the chroot.
		printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
		chmod +x "$root/usr/sbin/policy-rc.d"
		in_root sh -c "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -q --no-install-recommends $(root_pkgs | tr ',' ' ') >/dev/null &&
			rm -rf /var/lib/apt/lists/*" || { rm -f "$root/usr/sbin/policy-rc.d"
			die "apt-get install in the Debian 13 root failed (delete $root to make it anew)"; }
		rm -f "$root/usr/sbin/policy-rc.d"
		root_pkgs >"$root/.complete"
	fi
	if [ ! -e "$root/.complete" ]; then
		command -v mmdebstrap >/dev/null ||
			apt-get install -y -q --no-install-recommends mmdebstrap >&2 ||
			die "apt-get install mmdebstrap failed"
		rm -rf "$root" "$root.tmp"
		mkdir -p "$cache"
		local pkgs
		pkgs=$(root_pkgs)
		echo "=== making the Debian 13 root in $root (a few minutes)" >&2
		mmdebstrap --variant=apt --include="$pkgs" trixie "$root.tmp" \
			"deb $(archive) trixie main" >&2 ||
			die "mmdebstrap failed (see above)"
		mv "$root.tmp" "$root"
		echo "$pkgs" >"$root/.complete"
	fi
	kernel_deb >/dev/null
}

# trixie's stock kernel, through the root's APT (its sources are trixie's).
kernel_deb() {
	local deb
	deb=$(ls "$debs"/linux-image-6.*-amd64_*.deb 2>/dev/null | grep -v -- '-dbg' | head -n1 || true)
	if [ -z "$deb" ]; then
		mkdir -p "$debs"
		in_root sh -c 'apt-get update -q >/dev/null &&
			pkg=$(apt-cache depends linux-image-amd64 |
				awk "/Depends: linux-image-[0-9]/ { print \$2; exit }") &&
			cd /tmp && apt-get download -q "$pkg" >/dev/null && ls /tmp/linux-image-*.deb' >/dev/null ||
			die "cannot download trixie's linux-image-amd64"
		mv "$root"/tmp/linux-image-*.deb "$debs"/
		rm -rf "$root"/var/lib/apt/lists/*
		deb=$(ls "$debs"/linux-image-6.*-amd64_*.deb | head -n1)
	fi
	echo "$deb"
}

# COMMAND... inside the root, with the checkout at its own path; the mounts
# go when it ends (the guest must not see the host's /proc through 9p).
in_root() {
	local status=0 d
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	mkdir -p "$root$checkout"
	mount --bind "$checkout" "$root$checkout"
	for d in proc sys dev; do mount --rbind "/$d" "$root/$d"; done
	chroot "$root" "$@" || status=$?
	for d in proc sys dev; do umount -R "$root/$d" 2>/dev/null || umount -lR "$root/$d"; done
	umount "$root$checkout" 2>/dev/null || umount -l "$root$checkout"
	return $status
}

build() { # DIR
	local dir=${1:-build-debian13}
	make_root
	in_root sh -c "cd $(printf %q "$checkout") &&
		cmake -S . -B $(printf %q "$dir") -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREGCACHE_WERROR=ON >/dev/null &&
		cmake --build $(printf %q "$dir") -j $(nproc) >/dev/null" ||
		die "the build in the Debian 13 root failed"
}

# The build's tests on this machine's kernel with Debian 13's userland (the
# part of README's second command that needs no guest): what a Debian 13
# host runs, liburing 2.9, gcc 14 and clang 19 included. The root is
# bind-mounted on itself first, so that "/" is a mount point in it as on a
# machine (tests that make their mounts private need one).
host_ctest() { # ctest arguments
	local status=0
	build build-debian13
	mount --bind "$root" "$root"
	in_root sh -c "cd $(printf %q "$checkout") &&
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null;
		ctest --test-dir build-debian13 --output-on-failure -j $(nproc) $(printf '%q ' "$@")" ||
		status=$?
	umount "$root" 2>/dev/null || umount -l "$root"
	return $status
}

case "${1:-}" in
root) make_root; echo "$root" ;;
ctest) shift; host_ctest "$@" ;;
build) shift; build "${1:-}" ;;
run)
	shift
	make_root
	exec tests/vm/run.sh --root "$root" --kernel "$(kernel_deb)" "$@" ;;
suite)
	shift
	build build-debian13
	REGCACHE_VM_BUILD=build-debian13 REGCACHE_VM_BUILT=1 exec tests/vm/suite.sh "$@" \
		--root "$root" --kernel "$(kernel_deb)" ;;
*) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
