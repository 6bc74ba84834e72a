#!/bin/sh
# One node of several guests (tests/vm/run.sh --nodes N), run as root in
# the guest's root before anything else: names every node in /etc/hosts,
# lets uid 65534 (nobody) log in, installs the run's ssh keys and starts
# sshd on the wire's address only. On node0 it then waits until every
# other node answers ssh, as root and as uid 65534, and fails with the
# reason when one does not (a guest that did not start is a failure, never
# a skip).
#
# The keys are made by run.sh on the host for each run, in its private
# temporary directory, and reach the guests through their vmio share: one
# host key for every node (so known_hosts holds one line for all), one user
# key for root and uid 65534 on every node. Nothing here touches the host:
# /etc is the guest's overlay.
set -eu
. /run/regcache-vm/guest.conf	# node, nodes (run.sh)
keys=/run/regcache-vm/ssh
conf=/etc/regcache-vm
say() { echo "tests/vm/node.sh (node$node): $*" >&2; }

{
	echo "127.0.0.1 localhost"
	i=0
	while [ "$i" -lt "$nodes" ]; do
		echo "10.77.0.$((i + 1)) node$i"
		i=$((i + 1))
	done
} >/etc/hosts
echo "node$node" >/etc/hostname

# uid 65534: a shell (sshd runs commands through it) and a home of its own.
awk -F: -v OFS=: '$3 == 65534 { $6 = "/home/nobody"; $7 = "/bin/sh" } { print }' \
	/etc/passwd >/etc/passwd.new && cat /etc/passwd.new >/etc/passwd && rm /etc/passwd.new
mkdir -p /home/nobody && chown 65534:65534 /home/nobody

rm -rf "$conf" && mkdir -p "$conf/root" "$conf/nobody"
install -m 600 "$keys/host_key" "$conf/host_key"
install -m 600 "$keys/id" "$conf/root/id"
install -m 600 -o 65534 -g 65534 "$keys/id" "$conf/nobody/id"
install -m 644 "$keys/id.pub" "$conf/authorized_keys"
echo "node*,10.77.0.* $(cut -d' ' -f1,2 "$keys/host_key.pub")" >"$conf/known_hosts"
cat >"$conf/sshd_config" <<EOF
ListenAddress 10.77.0.$((node + 1))
HostKey $conf/host_key
AuthorizedKeysFile $conf/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PidFile /run/regcache-vm-sshd.pid
LogLevel ERROR
EOF
# The client side, for every user of the guest: the guest's own file
# replaces the host's (overlay). %u: the local user's name.
cat >/etc/ssh/ssh_config <<EOF
Host *
	IdentityFile $conf/%u/id
	UserKnownHostsFile $conf/known_hosts
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	BatchMode yes
	ConnectTimeout 20
	LogLevel ERROR
EOF
rm -rf /etc/ssh/ssh_config.d
mkdir -p /run/sshd && chmod 755 /run/sshd
# Without PAM, a session keeps sshd's limits: memlock unlimited, as sites
# set it for RDMA (UCX's own pools need more than the default 8 MiB).
ulimit -l unlimited
command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] ||
	{ say "no sshd in the guest's root: apt-get install openssh-server"; exit 1; }
/usr/sbin/sshd -f "$conf/sshd_config" || { say "sshd did not start"; exit 1; }

[ "$node" = 0 ] || exit 0
# node0: every node answers ssh (the other guests boot alongside; under
# TCG on a loaded machine that can take minutes).
deadline=$(($(cut -d. -f1 /proc/uptime) + ${REGCACHE_VM_NODE_WAIT:-300}))
i=0
while [ "$i" -lt "$nodes" ]; do
	for user in root nobody; do
		until out=$(su -s /bin/sh "$user" -c "ssh node$i true" 2>&1); do
			if [ "$(cut -d. -f1 /proc/uptime)" -ge "$deadline" ]; then
				say "node$i does not answer ssh as $user (its guest did not start, or its sshd did not): $out"
				say "the wire as node0 sees it: $(ip -br addr | tr "\n" ";") / neighbours: $(ip neigh | tr '\n' ';') / $(grep eth0 /proc/net/dev)"
				exit 1
			fi
			sleep 1
		done
	done
	i=$((i + 1))
done
