#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Checks that regcache installs and links the way README.md says, from a
# consumer's side:
#  1. builds the library and the tools (no tests; -Werror; prefix /usr);
#  2. installs them into a temporary prefix with `cmake --install`, builds
#     tools/example/example.c out of tree against that prefix twice
#     (pkg-config, then CMake's find_package(regcache)) and runs both;
#  3. with --packages: builds the Debian packages with CPack, installs them
#     with apt-get, builds and runs the example against the system's copy
#     (both ways again), runs the installed regcache-info, regcache-demo
#     and regcache-run (prefix too) and checks that `man regcache_get` finds its page. The packages are
#     removed at the end.
#     Needs root; this is what CI (.ci/run) does on its fresh machine.
# The example DMAs through io_uring fixed buffers, so io_uring must work.
#
# Usage: tests/install-check.sh [--packages] [build-dir]
#        (build-dir defaults to build-install-check, reused when it exists)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD

packages=0
if [ "${1:-}" = --packages ]; then
	packages=1
	shift
fi
build=$(realpath -m "${1:-build-install-check}")
work=$(mktemp -d /tmp/regcache-install-check.XXXXXX)
installed_debs=()

cleanup() {
	if [ ${#installed_debs[@]} -gt 0 ]; then
		echo "--- removing ${installed_debs[*]}"
		apt-get remove -y -q --purge -o DPkg::Lock::Timeout=300 \
			"${installed_debs[@]}" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

step() { echo "=== $*"; }
fail() { echo "install-check: FAILED: $*" >&2; exit 1; }

# The consumer's CMake project: what README.md's "Link" section shows.
mkdir -p "$work/consumer"
cat >"$work/consumer/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(regcache-consumer C)
find_package(regcache 0.1 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing)
add_executable(example $src/tools/example/example.c)
target_link_libraries(example PRIVATE regcache::regcache PkgConfig::URING)
EOF

# run_example <binary> <where libregcache.so.0 must come from>
run_example() {
	local lib
	lib=$(ldd "$1" | awk '$1 == "libregcache.so.0" { print $3 }')
	[ "$(readlink -f "$(dirname "$lib")")" = "$(readlink -f "$2")" ] ||
		fail "$1 loads libregcache.so.0 from '$lib', not from $2"
	"$1" || fail "$1 exited with $?"
}

# build_consumers <label> <libdir to load libregcache from>
# Uses PKG_CONFIG_PATH and CMAKE_PREFIX_PATH from the environment.
build_consumers() {
	local out="$work/$1"
	mkdir -p "$out"
	step "$1: cc tools/example/example.c \$(pkg-config --cflags --libs regcache liburing)"
	pkg-config --exists --print-errors regcache
	# shellcheck disable=SC2046 # the flags are words
	cc -Wall -Wextra -Werror -o "$out/example-pkg-config" tools/example/example.c \
		$(pkg-config --cflags --libs regcache liburing)
	run_example "$out/example-pkg-config" "$2"

	step "$1: find_package(regcache) and regcache::regcache"
	cmake -S "$work/consumer" -B "$out/cmake" -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_C_FLAGS="-Wall -Wextra -Werror" >/dev/null
	cmake --build "$out/cmake" >/dev/null
	run_example "$out/cmake/example" "$2"
}

step "build $build (library and tools, prefix /usr)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
	-DREGCACHE_BUILD_TESTS=OFF -DREGCACHE_BUILD_TOOLS=ON \
	-DREGCACHE_WERROR=ON >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null

step "cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
pc=$(find "$work/prefix" -name regcache.pc)
[ -n "$pc" ] || fail "no regcache.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in include/regcache.h include/regcache/uring.h bin/regcache-demo \
	 share/man/man3/regcache.3 share/man/man3/regcache_get.3; do
	[ -e "$work/prefix/$f" ] || fail "$f not installed"
done
[ -e "$libdir/cmake/regcache/regcache-config.cmake" ] ||
	fail "no CMake package in $libdir/cmake/regcache"
# The node service's units name the daemon of this prefix.
unit="$work/prefix/lib/systemd/system/regcached.service"
if [ -e "$work/prefix/sbin/regcached" ]; then
	[ -e "$unit" ] && [ -e "$work/prefix/lib/systemd/system/regcached.socket" ] ||
		fail "regcached's systemd units not installed"
	grep -qx "ExecStart=$work/prefix/sbin/regcached" "$unit" ||
		fail "$unit does not start $work/prefix/sbin/regcached"
fi
MANPATH="$work/prefix/share/man" man -w regcache_get >/dev/null ||
	fail "man -w regcache_get does not find the page in $work/prefix"
PKG_CONFIG_PATH="$libdir/pkgconfig" CMAKE_PREFIX_PATH="$work/prefix" \
	LD_LIBRARY_PATH="$libdir" build_consumers prefix "$libdir"

# check_run <regcache-run> <libdir>: the launcher starts a program with the
# bridges of <libdir> loaded and UCX's hooks off (built when libucx-dev is).
check_run() {
	[ -x "$1" ] || { echo "(no $1: bridges not built)"; return 0; }
	step "$1 cat /proc/self/maps"
	"$1" sh -c 'test "$UCX_MEM_MMAP_HOOK_MODE" = none && cat /proc/self/maps' \
		>"$work/maps" || fail "$1 exited with $?"
	grep -q " $(readlink -f "$2")/libregcache-ucx\.so" "$work/maps" ||
		fail "$1 did not preload $2/libregcache-ucx.so.0"
}
LD_LIBRARY_PATH="$libdir" check_run "$work/prefix/bin/regcache-run" "$libdir"

if [ $packages = 0 ]; then
	echo "=== install check passed (prefix; run with --packages for the Debian packages)"
	exit 0
fi

step "cpack -G DEB"
(cd "$build" && cpack -G DEB >/dev/null 2>&1) || fail "cpack -G DEB in $build"
debs=("$build"/*.deb)
for name in libregcache0 libregcache-dev regcache-tools; do
	ls "$build/${name}_"*.deb >/dev/null 2>&1 || fail "no package $name in $build"
	if dpkg-query -W -f '${Status}' "$name" 2>/dev/null | grep -q 'ok installed'; then
		fail "$name is already installed on this machine; remove it first"
	fi
done
for deb in "${debs[@]}"; do
	echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version): $(dpkg-deb -f "$deb" Depends)"
done

step "apt-get install the packages"
installed_debs=(libregcache0 libregcache-dev regcache-tools)
apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 \
	"${debs[@]}" >/dev/null
for cmd in regcache-info regcache-demo regcache-bench; do
	[ "$(command -v $cmd)" = /usr/bin/$cmd ] || fail "$cmd not in /usr/bin"
done
if dpkg -L regcache-tools | grep -q '^/usr/sbin/regcached$'; then
	unit=$(dpkg -L regcache-tools | grep '/systemd/system/regcached.service$') ||
		fail "regcache-tools has no regcached.service"
	grep -qx "ExecStart=/usr/sbin/regcached" "$unit" ||
		fail "$unit does not start /usr/sbin/regcached"
fi
sys_libdir=$(dirname "$(dpkg -L libregcache0 | grep 'libregcache\.so\.0$')")
build_consumers system "$sys_libdir"

step "the installed regcache-info and regcache-demo"
regcache-info >/dev/null || fail "regcache-info exited with $?"
regcache-demo --iterations 300 --repeat 1 --modes regcache >/dev/null ||
	fail "regcache-demo exited with $?"
# Its regcached row starts the installed daemon, not the build tree's.
if [ -x /usr/sbin/regcached ]; then
	out=$(regcache-demo --iterations 300 --repeat 1 --modes naive,regcached) ||
		fail "regcache-demo --modes naive,regcached exited with $?"
	if grep "no regcached at" <<<"$out"; then
		fail "the installed regcache-demo did not find /usr/sbin/regcached"
	fi
fi

check_run /usr/bin/regcache-run "$sys_libdir"

step "man regcache_get"
page=$(man -w regcache_get) || fail "man -w regcache_get finds no page"
echo "$page"
man -w regcache >/dev/null || fail "man -w regcache finds no page"
echo "=== install check passed (prefix and Debian packages)"
