# Sourced by tests/vm/debian13.sh and tests/quickstart.sh: the Debian
# archives this machine's APT sources name (no archive is written into the
# project). apt_archive prints the release archive, the first address that
# does not say "security"; apt_security_archive the first that does, or
# nothing. Both print nothing when the sources name none.
apt_archive_uris() {
	{ awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null
	  awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' \
		/etc/apt/sources.list 2>/dev/null; } || true
}
apt_archive() { apt_archive_uris | grep -v security | head -n1 || true; }
apt_security_archive() { apt_archive_uris | grep security | head -n1 || true; }
