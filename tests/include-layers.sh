#!/bin/sh
# No include cycle between the directories of src/ (the files directly in
# src/ count as one more directory, "."): each directory depends on the ones
# below it only, so any of them can be read, built and tested with what it
# includes and nothing above it (CONTRIBUTING.md, "Layout").
#   include-layers.sh SRC_DIR   print the directories' edges; fail on a loop
#   include-layers.sh --self-test   the negative control: a planted loop is
#                                   found, a tree without one passes
# An include counts where it names a file of the tree, relative to the
# including file (the way src/ writes them); a subdirectory counts as its
# top directory (monitor/bpf is monitor).
set -eu

edges() { # SRC_DIR -> "from to" lines, one per directory edge
	(cd "$1" && find . -name '*.[ch]' | sed 's|^\./||' | sort | while read -r f; do
		dir=$(dirname "$f")
		from=${dir%%/*}
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while read -r inc; do
			t=$(realpath -m --relative-to=. "$dir/$inc")
			[ -f "$t" ] || continue
			tdir=$(dirname "$t")
			to=${tdir%%/*}
			[ "$from" = "$to" ] || echo "$from $to"
		done
	done | sort -u)
}

check() { # SRC_DIR: 0 without a loop
	e=$(edges "$1")
	echo "$e" | sed 's/^/  /; s/ \([^ ]*\)$/ -> \1/'
	# tsort fails on a loop and names its members on stderr.
	if ! echo "$e" | tsort >/dev/null 2>"$tmp/loop"; then
		echo "include-layers: a loop between directories of $1:"
		sed 's/^/  /' "$tmp/loop"
		return 1
	fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${1:-}" = --self-test ]; then
	mkdir -p "$tmp/ok/a" "$tmp/ok/b" "$tmp/bad/a" "$tmp/bad/b"
	printf '#include "../b/y.h"\n' >"$tmp/ok/a/x.h"
	printf '#include "z.h"\n' >"$tmp/ok/b/y.h"
	: >"$tmp/ok/b/z.h"
	printf '#include "../b/y.h"\n' >"$tmp/bad/a/x.h"
	printf '#include "../c.h"\n' >"$tmp/bad/b/y.h"
	printf '#include "a/x.h"\n' >"$tmp/bad/c.h"
	check "$tmp/ok" >/dev/null || { echo "FAIL: a tree without a loop was refused"; exit 1; }
	if check "$tmp/bad" >/dev/null; then
		echo "FAIL: the planted loop a -> b -> . -> a was not found"; exit 1
	fi
	echo "self-test: the planted loop is found, the tree without one passes"
	exit 0
fi
check "${1:?usage: include-layers.sh SRC_DIR | --self-test}" || exit 1
echo "include-layers: no loop"
