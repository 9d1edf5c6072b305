#!/usr/bin/env bash
# A throwaway single-node Ceph cluster for tests, from Debian's packages, all on 127.0.0.1 (or on
# the address in CEPH_ADDR, for clients in other network namespaces): one monitor and one OSD on
# memstore (RAM), no authentication, pool "rbd" initialised for RBD. No systemd, nothing outside
# DIR; `stop` kills the daemons and removes DIR's contents.
#
#   ceph-cluster.sh start DIR   prints DIR/ceph.conf's path on success; exits 77 with the reason on
#                               stderr when a cluster cannot run here (packages missing, daemon
#                               refused to start), 1 on other failures
#   ceph-cluster.sh stop DIR
set -u
cmd=${1:-}
D=${2:-}
[ -n "$cmd" ] && [ -n "$D" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
D=$(mkdir -p "$D" && cd "$D" && pwd)
CONF=$D/ceph.conf

stop() {
	for p in "$D"/run/*.pid; do
		[ -f "$p" ] && kill -9 "$(cat "$p")" 2> /dev/null
	done
	# Daemons that died before writing their pid file are found by their config path.
	pkill -9 -f -- "-c $CONF" 2> /dev/null
	return 0
}

# unable REASON: the cluster cannot run on this machine.
unable() {
	echo "ceph-cluster: cannot run a Ceph cluster here: $*" >&2
	stop
	exit 77
}

if [ "$cmd" = stop ]; then
	stop
	rm -rf "${D:?}"/*
	exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
for b in ceph-mon ceph-osd ceph monmaptool ceph-authtool rbd; do
	command -v "$b" > /dev/null || unable "$b is not installed (Debian: ceph-mon ceph-osd ceph-common)"
done
addr=${CEPH_ADDR:-127.0.0.1}
port=$(python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$addr") ||
	{ echo "ceph-cluster: cannot bind to $addr" >&2; exit 1; }
fsid=$(cat /proc/sys/kernel/random/uuid)
mkdir -p "$D/run" "$D/log" "$D/mon" "$D/osd/ceph-0"
# msgr2 only on $addr, IPv4 (the machine may have no IPv6), one replica, memstore.
cat > "$CONF" << EOF
[global]
fsid = $fsid
mon host = [v2:$addr:$port]
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
ms bind ipv4 = true
ms bind ipv6 = false
public addr = $addr
cluster addr = $addr
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = 2147483648
run dir = $D/run
log file = $D/log/\$name.log
admin socket = $D/run/\$name.\$pid.asok
pid file = $D/run/\$name.pid
mon data = $D/mon/\$cluster-\$id
osd data = $D/osd/\$cluster-\$id
keyring = $D/keyring
EOF
T="timeout 60"
ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' > /dev/null ||
	unable "ceph-authtool failed"
monmaptool --create --addv a "[v2:$addr:$port]" --fsid "$fsid" "$D/monmap" > /dev/null ||
	unable "monmaptool failed"
ceph-mon -c "$CONF" --mkfs -i a --monmap "$D/monmap" --keyring "$D/keyring" > "$D/log/mkfs-mon.out" 2>&1 ||
	unable "ceph-mon --mkfs failed: $(tail -1 "$D/log/mkfs-mon.out")"
ceph-mon -c "$CONF" -i a > "$D/log/mon.out" 2>&1 || unable "ceph-mon did not start: $(tail -1 "$D/log/mon.out")"
osd=$($T ceph -c "$CONF" osd create 2> "$D/log/ceph.err") || unable "the monitor does not answer: $(tail -1 "$D/log/ceph.err")"
[ "$osd" = 0 ] || { echo "ceph-cluster: unexpected OSD id '$osd'" >&2; stop; exit 1; }
ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$(cat /proc/sys/kernel/random/uuid)" > "$D/log/mkfs-osd.out" 2>&1 ||
	unable "ceph-osd --mkfs failed: $(tail -1 "$D/log/mkfs-osd.out")"
$T ceph -c "$CONF" osd crush add osd.0 1.0 host=localhost root=default > /dev/null 2>&1 ||
	{ echo "ceph-cluster: crush add failed" >&2; stop; exit 1; }
ceph-osd -c "$CONF" -i 0 > "$D/log/osd.out" 2>&1 || unable "ceph-osd did not start: $(tail -1 "$D/log/osd.out")"
for _ in $(seq 60); do
	$T ceph -c "$CONF" osd stat 2> /dev/null | grep -q "1 up" && break
	sleep 0.5
done
$T ceph -c "$CONF" osd stat 2> /dev/null | grep -q "1 up" || unable "the OSD did not come up (see $D/log/osd.0.log)"
$T ceph -c "$CONF" osd pool create rbd 8 > /dev/null 2>&1 || { echo "ceph-cluster: pool create failed" >&2; stop; exit 1; }
$T rbd -c "$CONF" pool init rbd > /dev/null 2>&1 || { echo "ceph-cluster: rbd pool init failed" >&2; stop; exit 1; }
echo "$CONF"
