#!/bin/sh
# /init of the test guest (tests/vm/run.sh packs it with busybox and the
# kernel's modules). It loads the modules, mounts the host's root (9p,
# read-only, under a tmpfs overlay so that the guest can write anywhere
# without touching the host) with the checkout read-write at its own path
# (or read-only under an overlay of its own: run.sh --private-checkout),
# brings up lo and Soft-RoCE, runs /vmio/command.sh as root in that root,
# writes its exit status to /vmio/status and powers off.
export PATH=/bin

# Anything that goes wrong here ends the guest; run.sh sees no status and
# prints the console, where this line is.
fail() {
	echo "regcache-vm init: $*" >/dev/ttyS0
	poweroff -f
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules/order); do
	insmod "/modules/$m" || fail "insmod $m failed"
done

p9="trans=virtio,version=9p2000.L,msize=524288"
mkdir -p /vmio /lower /rw
mount -t 9p -o "$p9" vmio /vmio || fail "cannot mount the vmio share"
cut -d' ' -f1 /proc/uptime >/vmio/booted
. /vmio/guest.conf

# The host's root, read-only; its pages may be cached for the whole run.
mount -t 9p -o "$p9,ro,cache=loose" hostroot /lower || fail "cannot mount the host's root"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
if ! mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /host; then
	echo "regcache-vm init: no overlay on 9p; the root stays read-only" >/dev/ttyS0
	mount --bind /lower /host
fi
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t devtmpfs devtmpfs /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /host/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /host/dev/shm
for d in /tmp /var/tmp; do mount -t tmpfs -o mode=1777 tmpfs "/host$d"; done
mount -t tmpfs -o mode=0755 tmpfs /host/run
# The checkout last, so that no tmpfs above hides it (a clone in /tmp).
mkdir -p "/host$checkout" 2>/dev/null
if [ "$private_checkout" = 1 ]; then
	# Read-only from the host; what the guest writes stays in its tmpfs.
	mkdir -p /checkout /rw/co-upper /rw/co-work
	mount -t 9p -o "$p9,ro" checkout /checkout || fail "cannot mount the checkout"
	mount -t overlay -o lowerdir=/checkout,upperdir=/rw/co-upper,workdir=/rw/co-work \
		overlay "/host$checkout" || fail "cannot overlay the checkout at $checkout"
else
	mount -t 9p -o "$p9" checkout "/host$checkout" || fail "cannot mount the checkout at $checkout"
fi
# Every user reaches the checkout, as the tests' uid 65534 and the
# two-node job's ranks must (a clone in root's home: /root is 0700): the
# directories above it get o+x in the guest's own overlay; the host's
# stay as they are.
d=$(dirname "$checkout")
while [ "$d" != / ]; do
	chmod o+x "/host$d" 2>/dev/null
	d=$(dirname "$d")
done

mount -t tracefs tracefs /host/sys/kernel/tracing
mount -t debugfs debugfs /host/sys/kernel/debug
mount -t bpf bpf /host/sys/fs/bpf
mount -t cgroup2 cgroup2 /host/sys/fs/cgroup
# The guest kernel's modules, for modprobe inside (the host has its own).
mkdir -p /host/lib/modules/"$kver" &&
	mount -t 9p -o "$p9,ro" kmods /host/lib/modules/"$kver"
mkdir -p /host/run/regcache-vm && mount --bind /vmio /host/run/regcache-vm

ip link set lo up || fail "cannot bring up lo"
if [ "${nodes:-1}" -gt 1 ]; then
	# One of several guests (run.sh --nodes): its NIC is on the wire
	# between them, the only one; tests/vm/node.sh does the rest.
	hostname "node$node"
	netdev=eth0
	ip link set eth0 up || fail "no eth0 (virtio_net loaded?)"
	ip addr add "10.77.0.$((node + 1))/24" dev eth0
else
	hostname "$(cat /host/etc/hostname 2>/dev/null || echo regcache-vm)"
	netdev=dummy0
	ip link set dummy0 up || fail "no dummy0"
	ip addr add 10.77.0.1/24 dev dummy0
fi
chroot /host rdma link add rxe0 type rxe netdev "$netdev" >/dev/ttyS0 2>&1 ||
	fail "rdma link add rxe0 failed (rdma_rxe loaded? crc32_generic?)"

# The output line is a serial tty: without this, every "\n" reaches the
# host as "\r\n", and lines matched with a "$" anchor never match.
stty -onlcr </dev/ttyS1 || fail "stty -onlcr on ttyS1 failed"
chroot /host /bin/sh /run/regcache-vm/command.sh </dev/null >/dev/ttyS1 2>&1
echo $? >/vmio/status
sync
poweroff -f
