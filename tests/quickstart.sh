#!/bin/bash
# SPDX-License-Identifier: MIT
#
# README's quick start on a fresh machine of a Debian release. Makes a root
# of that release with mmdebstrap (variant "important", what a minimal
# installation holds, plus git to clone with), clones this checkout's HEAD
# into it, and runs README.md's two quick-start commands, read from the
# README.md of that clone, one after the other as root inside the root: a
# chroot with /proc, /sys, /dev and tracefs as on a machine, on this
# machine's kernel ('/' bound on itself, so it is a mount point). Nothing
# of the project's is installed beforehand; each command starts from what
# the one before left, as a user's would.
#
# Usage: tests/quickstart.sh [--release CODENAME] [--first-only] [--keep DIR]
#   --release    bookworm (Debian 12), trixie (Debian 13); default: the
#                running release
#   --first-only run the first command only (install, build, demo)
#   --keep DIR   make the root in DIR and leave it there (default: a
#                temporary directory, removed at the end)
# Prints each command's time and exit status; exits 0 when both exited 0.
# Needs root, mmdebstrap (installed if missing) and the archive this
# machine's APT sources name (no archive is written into the project). On
# demand, not in CI: about 25 minutes on two cores (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$(pwd -P)
die() { echo "tests/quickstart.sh: $*" >&2; exit 125; }

release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
first_only=0 keep=
while [ $# -gt 0 ]; do
	case "$1" in
	--release) release=$2; shift 2 ;;
	--first-only) first_only=1; shift ;;
	--keep) keep=$2; shift 2 ;;
	*) sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, chroot, mounts)"
[ -n "$release" ] || die "no --release and no VERSION_CODENAME in /etc/os-release"

# The archives this machine's APT sources name.
. tests/vm/apt-archives.sh
main=$(apt_archive)
security=$(apt_security_archive)
[ -n "$main" ] || die "no Debian archive in /etc/apt/sources.list{,.d/*.sources}"
sources=("deb $main $release main" "deb $main $release-updates main")
[ -z "$security" ] || sources+=("deb $security $release-security main")

command -v mmdebstrap >/dev/null ||
	apt-get install -y -q --no-install-recommends mmdebstrap >&2 ||
	die "apt-get install mmdebstrap failed"

if [ -n "$keep" ]; then
	root=$(realpath -m "$keep")
	[ ! -e "$root" ] || die "$root exists"
else
	root=$(mktemp -d /var/tmp/regcache-quickstart.XXXXXX)
	rmdir "$root"
fi
mounted=()
cleanup() {
	local m
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		m=${mounted[i]}
		umount -R "$m" 2>/dev/null || umount -lR "$m" 2>/dev/null || true
	done
	[ -n "$keep" ] || rm -rf --one-file-system "$root"
}
trap cleanup EXIT

echo "=== a fresh $release root in $root (mmdebstrap, variant important)"
SECONDS=0
mmdebstrap --variant=important --include=git,ca-certificates "$release" "$root" \
	"${sources[@]}" >/dev/null 2>&1 || die "mmdebstrap $release failed"
echo "=== made in $SECONDS s"

# The clone, at the same HEAD, under root's home as a user would have it.
git clone -q --no-local "$checkout" "$root/root/regcache"
git -C "$root/root/regcache" checkout -q "$(git rev-parse HEAD)"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount --bind "$root" "$root" && mounted+=("$root")
for d in proc sys dev; do
	mount --rbind "/$d" "$root/$d" && mounted+=("$root/$d")
done
mount -t tmpfs tmpfs "$root/tmp" && mounted+=("$root/tmp")

# README.md's commands, from its Quick start's first sh block.
mapfile -t cmds < <(awk '/^## Quick start/ { q = 1 } q && /^```sh/ { c = 1; next }
	q && c && /^```/ { exit } q && c && NF { print }' "$root/root/regcache/README.md")
[ ${#cmds[@]} = 2 ] || die "README.md's quick start has ${#cmds[@]} commands, not 2"
[ "$first_only" = 0 ] || cmds=("${cmds[0]}")

status=0
for i in "${!cmds[@]}"; do
	echo "=== command $((i + 1)): ${cmds[i]}"
	SECONDS=0
	s=0
	chroot "$root" /bin/bash -c "cd /root/regcache && ${cmds[i]}" || s=$?
	echo "=== command $((i + 1)) exited $s after $((SECONDS / 60)) min $((SECONDS % 60)) s"
	[ "$s" = 0 ] || { status=1; break; }
done
if [ "$status" = 0 ]; then
	echo "=== README's quick start passed on a fresh $release root"
else
	echo "=== README's quick start FAILED on a fresh $release root" >&2
fi
exit "$status"
